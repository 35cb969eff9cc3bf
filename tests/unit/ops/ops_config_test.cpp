#include "config/config.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

namespace wopbridge {
namespace {

class OpsConfigTest : public ::testing::Test {
protected:
    config_load_result parse(const std::string& subs) {
        std::string text = "runs: {local: {workflows: [{id: wf}]}}\nsubscriptions:\n" + subs;
        return parse_config(text, "test.yaml", dir_.path(),
                            [](const std::string&) { return std::optional<std::string>(); });
    }
    testing::temp_dir dir_;
};

TEST_F(OpsConfigTest, WhenNotActiveHoldReachesTheSubscription) {
    auto r = parse("  - {id: a, source: webhook, workflowId: wf, verification: {mode: none}, "
                   "whenNotActive: hold}\n"
                   "  - {id: b, source: webhook, workflowId: wf, verification: {mode: none}}\n");
    ASSERT_TRUE(r) << (r.errors.empty() ? "" : r.errors[0].to_string());
    std::map<std::string, std::string> secrets;
    auto subs = make_subscriptions(*r.value, secrets);
    ASSERT_EQ(subs.size(), 2u);
    EXPECT_TRUE(subs[0].hold_when_not_active);
    EXPECT_FALSE(subs[1].hold_when_not_active);
}

TEST_F(OpsConfigTest, WhenNotActiveRejectsOtherValues) {
    auto r = parse("  - {id: a, source: webhook, workflowId: wf, verification: {mode: none}, "
                   "whenNotActive: queue}\n");
    ASSERT_FALSE(r);
    ASSERT_EQ(r.errors.size(), 1u);
    EXPECT_NE(r.errors[0].message.find("whenNotActive"), std::string::npos) << r.errors[0].message;
}

} // namespace
} // namespace wopbridge
