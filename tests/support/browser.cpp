#include "support/browser.hpp"

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace wopbridge::testing {
namespace {

const std::string browser_dir = std::string(WOPBRIDGE_SOURCE_DIR) + "/tests/browser";

bool executable(const std::string& path) { return ::access(path.c_str(), X_OK) == 0; }

std::string chromium_path() {
    if (const char* p = std::getenv("CHROMIUM_PATH"); p && *p) {
        return p;
    }
    return "/usr/bin/chromium";
}

std::string node_path() {
    for (const char* candidate : {"/usr/bin/node", "/usr/local/bin/node"}) {
        if (executable(candidate)) {
            return candidate;
        }
    }
    return {};
}

} // namespace

std::string browser_unavailable_reason() {
    if (!executable(chromium_path())) {
        return "chromium not installed (scripts/setup-debian.sh browser)";
    }
    if (node_path().empty()) {
        return "node not installed (scripts/setup-debian.sh browser)";
    }
    struct stat st{};
    if (::stat((browser_dir + "/node_modules/playwright-core").c_str(), &st) != 0) {
        return "playwright-core not installed (scripts/setup-debian.sh browser runs npm ci)";
    }
    return {};
}

browser_run run_browser_script(const std::string& script, const std::string& json_argument,
                               int deadline_s) {
    browser_run run;
    int out[2];
    if (::pipe(out) != 0) {
        return run;
    }
    const std::string node = node_path();
    const std::string script_path = browser_dir + "/" + script;
    pid_t pid = ::fork();
    if (pid < 0) {
        ::close(out[0]);
        ::close(out[1]);
        return run;
    }
    if (pid == 0) {
        ::dup2(out[1], 1);
        ::close(out[0]);
        ::close(out[1]);
        ::setenv("CHROMIUM_PATH", chromium_path().c_str(), 1);
        ::setenv("NODE_PATH", (browser_dir + "/node_modules").c_str(), 1);
        ::execl(node.c_str(), node.c_str(), script_path.c_str(), json_argument.c_str(),
                static_cast<char*>(nullptr));
        ::_exit(127);
    }
    ::close(out[1]);
    ::fcntl(out[0], F_SETFL, O_NONBLOCK);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(deadline_s);
    int status = 0;
    bool exited = false;
    char buf[4096];
    while (true) {
        ssize_t n = ::read(out[0], buf, sizeof buf);
        if (n > 0) {
            run.stdout_text.append(buf, static_cast<std::size_t>(n));
            continue;
        }
        if (!exited && ::waitpid(pid, &status, WNOHANG) == pid) {
            exited = true;
            continue; // drain what is left in the pipe
        }
        if (exited && n <= 0) {
            break;
        }
        if (std::chrono::steady_clock::now() > until) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, &status, 0);
            run.stdout_text += "\n[killed: browser script exceeded " +
                               std::to_string(deadline_s) + " s]";
            ::close(out[0]);
            return run;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20)); // child output poll, bounded
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
