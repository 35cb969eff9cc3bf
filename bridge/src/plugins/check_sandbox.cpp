#include "plugins/check_sandbox.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>

namespace wopbridge::check_kit {
namespace {

using steady = std::chrono::steady_clock;

std::string signal_text(int sig) {
    const char* d = ::strsignal(sig);
    return "signal " + std::to_string(sig) + (d != nullptr ? std::string(" (") + d + ")" : "");
}

} // namespace

void run_phase(const connector_check_options& opt, phase_fn phase,
               connector_check_report& report) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
        report.checks.push_back({check_result::fail, "kit", "pipe() failed"});
        return;
    }
    std::fflush(stdout);
    std::fflush(stderr);
    const pid_t pid = ::fork();
    if (pid < 0) {
        ::close(fds[0]);
        ::close(fds[1]);
        report.checks.push_back({check_result::fail, "kit", "fork() failed"});
        return;
    }
    if (pid == 0) {
        ::close(fds[0]);
        reporter out(fds[1]);
        phase_context ctx{opt, out};
        try {
            phase(ctx);
        } catch (const std::exception& e) {
            out.report(check_result::fail, "kit", std::string("exception escaped: ") + e.what());
        } catch (...) {
            out.report(check_result::fail, "kit", "an unknown exception escaped into the kit");
        }
        ::_exit(0);
    }
    ::close(fds[1]);
    report_reader reader(report);
    bool timed_out = false;
    const auto deadline = steady::now() + std::chrono::milliseconds(opt.phase_timeout_ms);
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                              deadline - steady::now())
                              .count();
        if (left <= 0) {
            timed_out = true;
            break;
        }
        pollfd p{fds[0], POLLIN, 0};
        const int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            continue;
        }
        std::array<char, 4096> chunk{};
        const ssize_t got = ::read(fds[0], chunk.data(), chunk.size());
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got <= 0) {
            break;
        }
        reader.feed(std::string_view(chunk.data(), static_cast<std::size_t>(got)));
    }
    ::close(fds[0]);
    if (timed_out) {
        ::kill(pid, SIGKILL);
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (timed_out) {
        report.checks.push_back({check_result::fail, reader.current(),
                                 "the module did not return within " +
                                     std::to_string(opt.phase_timeout_ms) + " ms (hang); killed"});
    } else if (WIFSIGNALED(status)) {
        report.checks.push_back({check_result::fail, reader.current(),
                                 "the module crashed the process with " +
                                     signal_text(WTERMSIG(status))});
    } else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
        report.checks.push_back({check_result::fail, reader.current(),
                                 "the module exited the process with status " +
                                     std::to_string(WEXITSTATUS(status))});
    }
}

} // namespace wopbridge::check_kit
