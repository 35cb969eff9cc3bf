// Every example config under examples/*/ passes `wopbridge check-config` with its documented
// environment variables set, so a copy-paste of an example never starts from a broken file.
#include "support/build_paths.hpp"
#include "support/child_process.hpp"
#include "support/serve_process.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <regex>
#include <set>
#include <string>

namespace wopbridge::testing::examples_test {
namespace {

class ExamplesTest : public ::testing::Test {};

TEST_F(ExamplesTest, EveryExampleConfigPassesCheckConfig) {
    const std::filesystem::path examples = std::filesystem::path(WOPBRIDGE_SOURCE_DIR) / "examples";
    std::set<std::string> checked;
    for (const auto& dir : std::filesystem::directory_iterator(examples)) {
        const auto file = dir.path() / "wopbridge.yaml";
        if (!std::filesystem::exists(file)) {
            continue;
        }
        // The variables the file names get placeholder values of a plausible shape.
        const std::string text = read_text_file(file.string());
        const std::regex var(R"(\$\{([A-Z0-9_]+)\})");
        for (std::sregex_iterator it(text.begin(), text.end(), var), end; it != end; ++it) {
            const std::string name = (*it)[1];
            const std::string value = name.find("WHSEC") != std::string::npos
                                          ? "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
                                          : "example-" + name + "-0123456789abcdef";
            ::setenv(name.c_str(), value.c_str(), 1);
        }
        auto run = run_program({WOPBRIDGE_PROGRAM, "check-config", file.string()});
        EXPECT_EQ(run.exit_code, 0) << file << ":\n" << run.stdout_text;
        EXPECT_NE(run.stdout_text.find(": ok"), std::string::npos) << file;
        checked.insert(dir.path().filename().string());
    }
    // One config per connector (and the quickstart).
    for (const char* name :
         {"email", "forms", "hello-connector", "kafka", "nats", "queue", "quickstart", "rabbitmq",
          "slack", "sms"}) {
        EXPECT_TRUE(checked.count(name)) << "examples/" << name << "/wopbridge.yaml is missing";
    }
}

} // namespace
} // namespace wopbridge::testing::examples_test
