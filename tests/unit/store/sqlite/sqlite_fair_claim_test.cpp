// SQLite claims due deliveries round-robin across subscriptions: a subscription with a large due
// backlog cannot take every slot ahead of another subscription's due deliveries; within one
// subscription the order stays due order.
#include "store/store.hpp"
#include "support/fake_clock.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace wopbridge {
namespace {

using testing::t0;

class SqliteFairClaimTest : public ::testing::Test {
  protected:
    void SetUp() override {
        sqlite_options o;
        o.path = dir_.file("bridge.db");
        auto st = open_sqlite_store(o);
        ASSERT_TRUE(st.has_value());
        store_ = std::move(*st);
        for (const auto* id : {"noisy", "quiet"}) {
            subscription s;
            s.id = id;
            s.tenant = "acme";
            s.workflow_id = "wf";
            s.webhook_id = std::string("wh_") + id;
            s.secret_fingerprint = "fp";
            s.sealed_secret = "sealed";
            s.created_at = t0;
            s.updated_at = t0;
            ASSERT_TRUE(store_->insert_subscription(s));
        }
    }

    void intake(const std::string& sub, int n, millis at) {
        intake_request r;
        r.subscription_id = sub;
        r.tenant = "acme";
        r.dedup_key = sub + std::to_string(n);
        r.delivery_id = "dlv_" + sub + "_" + std::to_string(n);
        r.run_id = "run_" + sub + "_" + std::to_string(n);
        r.received_at = at;
        r.due_at = at;
        r.content_json = "{}";
        r.dedup_expires_at = at + 24 * 3600 * 1000;
        ASSERT_TRUE(store_->intake_sync(std::move(r)));
    }

    testing::temp_dir dir_;
    std::unique_ptr<store> store_;
};

TEST_F(SqliteFairClaimTest, ClaimsRoundRobinAcrossSubscriptionsInDueOrderWithinEach) {
    for (int i = 0; i < 50; ++i) {
        intake("noisy", i, t0 + i); // an older backlog
    }
    for (int i = 0; i < 3; ++i) {
        intake("quiet", i, t0 + 100 + i);
    }
    auto c = store_->claim_due(t0 + 1000, 6, 60000);
    ASSERT_TRUE(c);
    std::vector<std::string> ids;
    for (const auto& d : *c) {
        ids.push_back(d.id);
    }
    EXPECT_EQ(ids, (std::vector<std::string>{"dlv_noisy_0", "dlv_quiet_0", "dlv_noisy_1",
                                             "dlv_quiet_1", "dlv_noisy_2", "dlv_quiet_2"}));
    auto next = store_->claim_due(t0 + 1000, 2, 60000);
    ASSERT_TRUE(next);
    ASSERT_EQ(next->size(), 2u);
    EXPECT_EQ((*next)[0].id, "dlv_noisy_3");
    EXPECT_EQ((*next)[1].id, "dlv_noisy_4");
}

} // namespace
} // namespace wopbridge
