#include "app/bridge.hpp"
#include "config/config.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

namespace wopbridge {
namespace {

class WebhooksConfigTest : public ::testing::Test {
protected:
    config_load_result parse(const std::string& extra) {
        return parse_config("runs: {local: {workflows: [{id: wf}]}}\n" + extra, "test.yaml",
                            dir_.path(), [](const std::string&) { return std::nullopt; });
    }
    testing::temp_dir dir_;
};

TEST_F(WebhooksConfigTest, DefaultsToBestEffortWithoutLoopback) {
    auto r = parse("");
    ASSERT_TRUE(r);
    auto s = make_bridge_settings(*r.value);
    EXPECT_FALSE(s.webhooks_durable);
    EXPECT_FALSE(s.webhooks_allow_loopback_http);
}

TEST_F(WebhooksConfigTest, ReadsDurableAndAllowLoopbackHttp) {
    auto r = parse("webhooks: {durable: true, allowLoopbackHttp: true}\n");
    ASSERT_TRUE(r);
    auto s = make_bridge_settings(*r.value);
    EXPECT_TRUE(s.webhooks_durable);
    EXPECT_TRUE(s.webhooks_allow_loopback_http);
}

TEST_F(WebhooksConfigTest, RefusesUnknownKeysAndNonBooleans) {
    EXPECT_FALSE(parse("webhooks: {durable: true, retries: 3}\n"));
    EXPECT_FALSE(parse("webhooks: {durable: maybe}\n"));
    EXPECT_FALSE(parse("webhooks: [true]\n"));
}

} // namespace
} // namespace wopbridge
