// The observed store tells its observer every event a new run's record appended, without reading
// it back: what it tells must be exactly what the backend stored.
#include "app/observed_store.hpp"

#include "store/store.hpp"
#include "support/fake_clock.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace wopbridge {
namespace {

using testing::t0;

TEST(ObservedStoreTest, EventsToldForANewRunAreTheStoredOnes) {
    testing::temp_dir dir;
    sqlite_options o;
    o.path = dir.file("bridge.db");
    auto inner = open_sqlite_store(o);
    ASSERT_TRUE(inner) << inner.error().message;
    std::vector<run_event> told;
    auto st = make_observed_store(std::move(*inner), [&](const run_event& e) { told.push_back(e); });

    subscription s;
    s.id = "sub";
    s.tenant = "acme";
    s.workflow_id = "wf";
    s.created_at = s.updated_at = t0;
    ASSERT_TRUE(st->insert_subscription(s));
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
    auto claimed = st->claim_due(t0, 10, 60000);
    ASSERT_TRUE(claimed);
    ASSERT_EQ(claimed->size(), 1u);

    attempt_record rec;
    rec.delivery_id = "dlv_1";
    rec.subscription_id = "sub";
    rec.at = t0 + 7;
    rec.attempt = {"sub", "k", 1, attempt_outcome::delivered, "run_1"};
    rec.attempt_event_id = "evt_att";
    rec.run = run_record{"run_1", "acme", "wf", "sub", "dlv_1", run_status::completed, "", t0, t0, ""};
    rec.run_started_event_id = "evt_started";
    rec.run_started_payload_json = R"({"workflowId":"wf"})";
    rec.extra_run_events = {{"run.completed", R"({"exitCode":0})"}};
    auto out = st->record_attempts({rec});
    ASSERT_EQ(out.size(), 1u);
    ASSERT_TRUE(out[0]);

    auto stored = st->run_events_after("run_1", -1, 100);
    ASSERT_TRUE(stored);
    ASSERT_EQ(told.size(), stored->size());
    for (std::size_t i = 0; i < told.size(); ++i) {
        EXPECT_EQ(told[i].event_id, (*stored)[i].event_id) << i;
        EXPECT_EQ(told[i].run_id, (*stored)[i].run_id) << i;
        EXPECT_EQ(told[i].type, (*stored)[i].type) << i;
        EXPECT_EQ(told[i].payload_json, (*stored)[i].payload_json) << i;
        EXPECT_EQ(told[i].timestamp, (*stored)[i].timestamp) << i;
        EXPECT_EQ(told[i].sequence, (*stored)[i].sequence) << i;
        EXPECT_EQ(told[i].causation_id, (*stored)[i].causation_id) << i;
    }
}

} // namespace
} // namespace wopbridge
