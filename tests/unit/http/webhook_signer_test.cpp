#include "support/webhook_signer.hpp"

#include <gtest/gtest.h>

namespace wopbridge::testing {
namespace {

class WebhookSignerTest : public ::testing::Test {};

TEST_F(WebhookSignerTest, MatchesTheStandardWebhooksVector) {
    EXPECT_EQ(sign_standard_webhook("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
                                    "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330,
                                    R"({"test": 2432232314})"),
              "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
}

TEST_F(WebhookSignerTest, RefusesSecretsWithoutThePrefix) {
    EXPECT_EQ(sign_standard_webhook("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_x", 1, "{}"), "");
}

TEST_F(WebhookSignerTest, FreshIdsAreValidAndDistinct) {
    auto a = fresh_webhook_id();
    EXPECT_EQ(a.size(), 28u);
    EXPECT_NE(a, fresh_webhook_id());
}

} // namespace
} // namespace wopbridge::testing
