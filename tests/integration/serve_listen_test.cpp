// Where serve listens (issue 19): --listen and $WOPBRIDGE_LISTEN override server.listen, and an
// address another process holds is refused with the system's reason and the way out.
#include "support/build_paths.hpp"
#include "support/child_process.hpp"
#include "support/http_client.hpp"
#include "support/serve_process.hpp"
#include "support/temp_dir.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <string>

namespace wopbridge::testing::serve_listen_test {
namespace {

using ::testing::HasSubstr;

class ServeListenTest : public ::testing::Test {
protected:
    // The config's own listen address; an override must replace it, never be tried after it.
    std::string write_config(const std::string& listen) {
        const std::string path = dir_.file("wopbridge.yaml");
        std::ofstream(path) << "server: {listen: \"" << listen << "\"}\n"
                            << "store: {sqlite: {path: bridge.db}}\n"
                               "hostKeyFile: host.key\n"
                               "runs: {local: {workflows: [{id: wf}]}}\n";
        return path;
    }

    temp_dir dir_;
};

TEST_F(ServeListenTest, TheListenFlagReplacesTheConfiguredAddress) {
    auto config = write_config("127.0.0.1:9");
    serve_process p;
    p.extra_args = {"--listen", "127.0.0.1:0"};
    ASSERT_TRUE(p.start(config, dir_.file("serve.log"))) << p.error;
    EXPECT_NE(p.url(), "http://127.0.0.1:9");
    http_call health;
    health.url = p.url() + "/healthz";
    EXPECT_EQ(perform(health).status, 200);
    p.signal(SIGTERM);
    EXPECT_EQ(p.wait_exit(), 0);
}

TEST_F(ServeListenTest, AnAddressInUseIsRefusedWithTheReasonAndTheWayOut) {
    auto config = write_config("127.0.0.1:0");
    serve_process first;
    ASSERT_TRUE(first.start(config, dir_.file("first.log"))) << first.error;
    const std::string taken = first.url().substr(first.url().rfind('/') + 1);

    // A second bridge on another store, told (through the environment) to take the same address.
    temp_dir other;
    const std::string other_config = other.file("wopbridge.yaml");
    std::ofstream(other_config) << "server: {listen: \"127.0.0.1:0\"}\n"
                                   "store: {sqlite: {path: bridge.db}}\n"
                                   "hostKeyFile: host.key\n"
                                   "runs: {local: {workflows: [{id: wf}]}}\n";
    auto second = run_program({WOPBRIDGE_PROGRAM, "serve", "--config", other_config}, 30,
                              {{"WOPBRIDGE_LISTEN", taken}}, true);
    EXPECT_EQ(second.exit_code, 1) << second.stdout_text;
    EXPECT_THAT(second.stdout_text, HasSubstr("cannot listen on " + taken +
                                              ": Address already in use (another process holds "
                                              "it: stop it, or pick another address with "
                                              "--listen ADDR"));
    auto bad = run_program({WOPBRIDGE_PROGRAM, "serve", "--config", other_config, "--listen",
                            "localhost"},
                           30, {}, true);
    EXPECT_EQ(bad.exit_code, 2) << bad.stdout_text;
    EXPECT_THAT(bad.stdout_text, HasSubstr("--listen: 'localhost' is not a valid address"));
    first.signal(SIGTERM);
    EXPECT_EQ(first.wait_exit(), 0);
}

} // namespace
} // namespace wopbridge::testing::serve_listen_test
