// The conformance test seams (CONTRACT.md §g) on a real bridge: deliver, dedup, exhaust, events
// and reset, and their absence without the switch.
#include "bridge_fixture.hpp"

#include <gtest/gtest.h>

namespace wopbridge::bridge_testing {
namespace {

TEST_F(BridgeTest, SeamDeliverAnswersAfterRunStartedIsPersisted) {
    open();
    auto r = bridge_->seam_deliver({"acme", "deliver", "", ""});
    ASSERT_TRUE(r.has_value()) << r.error().message();
    EXPECT_EQ(r->delivered_count, 1);
    auto log = bridge_->seam_events("acme", r->run_id).value();
    ASSERT_GE(log.size(), 2u);
    EXPECT_EQ(log[0].type, events::delivery_attempted_type);
    EXPECT_EQ(log[1].type, events::run_started_type);
    EXPECT_EQ(log[1].causation_id, log[0].event_id);
}

TEST_F(BridgeTest, SeamDedupEchoesTheKeyAndDeliversOnce) {
    open();
    auto r = bridge_->seam_deliver({"acme", "dedup", "conformance-key-123", "email"});
    ASSERT_TRUE(r.has_value());
    auto log = bridge_->seam_events("acme", r->run_id).value();
    int delivered = 0;
    for (const auto& e : log) {
        if (e.type == events::delivery_attempted_type) {
            EXPECT_EQ(payload(e)["dedupKey"], "conformance-key-123");
            delivered += payload(e)["outcome"] == "delivered";
        }
    }
    EXPECT_EQ(delivered, 1);
    EXPECT_EQ(bridge_->get_subscription("acme", r->subscription_id)->record.source,
              source_kind::email);
}

TEST_F(BridgeTest, SeamExhaustRunsToDeadLetterBeforeAnswering) {
    open();
    ASSERT_TRUE(bridge_->start().has_value()); // the engine thread runs alongside the seam
    auto started = std::chrono::steady_clock::now();
    auto r = bridge_->seam_deliver({"acme", "exhaust", "", ""});
    ASSERT_TRUE(r.has_value());
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
    EXPECT_EQ(r->run_id, r->subscription_id);
    auto log = bridge_->seam_events("acme", r->run_id).value();
    ASSERT_EQ(log.size(), 3u);
    EXPECT_EQ(payload(log[1])["outcome"], "dead-lettered");
    auto change = payload(log[2]);
    EXPECT_EQ(change["toState"], "dead-lettered");
    EXPECT_EQ(change["fromState"], "active");
    EXPECT_EQ(change["source"], "webhook");
    EXPECT_EQ(change["reason"], "retry-exhausted");
    bridge_->stop();
}

TEST_F(BridgeTest, SeamEventsForUnknownIdsAreEmptyAndResetClearsSeamSubscriptions) {
    open();
    EXPECT_TRUE(bridge_->seam_events("acme", "__probe__").value().empty());
    auto r = bridge_->seam_deliver({"acme", "deliver", "", ""});
    ASSERT_TRUE(r.has_value());
    EXPECT_FALSE(bridge_->seam_deliver({"acme", "bogus", "", ""}).has_value());
    ASSERT_TRUE(bridge_->seam_reset("acme").has_value());
    EXPECT_FALSE(bridge_->get_subscription("acme", r->subscription_id).has_value());
}

TEST_F(BridgeTest, SeamsAreAbsentWithoutTheSwitch) {
    settings_.test_seams = false;
    open();
    EXPECT_FALSE(bridge_->seam_events("acme", "__probe__").has_value());
    EXPECT_FALSE(bridge_->seam_deliver({"acme", "deliver", "", ""}).has_value());
}

} // namespace
} // namespace wopbridge::bridge_testing
