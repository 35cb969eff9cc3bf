#include "support/browser.hpp"

#include <cstdlib>
#include <sys/stat.h>
#include <unistd.h>

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
    return run_program({node_path(), browser_dir + "/" + script, json_argument}, deadline_s,
                       {{"CHROMIUM_PATH", chromium_path()},
                        {"NODE_PATH", browser_dir + "/node_modules"}});
}

} // namespace wopbridge::testing
