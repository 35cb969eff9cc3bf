#include "support/redis_server.hpp"

#include "support/local_server_process.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <spawn.h>
#include <stdexcept>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char** environ;

namespace wopbridge::testing {

namespace {

std::vector<char*> argv_of(std::vector<std::string>& args) {
    std::vector<char*> argv;
    for (auto& a : args) {
        argv.push_back(a.data());
    }
    argv.push_back(nullptr);
    return argv;
}

// One PING over a fresh connection: true on +PONG (a loading server answers -LOADING).
bool ping(int port, const std::string& password) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return false;
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    timeval tv{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    bool ok = false;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
        std::string req;
        if (!password.empty()) {
            req += "*2\r\n$4\r\nAUTH\r\n$" + std::to_string(password.size()) + "\r\n" + password +
                   "\r\n";
        }
        req += "*1\r\n$4\r\nPING\r\n";
        if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size())) {
            std::string got;
            char buf[256];
            while (got.find("PONG") == std::string::npos && got.find('-') == std::string::npos) {
                const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
                if (n <= 0) {
                    break;
                }
                got.append(buf, static_cast<std::size_t>(n));
            }
            ok = got.find("+PONG") != std::string::npos && got.find('-') == std::string::npos;
        }
    }
    ::close(fd);
    return ok;
}

} // namespace

bool redis_server::available() {
    return on_path("redis-server") && on_path("redis-cli");
}

redis_server::redis_server(redis_server_options options)
    : options_(std::move(options)), port_(free_loopback_port_or_throw("redis_server")) {
    if (!options_.defer_start) {
        start();
    }
}

redis_server::~redis_server() {
    if (pid_ > 0) {
        kill();
    }
}

std::string redis_server::url() const {
    const std::string auth = options_.password.empty() ? "" : ":" + options_.password + "@";
    return "redis://" + auth + "127.0.0.1:" + std::to_string(port_);
}

void redis_server::start() {
    if (pid_ > 0) {
        return;
    }
    std::vector<std::string> args{"redis-server",
                                  "--port",
                                  std::to_string(port_),
                                  "--bind",
                                  "127.0.0.1",
                                  "--save",
                                  "",
                                  "--appendonly",
                                  "yes",
                                  "--appendfsync",
                                  "always",
                                  "--dir",
                                  dir_.path().string(),
                                  "--daemonize",
                                  "no",
                                  "--logfile",
                                  dir_.file("redis.log")};
    if (!options_.password.empty()) {
        args.insert(args.end(), {"--requirepass", options_.password});
    }
    pid_t pid = -1;
    const int rc = spawn_server({.argv = args, .keep_stderr = true}, pid);
    if (rc != 0) {
        throw std::runtime_error(std::string("redis_server: spawn failed: ") + std::strerror(rc));
    }
    pid_ = pid;
    if (!wait_ready(std::chrono::seconds(10))) {
        kill();
        throw std::runtime_error("redis_server: not ready within 10 s on port " +
                                 std::to_string(port_));
    }
}

bool redis_server::wait_ready(std::chrono::milliseconds timeout) {
    return wait_ready_while_running(pid_, timeout, [&] { return ping(port_, options_.password); });
}

void redis_server::stop() {
    signal_and_reap(pid_, SIGTERM);
}

void redis_server::kill() {
    signal_and_reap(pid_, SIGKILL);
}

cli_result redis_server::cli(const std::vector<std::string>& args) const {
    return run_cli(args, nullptr);
}

cli_result redis_server::cli_script(const std::string& commands) const {
    return run_cli({}, &commands);
}

cli_result redis_server::run_cli(const std::vector<std::string>& args,
                                 const std::string* input) const {
    std::vector<std::string> all{"redis-cli", "-h", "127.0.0.1", "-p", std::to_string(port_)};
    if (!options_.password.empty()) {
        all.insert(all.end(), {"-a", options_.password, "--no-auth-warning"});
    }
    all.insert(all.end(), args.begin(), args.end());
    auto argv = argv_of(all);

    int pipefd[2];
    if (::pipe2(pipefd, O_CLOEXEC) != 0) {
        return {};
    }
    // The script goes through a file, not a pipe: no writer thread, no deadlock on a full pipe.
    std::string script_file;
    if (input != nullptr) {
        script_file = dir_.file("cli-script-" + std::to_string(::getpid()) + "-" +
                                std::to_string(script_counter_++) + ".txt");
        const int fd = ::open(script_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0) {
            ::close(pipefd[0]);
            ::close(pipefd[1]);
            return {};
        }
        std::size_t done = 0;
        while (done < input->size()) {
            const ssize_t n = ::write(fd, input->data() + done, input->size() - done);
            if (n <= 0 && errno != EINTR) {
                break;
            }
            done += n > 0 ? static_cast<std::size_t>(n) : 0;
        }
        ::close(fd);
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, pipefd[1], 1);
    posix_spawn_file_actions_addopen(&actions, 0,
                                     script_file.empty() ? "/dev/null" : script_file.c_str(),
                                     O_RDONLY, 0);
    pid_t pid = -1;
    const int rc = ::posix_spawnp(&pid, "redis-cli", &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(pipefd[1]);
    cli_result result;
    if (rc != 0) {
        ::close(pipefd[0]);
        if (!script_file.empty()) {
            ::unlink(script_file.c_str());
        }
        return result;
    }
    char buf[4096];
    for (;;) {
        const ssize_t n = ::read(pipefd[0], buf, sizeof buf);
        if (n > 0) {
            result.out.append(buf, static_cast<std::size_t>(n));
        } else if (n == 0 || errno != EINTR) {
            break;
        }
    }
    ::close(pipefd[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (!script_file.empty()) {
        ::unlink(script_file.c_str());
    }
    while (!result.out.empty() && (result.out.back() == '\n' || result.out.back() == '\r')) {
        result.out.pop_back();
    }
    return result;
}

} // namespace wopbridge::testing
