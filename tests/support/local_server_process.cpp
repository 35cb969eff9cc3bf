#include "support/local_server_process.hpp"

#include "support/eventually.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <netinet/in.h>
#include <spawn.h>
#include <stdexcept>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace wopbridge::testing {

bool on_path(const std::string& name) {
    const char* path = std::getenv("PATH");
    std::string p = path ? path : "/usr/bin:/bin";
    std::size_t start = 0;
    for (;;) {
        const auto end = p.find(':', start);
        const std::string dir = p.substr(start, end == std::string::npos ? end : end - start);
        if (!dir.empty() && ::access((dir + "/" + name).c_str(), X_OK) == 0) {
            return true;
        }
        if (end == std::string::npos) {
            return false;
        }
        start = end + 1;
    }
}

int free_loopback_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    int port = 0;
    if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
        port = ntohs(addr.sin_port);
    }
    if (fd >= 0) {
        ::close(fd);
    }
    return port;
}

int free_loopback_port_or_throw(const std::string& who) {
    const int port = free_loopback_port();
    if (port == 0) {
        throw std::runtime_error(who + ": cannot find a free port");
    }
    return port;
}

int spawn_server(const server_spawn& request, pid_t& pid) {
    std::vector<std::string> args = request.argv;
    std::vector<char*> argv;
    for (auto& a : args) {
        argv.push_back(a.data());
    }
    argv.push_back(nullptr);
    std::vector<std::string> env_text;
    for (char** e = environ; *e != nullptr; ++e) {
        env_text.emplace_back(*e);
    }
    env_text.insert(env_text.end(), request.extra_env.begin(), request.extra_env.end());
    std::vector<char*> envp;
    for (auto& e : env_text) {
        envp.push_back(e.data());
    }
    envp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    if (!request.output_file.empty()) {
        posix_spawn_file_actions_addopen(&actions, 1, request.output_file.c_str(),
                                         O_WRONLY | O_CREAT | O_APPEND, 0600);
        posix_spawn_file_actions_adddup2(&actions, 1, 2);
    } else {
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
        if (!request.keep_stderr) {
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
        }
    }
    if (!request.working_dir.empty()) {
        posix_spawn_file_actions_addchdir_np(&actions, request.working_dir.c_str());
    }
    const int rc = ::posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
        pid = -1;
    }
    return rc;
}

bool wait_ready_while_running(pid_t& pid, std::chrono::milliseconds limit,
                              const std::function<bool()>& ready) {
    bool exited = false;
    bool is_ready = false;
    eventually(
        [&] {
            int status = 0;
            exited = ::waitpid(pid, &status, WNOHANG) == pid;
            is_ready = !exited && ready();
            return exited || is_ready;
        },
        limit);
    if (exited) {
        pid = -1;
    }
    return is_ready;
}

void signal_and_reap(pid_t& pid, int sig) {
    if (pid <= 0) {
        return;
    }
    ::kill(pid, sig);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    pid = -1;
}

} // namespace wopbridge::testing
