// One intake batch on PostgreSQL takes its new keys in one statement; every other request
// (a duplicate inside the batch, a key a live row holds, an expired row, dedup off, a request
// that fails) must still get the answer it would get alone, and lose nothing of the others.
#include "store/store.hpp"
#include "support/fake_clock.hpp"
#include "support/postgres_server.hpp"

#include <gtest/gtest.h>

#include <future>
#include <latch>
#include <memory>
#include <string>
#include <vector>

namespace wopbridge {
namespace {

using testing::t0;
constexpr millis day = 24 * 3600 * 1000;

class PostgresIntakeBatchTest : public ::testing::Test {
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
        for (const char* id : {"sub_a", "sub_b"}) {
            subscription sub;
            sub.id = id;
            sub.tenant = "acme";
            sub.state = sub_state::active;
            sub.workflow_id = "wf";
            sub.webhook_id = std::string("wh_") + id;
            sub.created_at = t0;
            sub.updated_at = t0;
            ASSERT_TRUE(store_->insert_subscription(sub));
        }
    }

    static intake_request make_intake(const std::string& sub, const std::string& key,
                                      const std::string& suffix, millis at) {
        intake_request r;
        r.subscription_id = sub;
        r.tenant = "acme";
        r.dedup_key = key;
        r.delivery_id = "dlv_" + suffix;
        r.run_id = "run_" + suffix;
        r.received_at = at;
        r.due_at = at;
        r.content_json = R"({"n":")" + suffix + R"("})";
        r.dedup_expires_at = at + day;
        return r;
    }

    // The requests are queued while a gate request's callback holds the writer, so it takes
    // them as one batch.
    std::vector<result<intake_outcome>> as_one_batch(const std::vector<intake_request>& reqs) {
        std::promise<void> entered;
        std::promise<void> all_queued;
        auto queued = all_queued.get_future().share();
        std::vector<result<intake_outcome>> out(reqs.size(), errc::internal);
        std::latch done(static_cast<std::ptrdiff_t>(reqs.size() + 1));
        store_->intake(make_intake("sub_a", "gate_" + std::to_string(gates_), "gate_" +
                                   std::to_string(gates_), t0),
                       [&, queued](auto r) {
                           EXPECT_TRUE(r);
                           entered.set_value();
                           queued.wait();
                           done.count_down();
                       });
        ++gates_;
        entered.get_future().wait();
        for (std::size_t i = 0; i < reqs.size(); ++i) {
            store_->intake(reqs[i], [&, i](result<intake_outcome> r) {
                out[i] = std::move(r);
                done.count_down();
            });
        }
        all_queued.set_value();
        done.wait();
        return out;
    }

