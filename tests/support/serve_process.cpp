#include "support/serve_process.hpp"

#include "support/build_paths.hpp"
#include "support/child_process.hpp"
#include "support/eventually.hpp"
#include "support/local_server_process.hpp"

#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <regex>
#include <sstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace wopbridge::testing {

std::string read_text_file(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string first_line(const std::string& text) {
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        if (!line.empty()) {
            return line;
        }
    }
    return {};
}

std::string thread_backtraces(pid_t pid) {
    // A start that hangs says where: every thread's stack, when gdb is on the machine.
    if (pid <= 0 || ::access("/usr/bin/gdb", X_OK) != 0) {
        return "(no gdb: no backtraces)";
    }
    auto bt = run_program(
        {"/usr/bin/gdb", "-batch", "-nx", "-p", std::to_string(pid), "-ex", "thread apply all bt"},
        60, {}, true);
    return "backtraces of pid " + std::to_string(pid) + ":\n" + bt.stdout_text;
}

std::string sqlite_serve_prelude(const std::string& api_key) {
    // The crash tests post bursts from loopback: the default per-address limit is raised here.
    return "server: {listen: \"127.0.0.1:0\", "
           "rateLimits: {perSourceAddress: {rate: 100000, burst: 100000}}}\n"
           "auth:\n"
           "  apiKeys:\n"
           "    - {key: " +
           api_key +
           ", tenant: default, scopes: [webhooks:manage, runs:read]}\n"
           "store: {sqlite: {path: bridge.db}}\n"
           "hostKeyFile: host.key\n";
}

bool serve_process::start(const std::string& config_file, const std::string& log_file,
                          int deadline_s) {
    log_ = log_file;
    url_.clear();
    // Measured before the spawn: a child quick enough to log its banner before the parent reads
    // the size would otherwise have that banner skipped.
    const std::size_t skip = read_text_file(log_file).size();
    // Spawned, not forked: this test process has threads, and a forked child that allocates
    // before exec can deadlock on a lock another thread held at the fork (seen under ASan).
    server_spawn request;
    request.argv = {WOPBRIDGE_PROGRAM, "serve", "--config", config_file};
    request.argv.insert(request.argv.end(), extra_args.begin(), extra_args.end());
    request.output_file = log_file;
    request.extra_env = extra_env;
    request.working_dir = working_dir;
    if (const int rc = spawn_server(request, pid_); rc != 0) {
        error = std::string("cannot start wopbridge serve: ") + std::strerror(rc);
        return false;
    }
    // The startup banner carries "port":N. Several starts may append to one log: take the last.
    const std::regex port_re("\"event\":\"wopbridge.started\".*?\"port\":([0-9]+)");
    std::string fresh;
    bool exited = false;
    const bool settled = eventually(
        [&] {
            std::string text = read_text_file(log_file);
            fresh = text.size() > skip ? text.substr(skip) : std::string();
            std::smatch m;
            if (std::regex_search(fresh, m, port_re) && m[1] != "0") {
                url_ = "http://127.0.0.1:" + m[1].str();
                return true;
            }
            int status = 0;
            exited = ::waitpid(pid_, &status, WNOHANG) == pid_;
            return exited;
        },
        std::chrono::seconds(deadline_s));
    if (exited) {
        pid_ = -1;
        error = "wopbridge serve exited during startup:\n" + fresh;
        return false;
    }
    if (!settled) {
        error = "no startup line within the deadline:\n" + read_text_file(log_file) + "\n" +
                thread_backtraces(pid_);
        return false;
    }
    return true;
}

void serve_process::signal(int sig) const {
    if (pid_ > 0) {
        ::kill(pid_, sig);
    }
}

int serve_process::wait_exit(int deadline_s) {
    if (pid_ <= 0) {
        return -1;
    }
    int status = 0;
    if (eventually([&] { return ::waitpid(pid_, &status, WNOHANG) == pid_; },
                   std::chrono::seconds(deadline_s))) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return -1;
}

serve_process::~serve_process() {
    if (pid_ > 0) {
        ::kill(pid_, SIGKILL);
        int status = 0;
        ::waitpid(pid_, &status, 0);
    }
}

long proc_status_kib(pid_t pid, const std::string& field) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind(field + ":", 0) == 0) {
            return std::stol(line.substr(field.size() + 1));
        }
    }
    return -1;
}

} // namespace wopbridge::testing
