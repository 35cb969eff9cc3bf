// The vendor-facing CLI on the built modules: `wopbridge connectors` lists every connector with its
// version, status and ABI, and `wopbridge connector-check` passes on the four channel connectors
// and the hello connector (exit 0: no check failed).
#include "support/build_paths.hpp"
#include "support/child_process.hpp"
#include "wopbridge/connector.h"

#include <gtest/gtest.h>

#include <regex>
#include <string>

namespace wopbridge::testing::connectors_cli_test {
namespace {

class ConnectorsCliTest : public ::testing::Test {
protected:
    static std::string module(const std::string& name) {
        return std::string(WOPBRIDGE_MODULE_DIR) + "/" + name + ".so";
    }
};

// One version source (CMake's project version) and, beside it, the connector ABI the host loads.
TEST_F(ConnectorsCliTest, VersionNamesTheReleaseAndTheConnectorAbi) {
    auto r = run_program({WOPBRIDGE_PROGRAM, "--version"});
    EXPECT_EQ(r.exit_code, 0);
    const std::string abi = "(connector ABI " + std::to_string(WOPBRIDGE_ABI_MAJOR) + "." +
                            std::to_string(WOPBRIDGE_ABI_MINOR) + ")";
    EXPECT_TRUE(std::regex_match(r.last_line, std::regex(R"(wopbridge [0-9]+\.[0-9]+\.[0-9]+ .*)")))
        << r.last_line;
    EXPECT_NE(r.last_line.find(abi), std::string::npos) << r.last_line;
}

TEST_F(ConnectorsCliTest, ConnectorsListsEveryBuiltModule) {
    auto run = run_program({WOPBRIDGE_PROGRAM, "connectors", "--module-path", WOPBRIDGE_MODULE_DIR});
    ASSERT_EQ(run.exit_code, 0) << run.stdout_text;
    for (const std::string name :
         {"email", "forms", "hello", "kafka", "nats", "queue", "rabbitmq", "slack", "sms"}) {
        // One row per module: name, a version, a status, the ABI, the module's path.
        bool found = false;
        std::size_t at = 0;
        while ((at = run.stdout_text.find('\n', at)) != std::string::npos) {
            ++at;
            const std::string line = run.stdout_text.substr(at, run.stdout_text.find('\n', at) - at);
            if (line.rfind(name + " ", 0) == 0) {
                found = true;
                EXPECT_NE(line.find(module(name)), std::string::npos) << line;
                EXPECT_TRUE(line.find("alpha") != std::string::npos ||
                            line.find("stable") != std::string::npos)
                    << line;
                EXPECT_NE(line.find(" 1."), std::string::npos) << line; // ABI major 1
            }
        }
        EXPECT_TRUE(found) << name << " missing from:\n" << run.stdout_text;
    }
}

TEST_F(ConnectorsCliTest, ConnectorCheckPassesOnTheChannelConnectorsAndHello) {
    struct target {
        std::string name;
        std::string config;
        std::string subscription;
    };
    const std::vector<target> targets = {
        {"slack", R"({"signingSecret":"kit-signing-secret"})", "{}"},
        {"sms", R"({"authToken":"kit-auth-token"})", "{}"},
        {"email", R"({"listen":"127.0.0.1:0"})", R"({"addresses":["kit@example.test"]})"},
        {"forms", "{}", R"({"allowedOrigins":["https://example.com"]})"},
        {"hello", "{}", "{}"},
    };
    for (const auto& t : targets) {
        auto run = run_program({WOPBRIDGE_PROGRAM, "connector-check", module(t.name), "--config",
                                t.config, "--subscription-settings", t.subscription},
                               60);
        EXPECT_EQ(run.exit_code, 0) << t.name << ":\n" << run.stdout_text;
        EXPECT_EQ(run.stdout_text.find("FAIL"), std::string::npos) << t.name << ":\n"
                                                                    << run.stdout_text;
        EXPECT_NE(run.stdout_text.find("PASS"), std::string::npos) << t.name;
    }
}

} // namespace
} // namespace wopbridge::testing::connectors_cli_test