    int gates_ = 0;
    testing::postgres_server* server_ = nullptr;
    std::string db_;
    std::unique_ptr<store> store_;
};

TEST_F(PostgresIntakeBatchTest, EveryRequestOfAMixedBatchGetsTheAnswerItWouldGetAlone) {
    const millis now = t0 + 2 * day;
    // A live row, and one that expired a day ago (its key may be taken again).
    ASSERT_TRUE(store_->intake_sync(make_intake("sub_a", "live", "live_old", now - 1000)));
    ASSERT_TRUE(store_->intake_sync(make_intake("sub_a", "expired", "expired_old", t0)));

    auto off = make_intake("sub_b", "live", "off", now); // dedup off: accepted whatever the key
    off.dedup_enabled = false;
    auto held = make_intake("sub_b", "held", "held", now);
    held.hold = true;
    const std::vector<intake_request> batch{
        make_intake("sub_a", "new_1", "new_1", now),
        make_intake("sub_b", "new_1", "new_1b", now), // the same key, another subscription
        make_intake("sub_a", "new_1", "new_1_again", now),
        make_intake("sub_a", "live", "live_again", now),
        make_intake("sub_a", "expired", "expired_new", now),
        off,
        held,
        make_intake("sub_a", "new_2", "new_2", now),
    };
    auto out = as_one_batch(batch);
    auto expect = [&](std::size_t i, intake_status status, const std::string& suffix) {
        ASSERT_TRUE(out[i]) << i << ": " << out[i].error().message();
        EXPECT_EQ(out[i]->status, status) << i;
        EXPECT_EQ(out[i]->delivery_id, "dlv_" + suffix) << i;
        EXPECT_EQ(out[i]->run_id, "run_" + suffix) << i;
    };
    expect(0, intake_status::accepted, "new_1");
    expect(1, intake_status::accepted, "new_1b");
    expect(2, intake_status::duplicate, "new_1");
    expect(3, intake_status::duplicate, "live_old");
    expect(4, intake_status::accepted, "expired_new");
    expect(5, intake_status::accepted, "off");
    expect(6, intake_status::held, "held");
    expect(7, intake_status::accepted, "new_2");

    // What was accepted is stored whole; what was not left nothing behind.
    for (const char* suffix : {"new_1", "new_1b", "expired_new", "off", "held", "new_2"}) {
        const std::string id = std::string("dlv_") + suffix;
        auto d = store_->get_delivery(id);
        ASSERT_TRUE(d) << id;
        EXPECT_EQ(d->received_at, now);
        EXPECT_EQ(d->status, std::string(suffix) == "held" ? delivery_status::held
                                                           : delivery_status::pending);
        auto content = store_->delivery_content(id);
        ASSERT_TRUE(content) << id;
        EXPECT_EQ(*content, std::string(R"({"n":")") + suffix + R"("})");
    }
    for (const char* suffix : {"new_1_again", "live_again"}) {
        EXPECT_EQ(store_->get_delivery(std::string("dlv_") + suffix).error(), errc::not_found);
    }
    // The expired key now points at its new delivery.
    auto again = store_->intake_sync(make_intake("sub_a", "expired", "third", now + 1));
    ASSERT_TRUE(again);
    EXPECT_EQ(again->status, intake_status::duplicate);
    EXPECT_EQ(again->delivery_id, "dlv_expired_new");
}

TEST_F(PostgresIntakeBatchTest, ARequestThatFailsFailsAloneAndTheRestAreStored) {
    auto out = as_one_batch({make_intake("sub_a", "k1", "k1", t0),
                             make_intake("sub_gone", "k", "gone", t0), // no such subscription
                             make_intake("sub_a", "k2", "k2", t0),
                             make_intake("sub_a", "k1", "k1_again", t0)});
    ASSERT_TRUE(out[0] && out[2] && out[3]);
    EXPECT_EQ(out[0]->status, intake_status::accepted);
    EXPECT_FALSE(out[1]);
    EXPECT_EQ(out[2]->status, intake_status::accepted);
    EXPECT_EQ(out[3]->status, intake_status::duplicate);
    EXPECT_EQ(out[3]->delivery_id, "dlv_k1");
    EXPECT_TRUE(store_->get_delivery("dlv_k1"));
    EXPECT_TRUE(store_->get_delivery("dlv_k2"));
    EXPECT_EQ(store_->get_delivery("dlv_gone").error(), errc::not_found);
}

TEST_F(PostgresIntakeBatchTest, ARowThatExpiredDuringTheBatchGivesWayToItsOwnRequest) {
    // Expires between the batch's oldest request and this key's request: only the later one
    // may take the key again.
    auto first = make_intake("sub_a", "edge", "edge_old", t0);
    first.dedup_expires_at = t0 + 500;
    ASSERT_TRUE(store_->intake_sync(first));
    auto out = as_one_batch({make_intake("sub_a", "early", "early", t0 + 100),
                             make_intake("sub_a", "edge", "edge_new", t0 + 900)});
    ASSERT_TRUE(out[0] && out[1]);
    EXPECT_EQ(out[0]->status, intake_status::accepted);
    EXPECT_EQ(out[1]->status, intake_status::accepted);
    EXPECT_EQ(out[1]->delivery_id, "dlv_edge_new");
}

} // namespace
} // namespace wopbridge
