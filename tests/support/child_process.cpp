#include "support/child_process.hpp"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <poll.h>
#include <spawn.h>
#include <string_view>
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
    // Spawned, not forked: the test process has threads, and a forked child that allocates
    // before exec (setenv, argv vectors) can deadlock on a lock another thread held at the fork.
    std::vector<char*> args;
    for (const auto& a : argv) {
        args.push_back(const_cast<char*>(a.c_str()));
    }
    args.push_back(nullptr);
    std::vector<std::string> env_text;
    for (char** e = environ; *e != nullptr; ++e) {
        const std::string_view entry(*e);
        const bool replaced = std::any_of(env.begin(), env.end(), [&](const auto& kv) {
            return entry.size() > kv.first.size() && entry.starts_with(kv.first) &&
                   entry[kv.first.size()] == '=';
        });
        if (!replaced) {
            env_text.emplace_back(entry);
        }
    }
    for (const auto& [name, value] : env) {
        env_text.push_back(name + "=" + value);
    }
    std::vector<char*> envp;
    for (auto& e : env_text) {
        envp.push_back(e.data());
    }
    envp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    ::posix_spawn_file_actions_init(&actions);
    ::posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    if (with_stderr) {
        ::posix_spawn_file_actions_adddup2(&actions, out[1], 2);
    }
    ::posix_spawn_file_actions_addclose(&actions, out[0]);
    ::posix_spawn_file_actions_addclose(&actions, out[1]);
    pid_t pid = -1;
    const int spawned = ::posix_spawn(&pid, args[0], &actions, nullptr, args.data(), envp.data());
    ::posix_spawn_file_actions_destroy(&actions);
    if (spawned != 0) {
        // As a shell would answer a program it cannot run.
        ::close(out[0]);
        ::close(out[1]);
        run.exit_code = 127;
        return run;
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
