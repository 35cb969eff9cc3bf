// The store contract: claims, attempts, state changes and refusals.
#include "unit/store/store_contract.hpp"

namespace wopbridge::store_contract {
namespace {

using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

TEST_P(StoreContractTest, ClaimDueRespectsSubscriptionState) {
    add_subscription("sub_active");
    add_subscription("sub_paused", sub_state::paused);
    add_subscription("sub_dead", sub_state::dead_lettered);
    auto failed = make_subscription("sub_failed", sub_state::failed);
    failed.next_probe_at = t0 + 5000;
    ASSERT_TRUE(store_->insert_subscription(failed));
    for (const auto* sub : {"sub_active", "sub_paused", "sub_dead", "sub_failed"}) {
        for (int i = 0; i < 2; ++i) {
            std::string suffix = std::string(sub) + "_" + std::to_string(i);
            must_intake(make_intake(sub, "k" + std::to_string(i), suffix, t0 + i));
        }
    }
    auto first = claim(t0 + 10);
    EXPECT_THAT(ids(first), ElementsAre("dlv_sub_active_0", "dlv_sub_active_1"));
    for (const auto& d : first) {
        EXPECT_EQ(d.status, delivery_status::in_flight);
        EXPECT_EQ(d.attempts, 0);
    }
    // Past the probe time: exactly one probe of the failed subscription, never paused/dead ones.
    EXPECT_THAT(ids(claim(t0 + 5000)), ElementsAre("dlv_sub_failed_0"));
    EXPECT_TRUE(claim(t0 + 5001).empty()); // the probe is in flight
    EXPECT_EQ(store_->get_delivery("dlv_sub_paused_0")->status, delivery_status::pending);
    EXPECT_EQ(store_->get_delivery("dlv_sub_dead_1")->status, delivery_status::pending);
}

TEST_P(StoreContractTest, ExpiredLeaseIsReclaimed) {
    add_subscription("sub_a");
    must_intake(make_intake("sub_a", "k", "1"));
    ASSERT_EQ(claim(t0, 10, 1000).size(), 1u);
    EXPECT_TRUE(claim(t0 + 999).empty());
    auto again = claim(t0 + 1000);
    ASSERT_EQ(again.size(), 1u);
    EXPECT_EQ(again[0].id, "dlv_1");
    EXPECT_EQ(again[0].attempts, 0);
}

TEST_P(StoreContractTest, NextDueAtIgnoresUnclaimableDeliveries) {
    add_subscription("sub_a");
    add_subscription("sub_p", sub_state::paused);
    EXPECT_FALSE(store_->next_due_at()->has_value());
    must_intake(make_intake("sub_p", "k", "p", t0));
    EXPECT_FALSE(store_->next_due_at()->has_value());
    must_intake(make_intake("sub_a", "k", "a", t0 + 50));
    EXPECT_EQ(store_->next_due_at()->value_or(0), t0 + 50);
}

TEST_P(StoreContractTest, NextDueAtTakesEachSubscriptionsEarliestPendingDelivery) {
    add_subscription("sub_a");
    add_subscription("sub_b");
    // Out of arrival order: the earliest due time wins, not the first or last row.
    must_intake(make_intake("sub_a", "k1", "a1", t0 + 300));
    must_intake(make_intake("sub_a", "k2", "a2", t0 + 100));
    must_intake(make_intake("sub_b", "k1", "b1", t0 + 200));
    EXPECT_EQ(store_->next_due_at()->value_or(0), t0 + 100);
    // Claiming a2 leaves the lease (t0 + 100 + 1000) and the other pending rows.
    EXPECT_THAT(ids(claim(t0 + 100, 1, 1000)), ElementsAre("dlv_a2"));
    EXPECT_EQ(store_->next_due_at()->value_or(0), t0 + 200);
    EXPECT_THAT(ids(claim(t0 + 300, 10, 1000)), ElementsAre("dlv_b1", "dlv_a1"));
    // Only leases are left: the earliest expiry is the next due time.
    EXPECT_EQ(store_->next_due_at()->value_or(0), t0 + 1100);
}

TEST_P(StoreContractTest, NextDueAtWaitsForProbeTimeAndInFlightProbe) {
    auto failed = make_subscription("sub_f", sub_state::failed);
    failed.next_probe_at = t0 + 5000;
    ASSERT_TRUE(store_->insert_subscription(failed));
    add_subscription("sub_p", sub_state::paused);
    must_intake(make_intake("sub_p", "k", "p", t0));
    must_intake(make_intake("sub_f", "k1", "f1", t0));
    must_intake(make_intake("sub_f", "k2", "f2", t0 + 10));
    // Pending since t0, but a failed subscription is only probed at its probe time.
    EXPECT_EQ(store_->next_due_at()->value_or(0), t0 + 5000);
    EXPECT_TRUE(claim(t0 + 4999).empty());
    EXPECT_THAT(ids(claim(t0 + 5000, 10, 1000)), ElementsAre("dlv_f1"));
    // The probe is in flight: the next pending row waits, only the probe's lease counts.
    EXPECT_EQ(store_->next_due_at()->value_or(0), t0 + 6000);
    EXPECT_TRUE(claim(t0 + 5999).empty());
    // The lease ran out: the expired probe is the one taken again, still one at a time.
    EXPECT_THAT(ids(claim(t0 + 6000, 10, 1000)), ElementsAre("dlv_f1"));
}

TEST_P(StoreContractTest, NextDueAtOfFailedSubscriptionIsItsLaterPendingDueTime) {
    auto failed = make_subscription("sub_f", sub_state::failed);
    failed.next_probe_at = t0 + 5000;
    ASSERT_TRUE(store_->insert_subscription(failed));
    must_intake(make_intake("sub_f", "k1", "f1", t0 + 7000));
    EXPECT_EQ(store_->next_due_at()->value_or(0), t0 + 7000);
    EXPECT_TRUE(claim(t0 + 6999).empty());
    EXPECT_THAT(ids(claim(t0 + 7000)), ElementsAre("dlv_f1"));
}

TEST_P(StoreContractTest, ClaimDueTakesTheOldestAcrossSubscriptionsUpToTheLimit) {
    add_subscription("sub_a");
    add_subscription("sub_b");
    add_subscription("sub_c");
    for (int i = 0; i < 5; ++i) {
        auto n = std::to_string(i);
        must_intake(make_intake("sub_a", "k" + n, "a" + n, t0 + 10 * i));
        must_intake(make_intake("sub_b", "k" + n, "b" + n, t0 + 10 * i + 5));
    }
    must_intake(make_intake("sub_c", "k", "c", t0 + 1000)); // not yet due
    EXPECT_THAT(ids(claim(t0 + 500, 3)), ElementsAre("dlv_a0", "dlv_b0", "dlv_a1"));
    EXPECT_THAT(ids(claim(t0 + 500, 4)), ElementsAre("dlv_b1", "dlv_a2", "dlv_b2", "dlv_a3"));
    EXPECT_THAT(ids(claim(t0 + 500)), ElementsAre("dlv_b3", "dlv_a4", "dlv_b4"));
    EXPECT_THAT(ids(claim(t0 + 1000)), ElementsAre("dlv_c"));
}

TEST_P(StoreContractTest, ClaimDueTakesTurnsAcrossSubscriptions) {
    // A backlog of older due rows in one subscription does not take every slot: each claim gives
    // every subscription its oldest due row before any gets its second.
    add_subscription("sub_noisy");
    add_subscription("sub_quiet");
    for (int i = 0; i < 6; ++i) {
        auto n = std::to_string(i);
        must_intake(make_intake("sub_noisy", "k" + n, "n" + n, t0 + i));
    }
    must_intake(make_intake("sub_quiet", "k0", "q0", t0 + 100));
    must_intake(make_intake("sub_quiet", "k1", "q1", t0 + 101));
    EXPECT_THAT(ids(claim(t0 + 500, 3)), UnorderedElementsAre("dlv_n0", "dlv_q0", "dlv_n1"));
    EXPECT_THAT(ids(claim(t0 + 500, 2)), UnorderedElementsAre("dlv_n2", "dlv_q1"));
    EXPECT_THAT(ids(claim(t0 + 500)), UnorderedElementsAre("dlv_n3", "dlv_n4", "dlv_n5"));
}

TEST_P(StoreContractTest, DeliveredAttemptStartsTheRunLog) {
    add_subscription("sub_a");
    must_intake(make_intake("sub_a", "k", "1"));
    auto claimed = claim(t0);
    ASSERT_EQ(claimed.size(), 1u);
    auto rec = delivered_record(claimed[0], 1, t0 + 10);
    rec.extra_run_events = {{"run.completed", R"({"exitCode":0})"}};
    ASSERT_TRUE(store_->record_attempt(rec));

    auto events = store_->run_events_after("run_1", -1, 100);
    ASSERT_TRUE(events);
    ASSERT_EQ(events->size(), 3u);
    const auto& attempted = (*events)[0];
    EXPECT_EQ(attempted.sequence, 0);
    EXPECT_EQ(attempted.type, "trigger.delivery.attempted");
    EXPECT_EQ(attempted.event_id, rec.attempt_event_id);
    EXPECT_EQ(json(attempted.payload_json),
              json(R"({"subscriptionId":"sub_a","dedupKey":"k","attempt":1,)"
                   R"("outcome":"delivered","runId":"run_1"})"));
    const auto& started = (*events)[1];
    EXPECT_EQ(started.sequence, 1);
    EXPECT_EQ(started.type, "run.started");
    EXPECT_EQ(started.event_id, "evt_start_dlv_1");
    EXPECT_EQ(started.causation_id, rec.attempt_event_id);
    EXPECT_EQ(started.run_id, "run_1");
    EXPECT_EQ((*events)[2].sequence, 2);
    EXPECT_EQ((*events)[2].type, "run.completed");
    EXPECT_EQ((*events)[2].event_id, "evt_start_dlv_1.1"); // derived id (no explicit one given)

    EXPECT_EQ(store_->get_delivery("dlv_1")->status, delivery_status::delivered);
    EXPECT_EQ(store_->get_run("run_1")->status, run_status::running);
    EXPECT_TRUE(store_->subscription_events("sub_a")->empty());
    // The delivery is settled: a second record (e.g. from a claimer whose lease expired) conflicts.
    EXPECT_EQ(store_->record_attempt(rec).error(), errc::conflict);
    // Duplicates now point at the started run.
    EXPECT_EQ(must_intake(make_intake("sub_a", "k", "2")).run_id, "run_1");
}

TEST_P(StoreContractTest, RetryingAttemptSurvivesRestart) {
    add_subscription("sub_a");
    must_intake(make_intake("sub_a", "k", "1"));
    auto claimed = claim(t0);
    ASSERT_EQ(claimed.size(), 1u);
    auto rec = base_record(claimed[0], 1, attempt_outcome::retrying, t0 + 10);
    rec.next_due_at = t0 + 5000;
    rec.error = "upstream 503";
    rec.consecutive_failures = 1;
    ASSERT_TRUE(store_->record_attempt(rec));

    open(); // restart: a fresh store over the same file
    auto d = store_->get_delivery("dlv_1");
    ASSERT_TRUE(d);
    EXPECT_EQ(d->status, delivery_status::pending);
    EXPECT_EQ(d->attempts, 1);
    EXPECT_EQ(d->due_at, t0 + 5000);
    EXPECT_EQ(d->last_error, "upstream 503");
    EXPECT_EQ(store_->get_subscription("sub_a")->consecutive_failures, 1);
    auto events = store_->subscription_events("sub_a");
    ASSERT_TRUE(events);
    ASSERT_EQ(events->size(), 1u);
    EXPECT_EQ(json((*events)[0].payload_json),
              json(R"({"subscriptionId":"sub_a","dedupKey":"k","attempt":1,)"
                   R"("outcome":"retrying"})"));
    EXPECT_TRUE(claim(t0 + 4999).empty());
    auto retry = claim(t0 + 5000);
    ASSERT_EQ(retry.size(), 1u);
    EXPECT_EQ(retry[0].attempts, 1);
}

TEST_P(StoreContractTest, DeadLetteredAttemptWritesDeadLetterAndStateChange) {
    add_subscription("sub_a");
    must_intake(make_intake("sub_a", "k", "1"));
    auto claimed = claim(t0);
    ASSERT_EQ(claimed.size(), 1u);
    auto rec = base_record(claimed[0], 8, attempt_outcome::dead_lettered, t0 + 10);
    rec.error = "upstream 500";
    rec.state_change_caused = state_change{"sub_a", source_kind::webhook, sub_state::active,
                                           sub_state::dead_lettered, state_reason::retry_exhausted};
    rec.state_change_event_id = "evt_sc_1";
    rec.dead_letter_expires_at = t0 + 1000000;
    ASSERT_TRUE(store_->record_attempt(rec));

    EXPECT_EQ(store_->get_subscription("sub_a")->state, sub_state::dead_lettered);
    EXPECT_EQ(store_->get_delivery("dlv_1")->status, delivery_status::dead_lettered);
    auto events = store_->subscription_events("sub_a");
    ASSERT_TRUE(events);
    ASSERT_EQ(events->size(), 2u);
    EXPECT_EQ((*events)[0].sequence, 0);
    EXPECT_EQ((*events)[0].event_id, rec.attempt_event_id);
    EXPECT_EQ(json((*events)[0].payload_json),
              json(R"({"subscriptionId":"sub_a","dedupKey":"k","attempt":8,)"
                   R"("outcome":"dead-lettered"})"));
    EXPECT_EQ((*events)[1].sequence, 1);
    EXPECT_EQ((*events)[1].type, "trigger.subscription.state.changed");
    EXPECT_EQ((*events)[1].event_id, "evt_sc_1");
    EXPECT_EQ(json((*events)[1].payload_json),
              json(R"({"subscriptionId":"sub_a","source":"webhook","fromState":"active",)"
                   R"("toState":"dead-lettered","reason":"retry-exhausted"})"));

    auto letters = store_->list_dead_letters("sub_a", {}, t0 + 20);
    ASSERT_TRUE(letters);
    ASSERT_EQ(letters->items.size(), 1u);
    const auto& dl = letters->items[0];
    EXPECT_EQ(dl.reason, dead_letter_reason::retries_exhausted);
    EXPECT_EQ(dl.attempt_event_id, rec.attempt_event_id);
    EXPECT_EQ(dl.attempt.attempt, 8);
    EXPECT_EQ(dl.attempt.outcome, attempt_outcome::dead_lettered);
    EXPECT_EQ(dl.delivery_id, "dlv_1");
    EXPECT_EQ(dl.expires_at, t0 + 1000000);
    ASSERT_TRUE(dl.caused_state_change);
    EXPECT_EQ(dl.caused_state_change->to, sub_state::dead_lettered);
    EXPECT_EQ(dl.caused_state_change->reason, state_reason::retry_exhausted);
}

// A subscription read (and cached) before an attempt is read afresh when the attempt changed its
// row, and stays as it was when the attempt changed nothing there.
TEST_P(StoreContractTest, ASubscriptionReadAfterAnAttemptShowsWhatTheAttemptChanged) {
    add_subscription("sub_a");
    for (int i = 1; i <= 3; ++i) {
        must_intake(make_intake("sub_a", "k" + std::to_string(i), std::to_string(i)));
    }
    ASSERT_EQ(store_->get_subscription("sub_a")->consecutive_failures, 0);
    auto claimed = claim(t0);
    ASSERT_EQ(claimed.size(), 3u);
    auto failed = base_record(claimed[0], 1, attempt_outcome::retrying, t0 + 10);
    failed.next_due_at = t0 + 5000;
    failed.error = "upstream 503";
    failed.consecutive_failures = 1;
    failed.next_probe_at = t0 + 900;
    ASSERT_TRUE(store_->record_attempt(failed));
    auto after_failure = store_->get_subscription("sub_a");
    ASSERT_TRUE(after_failure);
    EXPECT_EQ(after_failure->consecutive_failures, 1);
    EXPECT_EQ(after_failure->next_probe_at, t0 + 900);

    auto again = base_record(claimed[1], 1, attempt_outcome::retrying, t0 + 20);
    again.next_due_at = t0 + 5000;
    again.consecutive_failures = 1; // unchanged
    again.next_probe_at = t0 + 900;
    ASSERT_TRUE(store_->record_attempt(again));
    EXPECT_EQ(store_->get_subscription("sub_a")->consecutive_failures, 1);

    auto recovered = base_record(claimed[2], 1, attempt_outcome::retrying, t0 + 30);
    recovered.next_due_at = t0 + 5000;
    recovered.consecutive_failures = 0;
    recovered.next_probe_at = 0;
    ASSERT_TRUE(store_->record_attempt(recovered));
    EXPECT_EQ(store_->get_subscription("sub_a")->consecutive_failures, 0);
    EXPECT_EQ(store_->get_subscription("sub_a")->next_probe_at, 0);
}

TEST_P(StoreContractTest, StateChangeConflictInAttemptRollsBackEverything) {
    add_subscription("sub_a");
    must_intake(make_intake("sub_a", "k", "1"));
    auto claimed = claim(t0);
    ASSERT_EQ(claimed.size(), 1u);
    auto rec = base_record(claimed[0], 8, attempt_outcome::dead_lettered, t0 + 10);
    rec.consecutive_failures = 8;
    rec.state_change_caused = state_change{"sub_a", source_kind::webhook, sub_state::paused,
                                           sub_state::dead_lettered, state_reason::retry_exhausted};
    rec.state_change_event_id = "evt_sc_1";
    rec.dead_letter_expires_at = t0 + 1000000;
    EXPECT_EQ(store_->record_attempt(rec).error(), errc::conflict);

    EXPECT_EQ(store_->get_delivery("dlv_1")->status, delivery_status::in_flight);
    EXPECT_EQ(store_->get_subscription("sub_a")->state, sub_state::active);
    EXPECT_EQ(store_->get_subscription("sub_a")->consecutive_failures, 0);
    EXPECT_TRUE(store_->subscription_events("sub_a")->empty());
    EXPECT_TRUE(store_->list_dead_letters("sub_a", {}, t0)->items.empty());
}

TEST_P(StoreContractTest, RecordAttemptsCommitsABatchAndIsolatesAFailingRecord) {
    add_subscription("sub_a");
    add_subscription("sub_b");
    for (int i = 1; i <= 4; ++i) {
        must_intake(make_intake(i % 2 ? "sub_a" : "sub_b", "k" + std::to_string(i),
                                std::to_string(i)));
    }
    auto claimed = claim(t0);
    ASSERT_EQ(claimed.size(), 4u);
    std::map<std::string, delivery> by_id;
    for (const auto& d : claimed) {
        by_id[d.id] = d;
    }
    // dlv_2 is settled first (as by a claimer whose lease expired): its batched record conflicts.
    ASSERT_TRUE(store_->record_attempt(delivered_record(by_id["dlv_2"], 1, t0 + 5)));
    const auto commits_before = store_->stats().commits;

    auto retrying = base_record(by_id["dlv_3"], 1, attempt_outcome::retrying, t0 + 10);
    retrying.next_due_at = t0 + 5000;
    retrying.consecutive_failures = 1;
    retrying.error = "upstream 503";
    std::vector<attempt_record> batch{delivered_record(by_id["dlv_1"], 1, t0 + 10),
                                      delivered_record(by_id["dlv_2"], 1, t0 + 10), retrying,
                                      delivered_record(by_id["dlv_4"], 1, t0 + 10)};
    auto out = store_->record_attempts(batch);
    ASSERT_EQ(out.size(), 4u);
    EXPECT_TRUE(out[0]);
    EXPECT_EQ(out[1].error(), errc::conflict);
    EXPECT_TRUE(out[2]);
    EXPECT_TRUE(out[3]);
    EXPECT_GT(store_->stats().commits, commits_before);

    for (const char* run : {"run_1", "run_4"}) {
        auto events = store_->run_events_after(run, -1, 100);
        ASSERT_TRUE(events) << run;
        ASSERT_EQ(events->size(), 2u) << run;
        EXPECT_EQ((*events)[0].sequence, 0);
        EXPECT_EQ((*events)[0].type, "trigger.delivery.attempted");
        EXPECT_EQ((*events)[1].sequence, 1);
        EXPECT_EQ((*events)[1].type, "run.started");
        EXPECT_EQ((*events)[1].causation_id, (*events)[0].event_id);
    }
    EXPECT_EQ(store_->get_delivery("dlv_1")->status, delivery_status::delivered);
    EXPECT_EQ(store_->get_delivery("dlv_4")->status, delivery_status::delivered);
    auto d3 = store_->get_delivery("dlv_3");
    EXPECT_EQ(d3->status, delivery_status::pending);
    EXPECT_EQ(d3->due_at, t0 + 5000);
    EXPECT_EQ(store_->get_subscription("sub_a")->consecutive_failures, 1);
    // The conflicting record changed nothing: dlv_2's run still has only its first two events.
    EXPECT_EQ(store_->run_events_after("run_2", -1, 100)->size(), 2u);
}

// A batch of delivered attempts only (PostgreSQL settles it in one statement): every run, its
// events in order, the breaker where it moved; a record that conflicts leaves the rest standing.
TEST_P(StoreContractTest, RecordAttemptsOfDeliveredAttemptsStartsEveryRunInOrder) {
    add_subscription("sub_a");
    add_subscription("sub_b");
    for (int i = 1; i <= 4; ++i) {
        must_intake(make_intake(i % 2 ? "sub_a" : "sub_b", "k" + std::to_string(i),
                                std::to_string(i)));
    }
    auto claimed = claim(t0);
    ASSERT_EQ(claimed.size(), 4u);
    std::map<std::string, delivery> by_id;
    for (const auto& d : claimed) {
        by_id[d.id] = d;
    }
    std::vector<attempt_record> batch;
    for (const char* id : {"dlv_1", "dlv_2", "dlv_3", "dlv_4"}) {
        batch.push_back(delivered_record(by_id[id], 1, t0 + 10));
    }
    batch[2].extra_run_events = {{"run.completed", R"({"exitCode":0})"}};
    batch[3].consecutive_failures = 2; // sub_b's breaker moves; sub_a's does not
    batch[3].next_probe_at = t0 + 700;
    auto out = store_->record_attempts(batch);
    ASSERT_EQ(out.size(), 4u);
    for (const auto& r : out) {
        EXPECT_TRUE(r);
    }
    for (int i = 1; i <= 4; ++i) {
        const std::string run = "run_" + std::to_string(i);
        auto events = store_->run_events_after(run, -1, 100);
        ASSERT_TRUE(events) << run;
        ASSERT_EQ(events->size(), i == 3 ? 3u : 2u) << run;
        EXPECT_EQ((*events)[0].sequence, 0);
        EXPECT_EQ((*events)[0].type, "trigger.delivery.attempted");
        EXPECT_EQ((*events)[0].event_id, batch[i - 1].attempt_event_id);
        EXPECT_EQ((*events)[1].type, "run.started");
        EXPECT_EQ((*events)[1].causation_id, (*events)[0].event_id);
        EXPECT_EQ(store_->get_delivery("dlv_" + std::to_string(i))->status,
                  delivery_status::delivered);
        EXPECT_EQ(store_->get_run(run)->subscription_id, i % 2 ? "sub_a" : "sub_b");
    }
    EXPECT_EQ(store_->run_events_after("run_3", -1, 100)->at(2).type, "run.completed");
    EXPECT_EQ(store_->get_subscription("sub_a")->consecutive_failures, 0);
    EXPECT_EQ(store_->get_subscription("sub_b")->consecutive_failures, 2);
    EXPECT_EQ(store_->get_subscription("sub_b")->next_probe_at, t0 + 700);

    // Settled twice: the second batch conflicts record by record and writes nothing.
    must_intake(make_intake("sub_a", "k5", "5"));
    auto fifth = claim(t0 + 20);
    ASSERT_EQ(fifth.size(), 1u);
    auto again = store_->record_attempts(
        {delivered_record(by_id["dlv_1"], 1, t0 + 30), delivered_record(fifth[0], 1, t0 + 30)});
    ASSERT_EQ(again.size(), 2u);
    EXPECT_EQ(again[0].error(), errc::conflict);
    EXPECT_TRUE(again[1]);
    EXPECT_EQ(store_->run_events_after("run_1", -1, 100)->size(), 2u);
    EXPECT_EQ(store_->run_events_after("run_5", -1, 100)->size(), 2u);
}

// Each write is read back after a read that may have been served from memory (SQLite caches
// subscriptions): no write may leave an older copy visible.
TEST_P(StoreContractTest, EveryWriteOfASubscriptionIsSeenByTheNextRead) {
    add_subscription("sub_a");
    EXPECT_EQ(store_->get_subscription("sub_a")->state, sub_state::active);
    ASSERT_TRUE(store_->change_state(
        {"sub_a", source_kind::webhook, sub_state::active, sub_state::paused, state_reason::none},
        "evt_sc_1", t0 + 1));
    EXPECT_EQ(store_->get_subscription("sub_a")->state, sub_state::paused);
    ASSERT_TRUE(store_->change_state(
        {"sub_a", source_kind::webhook, sub_state::paused, sub_state::active, state_reason::none},
        "evt_sc_2", t0 + 2));
    EXPECT_EQ(store_->get_subscription("sub_a")->state, sub_state::active);

    auto changed = make_subscription("sub_a");
    changed.workflow_id = "wf_other";
    ASSERT_TRUE(store_->upsert_config_subscription(changed));
    EXPECT_EQ(store_->get_subscription("sub_a")->workflow_id, "wf_other");

    must_intake(make_intake("sub_a", "k", "1"));
    auto claimed = claim(t0);
    ASSERT_EQ(claimed.size(), 1u);
    EXPECT_EQ(store_->get_subscription("sub_a")->consecutive_failures, 0);
    auto rec = base_record(claimed[0], 1, attempt_outcome::retrying, t0 + 10);
    rec.next_due_at = t0 + 1000;
    rec.consecutive_failures = 3;
    rec.next_probe_at = t0 + 99;
    ASSERT_TRUE(store_->record_attempts({rec})[0]);
    EXPECT_EQ(store_->get_subscription("sub_a")->consecutive_failures, 3);
    EXPECT_EQ(store_->get_subscription("sub_a")->next_probe_at, t0 + 99);

    ASSERT_TRUE(store_->delete_subscription("sub_a"));
    EXPECT_EQ(store_->get_subscription("sub_a").error(), errc::not_found);
    add_subscription("sub_a");
    EXPECT_EQ(store_->get_subscription("sub_a")->workflow_id, "wf_orders");
}

TEST_P(StoreContractTest, ClaimsHonourEachSubscriptionsMaxConcurrency) {
    auto bounded = make_subscription("sub_one");
    bounded.max_concurrency = 2;
    ASSERT_TRUE(store_->insert_subscription(bounded));
    EXPECT_EQ(store_->get_subscription("sub_one")->max_concurrency, 2);
    add_subscription("sub_free");
    for (int i = 0; i < 5; ++i) {
        must_intake(make_intake("sub_one", "b" + std::to_string(i), "b" + std::to_string(i),
                                t0 + i));
        must_intake(make_intake("sub_free", "f" + std::to_string(i), "f" + std::to_string(i),
                                t0 + i));
    }
    auto first = claim(t0 + 10, 100, 1000);
    std::vector<std::string> bounded_ids;
    int free_count = 0;
    for (const auto& d : first) {
        if (d.subscription_id == "sub_one") {
            bounded_ids.push_back(d.id);
        } else {
            ++free_count;
        }
    }
    // The two oldest of the bounded subscription, everything of the other one.
    EXPECT_EQ(bounded_ids, (std::vector<std::string>{"dlv_b0", "dlv_b1"}));
    EXPECT_EQ(free_count, 5);
    EXPECT_TRUE(claim(t0 + 20, 100, 1000).empty()); // both slots still leased
    std::map<std::string, delivery> by_id;
    for (const auto& d : first) {
        by_id[d.id] = d;
    }
    ASSERT_TRUE(store_->record_attempt(delivered_record(by_id["dlv_b0"], 1, t0 + 30)));
    EXPECT_EQ(ids(claim(t0 + 40, 100, 1000)), (std::vector<std::string>{"dlv_b2"}));
    // An expired lease frees its slot: dlv_b1 (claimed at t0 + 10) is claimable again at t0 + 1010,
    // and with dlv_b2's lease expired too, the two slots go to the two oldest (expired leases and
    // pending rows alike count against the bound).
    std::vector<std::string> again;
    for (const auto& d : claim(t0 + 2000, 100, 1000)) {
        if (d.subscription_id == "sub_one") {
            again.push_back(d.id);
        }
    }
    EXPECT_EQ(again, (std::vector<std::string>{"dlv_b1", "dlv_b2"}));
}

TEST_P(StoreContractTest, BatchedContentsReadEveryDeliveryAndSkipUnknownIds) {
    add_subscription("sub_a");
    must_intake(make_intake("sub_a", "k1", "1"));
    must_intake(make_intake("sub_a", "k2", "2"));
    auto contents = store_->delivery_contents({"dlv_1", "dlv_nope", "dlv_2"});
    ASSERT_TRUE(contents) << contents.error().message();
    ASSERT_EQ(contents->size(), 2u);
    EXPECT_EQ(contents->at("dlv_1"), R"({"body":"secret content 1"})");
    EXPECT_EQ(contents->at("dlv_2"), R"({"body":"secret content 2"})");
}

TEST_P(StoreContractTest, ChangeStateIsCompareAndSet) {
    add_subscription("sub_a");
    state_change wrong{"sub_a", source_kind::webhook, sub_state::paused, sub_state::active,
                       state_reason::none};
    EXPECT_EQ(store_->change_state(wrong, "evt_1", t0).error(), errc::conflict);
    EXPECT_TRUE(store_->subscription_events("sub_a")->empty());

    state_change pause{"sub_a", source_kind::webhook, sub_state::active, sub_state::paused,
                       state_reason::operator_paused};
    ASSERT_TRUE(store_->change_state(pause, "evt_2", t0 + 1));
    EXPECT_EQ(store_->get_subscription("sub_a")->state, sub_state::paused);
    auto events = store_->subscription_events("sub_a");
    ASSERT_EQ(events->size(), 1u);
    EXPECT_EQ(json((*events)[0].payload_json),
              json(R"({"subscriptionId":"sub_a","source":"webhook","fromState":"active",)"
                   R"("toState":"paused","reason":"operator-paused"})"));

    pause.subscription_id = "sub_missing";
    EXPECT_EQ(store_->change_state(pause, "evt_3", t0).error(), errc::not_found);
}

TEST_P(StoreContractTest, VerificationRefusalLeavesStateAlone) {
    add_subscription("sub_a");
    ASSERT_TRUE(
        store_->record_verification_refusal({"sub_a", "wh-msg-1", "evt_ref_1", t0, t0 + 1000}));
    EXPECT_EQ(store_->get_subscription("sub_a")->state, sub_state::active);
    auto letters = store_->list_dead_letters("sub_a", {}, t0);
    ASSERT_TRUE(letters);
    ASSERT_EQ(letters->items.size(), 1u);
    EXPECT_EQ(letters->items[0].reason, dead_letter_reason::verification_failed);
    EXPECT_FALSE(letters->items[0].caused_state_change);
    EXPECT_TRUE(letters->items[0].delivery_id.empty());
    auto events = store_->subscription_events("sub_a");
    ASSERT_EQ(events->size(), 1u);
    EXPECT_EQ((*events)[0].event_id, "evt_ref_1");
    EXPECT_EQ(json((*events)[0].payload_json),
              json(R"({"subscriptionId":"sub_a","dedupKey":"wh-msg-1","attempt":1,)"
                   R"("outcome":"dead-lettered"})"));
}

} // namespace
} // namespace wopbridge::store_contract
