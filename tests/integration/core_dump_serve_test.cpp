// A crashed `serve` leaves no core file carrying its secrets: with the core limit raised as an
// operator's shell might (`ulimit -c unlimited`, inherited), SIGSEGV produces no core, and the
// process's own limit reads 0. Opted in (WOPBRIDGE_ALLOW_CORE_DUMPS=1) a core is written, the
// control that the test can see one, and the host key is not in it (secure heap, MADV_DONTDUMP).
// Needs core_pattern to name a file (Debian's default, "core"); a pipe to a crash collector is
// reported and the file checks are not made.
#include "support/serve_probe.hpp"
#include "support/serve_process.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/wait.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>

namespace wopbridge::testing::core_dump_serve_test {
namespace {

constexpr const char* signing_canary = "whsec_Q0FOQVJZU0lHTklOR1NFQ1JFVDAxMjM0NTY3";

class CoreDumpServeTest : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_EQ(::getrlimit(RLIMIT_CORE, &saved_), 0);
        rlimit unlimited{RLIM_INFINITY, RLIM_INFINITY};
        if (::setrlimit(RLIMIT_CORE, &unlimited) != 0) {
            unlimited = {saved_.rlim_max, saved_.rlim_max}; // as high as this user may go
            ASSERT_EQ(::setrlimit(RLIMIT_CORE, &unlimited), 0);
        }
        std::filesystem::create_directories(dir_.file("cwd"));
        std::ofstream(dir_.file("wopbridge.yaml"))
            << probe_config_prelude(dir_.path().string(), "http://127.0.0.1:8080")
            << "runs: {local: {workflows: [{id: conformance-noop}]}}\n"
               "subscriptions:\n"
               "  - {id: orders, source: webhook, workflowId: conformance-noop, signingSecret: \""
            << signing_canary << "\"}\n";
        std::ifstream pattern("/proc/sys/kernel/core_pattern");
        std::getline(pattern, core_pattern_);
    }
    void TearDown() override { ::setrlimit(RLIMIT_CORE, &saved_); }

    bool file_pattern() const { return core_pattern_ == "core"; }

    // Starts serve, kills it with SIGSEGV, and returns the core file's bytes ("" when none).
    std::string crash(serve_process& serve, std::string& limits) {
        serve.working_dir = dir_.file("cwd");
        EXPECT_TRUE(serve.start(dir_.file("wopbridge.yaml"), dir_.file("serve.log")))
            << serve.error;
        std::ifstream lim("/proc/" + std::to_string(serve.pid()) + "/limits");
        for (std::string line; std::getline(lim, line);) {
            if (line.rfind("Max core file size", 0) == 0) {
                limits = line;
            }
        }
        serve.signal(SIGSEGV);
        EXPECT_EQ(serve.wait_exit(), -1); // killed by the signal
        const auto core = dir_.file("cwd") + "/core";
        std::string bytes = std::filesystem::exists(core) ? read_text_file(core) : std::string();
        std::filesystem::remove(core);
        return bytes;
    }

    temp_dir dir_;
    rlimit saved_{};
    std::string core_pattern_;
};

TEST_F(CoreDumpServeTest, ACrashLeavesNoCoreFileUnlessTheOperatorOptsIn) {
    serve_process serve;
    std::string limits;
    const std::string core = crash(serve, limits);
    EXPECT_NE(limits.find(" 0 "), std::string::npos) << limits; // soft and hard 0
    EXPECT_NE(read_text_file(dir_.file("serve.log")).find("\"coreDumps\":\"off"),
              std::string::npos);
    if (file_pattern()) {
        EXPECT_TRUE(core.empty()) << "a core file of " << core.size() << " bytes";
    } else {
        std::fprintf(stderr, "core_pattern is '%s': the file checks are not made\n",
                     core_pattern_.c_str());
    }
}

TEST_F(CoreDumpServeTest, OptedInTheCoreKeepsTheKeysOut) {
    serve_process serve;
    serve.extra_env = {"WOPBRIDGE_ALLOW_CORE_DUMPS=1"};
    std::string limits;
    const std::string core = crash(serve, limits);
    // AddressSanitizer lowers the soft core limit to 0 itself (disable_coredump, on by default
    // on 64-bit): a sanitized serve neither keeps the limit it inherited nor makes a core.
    const bool sanitized = std::getenv("ASAN_OPTIONS") != nullptr;
    if (!sanitized) {
        EXPECT_EQ(limits.find(" 0 "), std::string::npos) << limits;
    }
    const std::string host_key = read_text_file(dir_.file("host.key"));
    ASSERT_EQ(host_key.size(), 32u);
    if (file_pattern() && !sanitized) {
        ASSERT_FALSE(core.empty()) << "opted in, yet no core: the test cannot see one";
        EXPECT_EQ(core.find(host_key), std::string::npos) << "the host key is in the core";
    }
}

} // namespace
} // namespace wopbridge::testing::core_dump_serve_test
