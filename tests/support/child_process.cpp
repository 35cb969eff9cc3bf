#include "support/child_process.hpp"

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

namespace wopbridge::testing {

program_run run_program(const std::vector<std::string>& argv, int deadline_s,
                        const std::vector<std::pair<std::string, std::string>>& env,
                        bool with_stderr) {
    program_run run;
    int out[2];
    if (argv.empty() || ::pipe(out) != 0) {
        return run;
    }
    pid_t pid = ::fork();
    if (pid < 0) {
        ::close(out[0]);
        ::close(out[1]);
        return run;
    }
    if (pid == 0) {
        ::dup2(out[1], 1);
        if (with_stderr) {
            ::dup2(out[1], 2);
        }
        ::close(out[0]);
        ::close(out[1]);
        for (const auto& [name, value] : env) {
            ::setenv(name.c_str(), value.c_str(), 1);
        }
        std::vector<char*> args;
        for (const auto& a : argv) {
            args.push_back(const_cast<char*>(a.c_str()));
        }
        args.push_back(nullptr);
        ::execv(args[0], args.data());
        ::_exit(127);
    }
    ::close(out[1]);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(deadline_s);
    int status = 0;
    bool exited = false;
    char buf[4096];
    // Wait on the pipe itself. A grandchild (a browser) may keep it open after the child exits,
    // so the child's exit is also checked whenever the pipe stays quiet.
    while (true) {
        pollfd pfd{out[0], POLLIN, 0};
        const int ready = ::poll(&pfd, 1, 50);
        if (ready > 0) {
            ssize_t n = ::read(out[0], buf, sizeof buf);
            if (n > 0) {
                run.stdout_text.append(buf, static_cast<std::size_t>(n));
                continue;
            }
            if (!exited) {
                ::waitpid(pid, &status, 0); // EOF: every writer is gone
                exited = true;
            }
            break;
        }
        if (exited) {
            break; // exited and nothing more to read
        }
        if (::waitpid(pid, &status, WNOHANG) == pid) {
            exited = true;
            continue; // drain what is left in the pipe
        }
        if (std::chrono::steady_clock::now() > until) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, &status, 0);
            ::close(out[0]);
            run.stdout_text += "\n[killed after " + std::to_string(deadline_s) + " s]";
            return run;
        }
    }
    ::close(out[0]);
    run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::string text = run.stdout_text;
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) {
        text.pop_back();
    }
    auto nl = text.rfind('\n');
    run.last_line = nl == std::string::npos ? text : text.substr(nl + 1);
    return run;
}

} // namespace wopbridge::testing
