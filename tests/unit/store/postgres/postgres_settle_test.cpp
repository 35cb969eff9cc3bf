// What a settlement writes on PostgreSQL: a delivered attempt of a healthy subscription leaves the
// subscription's row alone (every node's settlement would otherwise queue on its row lock and
// notify every other node), and the breaker's bookkeeping still lands when it moves.
#include "store/store.hpp"
#include "support/fake_clock.hpp"
#include "support/postgres_server.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace wopbridge {
namespace {

using testing::t0;

class PostgresSettleTest : public ::testing::Test {
  protected:
    void SetUp() override {
        server_ = testing::postgres_server::shared();
        if (server_ == nullptr) {
            GTEST_SKIP() << "PostgreSQL unavailable: "
                         << testing::postgres_server::shared_unavailable_reason();
        }
        db_ = server_->create_database();
        ASSERT_FALSE(db_.empty());
        auto s = open_postgres_store(postgres_options{server_->url(db_)});
        ASSERT_TRUE(s) << s.error().message;
        store_ = std::move(*s);
        subscription sub;
        sub.id = "sub_a";
        sub.tenant = "acme";
        sub.state = sub_state::active;
        sub.workflow_id = "wf";
        sub.webhook_id = "wh_sub_a";
        sub.created_at = t0;
        sub.updated_at = t0;
        ASSERT_TRUE(store_->insert_subscription(sub));
    }

    // The row version's transaction id: it moves whenever anything rewrites the row.
    std::string subscription_version() {
        std::string out;
        EXPECT_TRUE(server_->sql(db_, "SELECT xmin FROM subscriptions WHERE id = 'sub_a'", &out));
        return out;
    }

    delivery take_one(const std::string& suffix, millis at) {
        intake_request r;
        r.subscription_id = "sub_a";
        r.tenant = "acme";
        r.dedup_key = "key_" + suffix;
        r.delivery_id = "dlv_" + suffix;
        r.run_id = "run_" + suffix;
        r.received_at = at;
        r.due_at = at;
        r.content_json = "{}";
        r.dedup_expires_at = at + 24 * 3600 * 1000;
        EXPECT_TRUE(store_->intake_sync(r));
        auto claimed = store_->claim_due(at, 1, 30000);
        EXPECT_TRUE(claimed && claimed->size() == 1);
        return claimed && !claimed->empty() ? (*claimed)[0] : delivery{};
    }

    attempt_record delivered(const delivery& d, millis at, int failures, millis probe) {
        attempt_record rec;
        rec.delivery_id = d.id;
        rec.subscription_id = d.subscription_id;
        rec.at = at;
        rec.attempt = {d.subscription_id, d.dedup_key, 1, attempt_outcome::delivered, d.run_id};
        rec.run = run_record{
            d.run_id, d.tenant, "wf", d.subscription_id, d.id, run_status::running, "", at, at};
        rec.attempt_event_id = "evt_att_" + d.id;
        rec.run_started_event_id = "evt_start_" + d.id;
        rec.run_started_payload_json = "{}";
        rec.consecutive_failures = failures;
        rec.next_probe_at = probe;
        return rec;
    }

    testing::postgres_server* server_ = nullptr;
    std::string db_;
    std::unique_ptr<store> store_;
};

TEST_F(PostgresSettleTest, ADeliveredAttemptOfAHealthySubscriptionLeavesItsRowAlone) {
    const std::string before = subscription_version();
    ASSERT_FALSE(before.empty());
    for (int i = 0; i < 3; ++i) {
        const delivery d = take_one(std::to_string(i), t0 + i);
        ASSERT_TRUE(store_->record_attempt(delivered(d, t0 + i, 0, 0)));
        auto run = store_->get_run(d.run_id);
        ASSERT_TRUE(run);
    }
    EXPECT_EQ(subscription_version(), before);
}

TEST_F(PostgresSettleTest, ADeliveredAttemptThatMovesTheBreakerStillWritesIt) {
    const delivery d = take_one("b", t0);
    ASSERT_TRUE(store_->get_subscription("sub_a")); // now in this node's cache
    ASSERT_TRUE(store_->record_attempt(delivered(d, t0, 2, t0 + 5000)));
    auto sub = store_->get_subscription("sub_a");
    ASSERT_TRUE(sub);
    EXPECT_EQ(sub->consecutive_failures, 2);
    EXPECT_EQ(sub->next_probe_at, t0 + 5000);
    // Read back through the node's own cache too: the changed row was forgotten there.
    const delivery e = take_one("c", t0 + 1);
    ASSERT_TRUE(store_->record_attempt(delivered(e, t0 + 1, 0, 0)));
    sub = store_->get_subscription("sub_a");
    ASSERT_TRUE(sub);
    EXPECT_EQ(sub->consecutive_failures, 0);
    EXPECT_EQ(sub->next_probe_at, 0);
}

} // namespace
} // namespace wopbridge
