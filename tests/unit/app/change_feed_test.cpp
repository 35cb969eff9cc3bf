// The change feed wakes exactly the tenant a write belongs to, once per watch, and never guesses:
// a write it cannot attribute wakes nobody.
#include "app/change_feed.hpp"
#include "app/observed_store.hpp"

#include "store/store.hpp"
#include "support/fake_clock.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace wopbridge {
namespace {

using testing::t0;

TEST(ChangeFeedTest, WakesTheWritesTenantOncePerWatch) {
    change_feed feed;
    feed.note_subscription("sub_a", "acme");
    feed.note_subscription("sub_g", "globex");
    feed.note_run("run_a", "sub_a");
    std::vector<std::string> woke;
    auto watch = [&](const std::string& tenant) {
        return feed.watch(tenant, [&woke, tenant] { woke.push_back(tenant); });
    };
    watch("acme");
    watch("globex");
    feed.subscription_changed("sub_a");
    EXPECT_EQ(woke, std::vector<std::string>{"acme"});
    feed.subscription_changed("sub_a"); // one-shot: acme is no longer watching
    EXPECT_EQ(woke.size(), 1u);

    watch("acme");
    feed.run_changed("run_a", true);
    EXPECT_EQ(woke, (std::vector<std::string>{"acme", "acme"}));
    watch("acme");
    feed.run_changed("run_a", false); // forgotten when it ended: unattributed, wakes nobody
    feed.subscription_changed("sub_unknown");
    EXPECT_EQ(woke.size(), 2u);
    feed.tenant_changed("globex");
    EXPECT_EQ(woke.back(), "globex");
    EXPECT_EQ(feed.watchers(), 1u); // acme's, still armed
}

TEST(ChangeFeedTest, CancelledWatchersAreNotCalledAndCallbacksMayReArm) {
    change_feed feed;
    int calls = 0;
    auto t = feed.watch("acme", [&] { ++calls; });
    feed.cancel(t);
    feed.tenant_changed("acme");
    EXPECT_EQ(calls, 0);
    std::function<void()> rearm = [&] {
        ++calls;
        if (calls < 3) {
            feed.watch("acme", rearm); // from inside a callback: no deadlock
        }
    };
    feed.watch("acme", rearm);
    for (int i = 0; i < 5; ++i) {
        feed.tenant_changed("acme");
    }
    EXPECT_EQ(calls, 3);
}

TEST(ChangeFeedTest, TheRunMapIsBounded) {
    change_feed feed(2);
    feed.note_subscription("sub", "acme");
    int calls = 0;
    for (const char* run : {"r1", "r2", "r3"}) {
        feed.note_run(run, "sub");
    }
    feed.watch("acme", [&] { ++calls; });
    feed.run_changed("r1", false); // dropped when the map filled
    EXPECT_EQ(calls, 0);
    feed.run_changed("r3", false);
    EXPECT_EQ(calls, 1);
}

// Through the store decorator on a real SQLite store: each committed write wakes its tenant.
TEST(ChangeFeedTest, TheObservedStoreReportsCommittedWrites) {
    testing::temp_dir dir;
    sqlite_options o;
    o.path = dir.file("bridge.db");
    auto inner = open_sqlite_store(o);
    ASSERT_TRUE(inner) << inner.error().message;
    change_feed feed;
    auto st = make_observed_store(std::move(*inner), nullptr, &feed);
    int acme = 0;
    int globex = 0;
    auto arm = [&] {
        feed.watch("acme", [&] { ++acme; });
        feed.watch("globex", [&] { ++globex; });
    };

    arm();
    subscription s;
    s.id = "sub";
    s.tenant = "acme";
    s.workflow_id = "wf";
    s.created_at = s.updated_at = t0;
    ASSERT_TRUE(st->insert_subscription(s));
    EXPECT_EQ(acme, 1);

    feed.watch("acme", [&] { ++acme; });
    intake_request r;
    r.subscription_id = "sub";
    r.tenant = "acme";
    r.dedup_key = "k";
    r.delivery_id = "dlv_1";
    r.run_id = "run_1";
    r.received_at = r.due_at = t0;
    r.dedup_expires_at = t0 + 24 * 3600 * 1000;
    r.content_json = "{}";
    ASSERT_TRUE(st->intake_sync(r));
    EXPECT_EQ(acme, 2);

    feed.watch("acme", [&] { ++acme; });
    ASSERT_TRUE(st->claim_due(t0, 10, 60000)); // a read: no change
    EXPECT_EQ(acme, 2);
    attempt_record rec;
    rec.delivery_id = "dlv_1";
    rec.subscription_id = "sub";
    rec.at = t0 + 7;
    rec.attempt = {"sub", "k", 1, attempt_outcome::delivered, "run_1"};
    rec.attempt_event_id = "evt_att";
    rec.run = run_record{"run_1", "acme", "wf", "sub", "dlv_1", run_status::running, "", t0, t0, ""};
    rec.run_started_event_id = "evt_started";
    rec.run_started_payload_json = R"({"workflowId":"wf"})";
    ASSERT_TRUE(st->record_attempt(rec));
    EXPECT_EQ(acme, 3);

    feed.watch("acme", [&] { ++acme; });
    ASSERT_TRUE(st->end_run("run_1", "run.completed", R"({"exitCode":0})", "evt_done",
                            run_status::completed, t0 + 9));
    EXPECT_EQ(acme, 4);
    EXPECT_EQ(globex, 0);
}

} // namespace
} // namespace wopbridge
