// The store contract: outbound webhooks and bulk replay jobs.
#include "unit/store/store_contract.hpp"

namespace wopbridge::store_contract {
namespace {

using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

// ---- outbound webhooks ----

outbound_webhook make_webhook(const std::string& id, const std::string& tenant,
                              std::vector<std::string> events,
                              sub_state state = sub_state::active) {
    outbound_webhook w;
    w.id = id;
    w.tenant = tenant;
    w.url = "https://hooks.example/" + id;
    w.events = std::move(events);
    w.tags = {"blue", "green"};
    w.sealed_secret = "v1:sealed-" + id;
    w.sealed_standard_secret = "";
    w.secret_fingerprint = "fp_" + id;
    w.state = state;
    w.created_at = t0;
    w.updated_at = t0;
    return w;
}

TEST_P(StoreContractTest, OutboundWebhookCrudRoundTrips) {
    ASSERT_TRUE(store_->insert_outbound_webhook(make_webhook("owh_b", "acme", {"run.started"})));
    auto a = make_webhook("owh_a", "acme", {"run.completed", "run.failed"}, sub_state::paused);
    a.sealed_standard_secret = "v1:standard";
    ASSERT_TRUE(store_->insert_outbound_webhook(a));
    ASSERT_TRUE(store_->insert_outbound_webhook(make_webhook("owh_c", "globex", {"run.started"})));
    EXPECT_EQ(store_->insert_outbound_webhook(a).error(), errc::already_exists);

    auto got = store_->get_outbound_webhook("owh_a");
    ASSERT_TRUE(got) << got.error().message();
    EXPECT_EQ(got->tenant, "acme");
    EXPECT_EQ(got->url, "https://hooks.example/owh_a");
    EXPECT_THAT(got->events, ElementsAre("run.completed", "run.failed"));
    EXPECT_THAT(got->tags, ElementsAre("blue", "green"));
    EXPECT_EQ(got->sealed_secret, "v1:sealed-owh_a");
    EXPECT_EQ(got->sealed_standard_secret, "v1:standard");
    EXPECT_EQ(got->secret_fingerprint, "fp_owh_a");
    EXPECT_EQ(got->state, sub_state::paused);
    auto acme = store_->list_outbound_webhooks("acme");
    ASSERT_TRUE(acme);
    ASSERT_EQ(acme->size(), 2u);
    EXPECT_EQ((*acme)[0].id, "owh_a");
    EXPECT_EQ((*acme)[1].id, "owh_b");

    ASSERT_TRUE(store_->delete_outbound_webhook("owh_a"));
    EXPECT_EQ(store_->get_outbound_webhook("owh_a").error(), errc::not_found);
    EXPECT_EQ(store_->delete_outbound_webhook("owh_a").error(), errc::not_found);
}

// The outbox rows of a run event commit with it, for the active webhooks of the run's tenant
// subscribed to its type; enqueueing again adds nothing.
TEST_P(StoreContractTest, RunEventsFillTheOutboxInTheirOwnTransaction) {
    ASSERT_TRUE(store_->insert_outbound_webhook(
        make_webhook("owh_all", "acme", {"run.started", "run.completed"})));
    ASSERT_TRUE(
        store_->insert_outbound_webhook(make_webhook("owh_done", "acme", {"run.completed"})));
    ASSERT_TRUE(store_->insert_outbound_webhook(
        make_webhook("owh_paused", "acme", {"run.started"}, sub_state::paused)));
    ASSERT_TRUE(
        store_->insert_outbound_webhook(make_webhook("owh_other", "globex", {"run.started"})));
    add_subscription("sub_a");
    must_intake(make_intake("sub_a", "k", "1"));
    auto claimed = claim(t0);
    ASSERT_EQ(claimed.size(), 1u);
    ASSERT_TRUE(store_->record_attempt(delivered_record(claimed[0], 1, t0 + 10)));

    auto all = store_->list_outbound_deliveries("owh_all");
    ASSERT_TRUE(all) << all.error().message();
    ASSERT_EQ(all->size(), 1u);
    EXPECT_EQ((*all)[0].run_id, "run_1");
    EXPECT_EQ((*all)[0].event_type, "run.started");
    EXPECT_EQ((*all)[0].status, "pending");
    EXPECT_EQ((*all)[0].due_at, t0 + 10);
    const auto started_seq = (*all)[0].sequence;
    EXPECT_TRUE(store_->list_outbound_deliveries("owh_done")->empty());
    EXPECT_TRUE(store_->list_outbound_deliveries("owh_paused")->empty());
    EXPECT_TRUE(store_->list_outbound_deliveries("owh_other")->empty());

    auto done = store_->append_run_event("run_1", "run.completed", "{}", "", "evt_done", t0 + 20);
    ASSERT_TRUE(done);
    EXPECT_EQ(store_->list_outbound_deliveries("owh_all")->size(), 2u);
    auto d = store_->list_outbound_deliveries("owh_done");
    ASSERT_EQ(d->size(), 1u);
    EXPECT_EQ((*d)[0].sequence, done->sequence);
    EXPECT_EQ(*store_->enqueue_outbound("run_1", done->sequence, t0 + 30), 0);
    EXPECT_EQ(*store_->enqueue_outbound("run_1", started_seq, t0 + 30), 0);
    EXPECT_EQ(store_->outbound_next_due_at()->value_or(0), t0 + 10);

    // A run event whose append fails (unknown run) leaves no outbox row behind.
    EXPECT_FALSE(store_->append_run_event("run_nope", "run.completed", "{}", "", "evt_x", t0));
    EXPECT_EQ(store_->list_outbound_deliveries("owh_done")->size(), 1u);
}

TEST_P(StoreContractTest, OutboundClaimsHonourThePerWebhookLimitAndLeases) {
    ASSERT_TRUE(store_->insert_outbound_webhook(make_webhook("owh_a", "acme", {"run.progress"})));
    ASSERT_TRUE(store_->insert_outbound_webhook(make_webhook("owh_b", "acme", {"run.progress"})));
    add_subscription("sub_a");
    must_intake(make_intake("sub_a", "k", "1"));
    ASSERT_TRUE(store_->record_attempt(delivered_record(claim(t0)[0], 1, t0)));
    for (int i = 0; i < 4; ++i) {
        ASSERT_TRUE(store_->append_run_event("run_1", "run.progress", "{}", "",
                                             "evt_p" + std::to_string(i), t0 + 1 + i));
    }
    auto first = store_->claim_outbound_due(t0 + 100, 10, 2, 1000);
    ASSERT_TRUE(first) << first.error().message();
    ASSERT_EQ(first->size(), 4u); // two per webhook
    std::map<std::string, std::vector<std::int64_t>> by_hook;
    for (const auto& d : *first) {
        EXPECT_EQ(d.status, "in_flight");
        by_hook[d.webhook_id].push_back(d.sequence);
    }
    ASSERT_EQ(by_hook["owh_a"].size(), 2u);
    EXPECT_LT(by_hook["owh_a"][0], by_hook["owh_a"][1]); // oldest first
    EXPECT_TRUE(store_->claim_outbound_due(t0 + 200, 10, 2, 1000)->empty());

    // One settles: one more of that webhook may go.
    outbound_attempt ok;
    ok.delivery_id = (*first)[0].id;
    ok.webhook_id = (*first)[0].webhook_id;
    ok.at = t0 + 300;
    ok.status = "delivered";
    ASSERT_TRUE(store_->record_outbound_attempt(ok));
    auto more = store_->claim_outbound_due(t0 + 300, 10, 2, 1000);
    ASSERT_TRUE(more);
    ASSERT_EQ(more->size(), 1u);
    EXPECT_EQ((*more)[0].webhook_id, ok.webhook_id);
    // Leases that ran out are claimed again (at most the limit per webhook).
    auto again = store_->claim_outbound_due(t0 + 5000, 10, 2, 1000);
    ASSERT_TRUE(again);
    EXPECT_EQ(again->size(), 4u);
    auto listed = store_->list_outbound_deliveries(ok.webhook_id);
    ASSERT_TRUE(listed);
    ASSERT_EQ(listed->size(), 4u);
    EXPECT_EQ((*listed)[0].status, "delivered");
    EXPECT_EQ((*listed)[0].attempts, 1);
}

TEST_P(StoreContractTest, OutboundDeadLetterCarriesItsStateChange) {
    ASSERT_TRUE(store_->insert_outbound_webhook(make_webhook("owh_a", "acme", {"run.started"})));
    add_subscription("sub_a");
    must_intake(make_intake("sub_a", "k", "1"));
    ASSERT_TRUE(store_->record_attempt(delivered_record(claim(t0)[0], 1, t0)));
    auto claimed = store_->claim_outbound_due(t0 + 1, 10, 4, 1000);
    ASSERT_TRUE(claimed);
    ASSERT_EQ(claimed->size(), 1u);
    const auto& d = (*claimed)[0];

    outbound_attempt retry;
    retry.delivery_id = d.id;
    retry.webhook_id = d.webhook_id;
    retry.at = t0 + 2;
    retry.status = "pending";
    retry.failure = true;
    retry.next_due_at = t0 + 500;
    retry.error = "http 503";
    retry.consecutive_failures = 1;
    ASSERT_TRUE(store_->record_outbound_attempt(retry));
    EXPECT_EQ(store_->outbound_next_due_at()->value_or(0), t0 + 500);
    EXPECT_TRUE(store_->claim_outbound_due(t0 + 499, 10, 4, 1000)->empty());
    ASSERT_EQ(store_->claim_outbound_due(t0 + 500, 10, 4, 1000)->size(), 1u);

    outbound_attempt dead = retry;
    dead.at = t0 + 600;
    dead.status = "dead_lettered";
    dead.consecutive_failures = 2;
    dead.state_change =
        outbound_state_change{"owh_a", sub_state::active, sub_state::failed, "retry-exhausted",
                              t0 + 600};
    dead.dead_letter_expires_at = t0 + 7 * 24 * 3600 * 1000LL;
    ASSERT_TRUE(store_->record_outbound_attempt(dead));

    EXPECT_EQ(*store_->count_outbound_failures("owh_a", t0), 2);
    EXPECT_EQ(*store_->count_outbound_failures("owh_a", t0 + 3), 1);
    auto hook = store_->get_outbound_webhook("owh_a");
    EXPECT_EQ(hook->state, sub_state::failed);
    EXPECT_EQ(hook->consecutive_failures, 2);
    auto changes = store_->list_outbound_state_changes("owh_a");
    ASSERT_TRUE(changes);
    ASSERT_EQ(changes->size(), 1u);
    EXPECT_EQ((*changes)[0].reason, "retry-exhausted");
    auto listed = store_->list_outbound_deliveries("owh_a");
    ASSERT_EQ(listed->size(), 1u);
    EXPECT_EQ((*listed)[0].status, "dead_lettered");
    EXPECT_EQ((*listed)[0].attempts, 2);
    EXPECT_EQ((*listed)[0].last_error, "http 503");

    auto page1 = store_->list_outbound_dead_letters("owh_a", {10, {}}, t0 + 700);
    ASSERT_TRUE(page1) << page1.error().message();
    ASSERT_EQ(page1->items.size(), 1u);
    const auto& dl = page1->items[0];
    EXPECT_EQ(dl.delivery_id, d.id);
    EXPECT_EQ(dl.run_id, "run_1");
    EXPECT_EQ(dl.event_type, "run.started");
    EXPECT_EQ(dl.attempts, 2);
    EXPECT_EQ(dl.reason, "retries_exhausted");
    ASSERT_TRUE(dl.state_change);
    EXPECT_EQ(dl.state_change->to, sub_state::failed);
    EXPECT_TRUE(store_->list_outbound_dead_letters("owh_a", {10, {}}, dead.dead_letter_expires_at)
                    ->items.empty());
    EXPECT_EQ(store_->list_outbound_dead_letters("owh_a", {10, "owh_b:5"}, t0).error(),
              errc::invalid_argument);
    // Failed webhooks are not claimed.
    EXPECT_FALSE(store_->outbound_next_due_at()->has_value());
}

// ---- bulk replay jobs ----

replay_job_record make_replay_job(const std::string& id, const std::string& owner, millis lease) {
    replay_job_record j;
    j.id = id;
    j.tenant = "acme";
    j.subscription_id = "sub_rj";
    j.rate_per_second = 2.5;
    j.started_at = t0;
    j.owner = owner;
    j.lease_until = t0 + lease;
    return j;
}

// A job and its selection are stored together; progress written by its owner reads back from
// any handle, and the unsettled items are the ones a resumption still has to do.
TEST_P(StoreContractTest, ReplayJobProgressIsStoredWithItsSelection) {
    add_subscription("sub_rj");
    ASSERT_TRUE(store_->create_replay_job(make_replay_job("rpl_1", "node_a", 30000),
                                          {"evt_a", "evt_b", "evt_c"}));
    EXPECT_EQ(store_->create_replay_job(make_replay_job("rpl_1", "node_a", 30000), {}).error(),
              errc::already_exists);
    auto job = store_->get_replay_job("rpl_1");
    ASSERT_TRUE(job) << job.error().message();
    EXPECT_EQ(job->tenant, "acme");
    EXPECT_EQ(job->subscription_id, "sub_rj");
    EXPECT_EQ(job->state, "running");
    EXPECT_EQ(job->total, 3);
    EXPECT_DOUBLE_EQ(job->rate_per_second, 2.5);
    EXPECT_EQ(job->owner, "node_a");
    EXPECT_EQ(job->lease_until, t0 + 30000);
    EXPECT_EQ(store_->get_replay_job("rpl_nope").error(), errc::not_found);

    replay_job_update u;
    u.job_id = "rpl_1";
    u.owner = "node_a";
    u.lease_until = t0 + 60000;
    u.replayed = 2;
    u.delivered = 1;
    u.consecutive_failures = 0;
    u.items = {{0, "evt_a", "dlv_a", "delivered"}, {1, "evt_b", "dlv_b", "replayed"}};
    ASSERT_TRUE(store_->update_replay_job(u));
    // Another node's write (it lost the job, or never had it) changes nothing.
    auto stale = u;
    stale.owner = "node_b";
    stale.replayed = 3;
    stale.items = {{2, "evt_c", "dlv_c", "replayed"}};
    EXPECT_EQ(store_->update_replay_job(stale).error(), errc::conflict);

    open(); // a restart reads what was committed
    job = store_->get_replay_job("rpl_1");
    ASSERT_TRUE(job);
    EXPECT_EQ(job->replayed, 2);
    EXPECT_EQ(job->delivered, 1);
    EXPECT_EQ(job->lease_until, t0 + 60000);
    auto items = store_->unsettled_replay_job_items("rpl_1");
    ASSERT_TRUE(items) << items.error().message();
    ASSERT_EQ(items->size(), 2u);
    EXPECT_EQ((*items)[0].position, 1);
    EXPECT_EQ((*items)[0].delivery_id, "dlv_b");
    EXPECT_EQ((*items)[0].outcome, "replayed");
    EXPECT_EQ((*items)[1].position, 2);
    EXPECT_EQ((*items)[1].attempt_event_id, "evt_c");
    EXPECT_EQ((*items)[1].outcome, "selected");

    // Finished: no longer writable, purged at its expiry (items with it).
    u.state = "completed";
    u.finished_at = t0 + 1000;
    u.expires_at = t0 + 2000;
    u.items = {{1, "evt_b", "dlv_b", "delivered"}, {2, "evt_c", "", "failed"}};
    ASSERT_TRUE(store_->update_replay_job(u));
    EXPECT_EQ(store_->update_replay_job(u).error(), errc::conflict);
    EXPECT_EQ(store_->get_replay_job("rpl_1")->state, "completed");
    EXPECT_TRUE(store_->unsettled_replay_job_items("rpl_1")->empty());
    ASSERT_TRUE(store_->purge_expired(t0 + 1999));
    EXPECT_TRUE(store_->get_replay_job("rpl_1"));
    ASSERT_TRUE(store_->purge_expired(t0 + 2000));
    EXPECT_EQ(store_->get_replay_job("rpl_1").error(), errc::not_found);
}

// Only running jobs whose lease ran out are claimed, each by one claimer; a released lease is
// claimable at once; a deleted subscription takes its jobs.
TEST_P(StoreContractTest, ReplayJobsAreClaimedOnlyOnceTheirLeaseRanOutOrWasReleased) {
    add_subscription("sub_rj");
    ASSERT_TRUE(store_->create_replay_job(make_replay_job("rpl_live", "node_a", 30000), {"e1"}));
    ASSERT_TRUE(store_->create_replay_job(make_replay_job("rpl_dead", "node_b", 5000), {"e2"}));
    auto none = store_->claim_replay_jobs("node_c", t0 + 4999, 30000);
    ASSERT_TRUE(none) << none.error().message();
    EXPECT_TRUE(none->empty());

    auto got = store_->claim_replay_jobs("node_c", t0 + 5000, 30000);
    ASSERT_TRUE(got);
    ASSERT_EQ(got->size(), 1u);
    EXPECT_EQ((*got)[0].id, "rpl_dead");
    EXPECT_EQ((*got)[0].owner, "node_c");
    EXPECT_EQ((*got)[0].lease_until, t0 + 35000);
    EXPECT_TRUE(store_->claim_replay_jobs("node_d", t0 + 5000, 30000)->empty());
    // node_b lost it: its late progress is refused.
    replay_job_update late;
    late.job_id = "rpl_dead";
    late.owner = "node_b";
    EXPECT_EQ(store_->update_replay_job(late).error(), errc::conflict);

    EXPECT_EQ(store_->release_replay_jobs("node_a").value(), 1);
    got = store_->claim_replay_jobs("node_d", t0 + 6000, 30000);
    ASSERT_TRUE(got);
    ASSERT_EQ(got->size(), 1u);
    EXPECT_EQ((*got)[0].id, "rpl_live");

    ASSERT_TRUE(store_->delete_subscription("sub_rj"));
    EXPECT_EQ(store_->get_replay_job("rpl_live").error(), errc::not_found);
    EXPECT_TRUE(store_->claim_replay_jobs("node_e", t0 + 999999, 30000)->empty());
}

// The operator views' reads: the run listing (newest first, (created_at, id) descending, filters,
// position) and the replay lookup by dedup key.
TEST_P(StoreContractTest, RunsListNewestFirstWithFiltersAndReplaysByDedupKey) {
    add_subscription("sub_a");
    add_subscription("sub_b");
    must_intake(make_intake("sub_a", "k1", "1", t0));
    must_intake(make_intake("sub_a", "replay:evt_dead", "2", t0 + 1));
    must_intake(make_intake("sub_b", "k3", "3", t0 + 2));
    auto claimed = claim(t0 + 10);
    ASSERT_EQ(claimed.size(), 3u);
    for (const auto& d : claimed) {
        // run_2 and run_3 are created in the same millisecond: the id breaks the tie.
        const millis at = d.id == "dlv_1" ? t0 + 20 : t0 + 30;
        ASSERT_TRUE(store_->record_attempt(delivered_record(d, 1, at)));
    }
    auto list = [&](const run_query& q) {
        std::vector<std::string> out;
        auto r = store_->list_runs(q);
        EXPECT_TRUE(r) << r.error().message();
        for (const auto& run : r ? *r : std::vector<run_record>{}) {
            out.push_back(run.id);
        }
        return out;
    };
    run_query q;
    q.tenant = "acme";
    EXPECT_THAT(list(q), ElementsAre("run_3", "run_2", "run_1"));
    auto all = store_->list_runs(q);
    ASSERT_TRUE(all);
    EXPECT_EQ((*all)[1].replay_of_attempt_event_id, "evt_dead");
    EXPECT_EQ((*all)[0].replay_of_attempt_event_id, "");
    EXPECT_EQ((*all)[1].workflow_id, "wf_orders");
    EXPECT_EQ((*all)[1].created_at, t0 + 30);

    run_query page = q;
    page.limit = 1;
    page.before = run_position{t0 + 30, "run_3"};
    EXPECT_THAT(list(page), ElementsAre("run_2"));
    page.before = run_position{t0 + 30, "run_2"};
    EXPECT_THAT(list(page), ElementsAre("run_1"));
    page.before = run_position{t0 + 20, "run_1"};
    EXPECT_TRUE(list(page).empty());

    run_query f = q;
    f.subscription_id = "sub_a";
    EXPECT_THAT(list(f), ElementsAre("run_2", "run_1"));
    f = q;
    f.status = run_status::completed;
    EXPECT_TRUE(list(f).empty());
    f.status = run_status::running;
    EXPECT_EQ(list(f).size(), 3u);
    f = q;
    f.created_from = t0 + 25;
    EXPECT_THAT(list(f), ElementsAre("run_3", "run_2"));
    f = q;
    f.created_to = t0 + 25;
    EXPECT_THAT(list(f), ElementsAre("run_1"));
    f = q;
    f.workflow_id = "wf_other";
    EXPECT_TRUE(list(f).empty());
    f = q;
    f.tenant = "globex";
    EXPECT_TRUE(list(f).empty());

    auto found = store_->deliveries_by_dedup_key("sub_a", {"replay:evt_dead", "replay:evt_none"});
    ASSERT_TRUE(found) << found.error().message();
    ASSERT_EQ(found->size(), 1u);
    EXPECT_EQ(found->at("replay:evt_dead").id, "dlv_2");
    EXPECT_EQ(found->at("replay:evt_dead").run_id, "run_2");
    EXPECT_EQ(found->at("replay:evt_dead").status, delivery_status::delivered);
    auto other = store_->deliveries_by_dedup_key("sub_b", {"replay:evt_dead"});
    ASSERT_TRUE(other);
    EXPECT_TRUE(other->empty());
}

} // namespace
} // namespace wopbridge::store_contract
