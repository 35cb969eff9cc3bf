// The bridge in-process: registration, intake and dedup, delivery, retry and dead letters,
// the breaker, restarts, config subscriptions and schedule ticks.
#include "bridge_fixture.hpp"

#include <gtest/gtest.h>

namespace wopbridge::bridge_testing {
namespace {

TEST_F(BridgeTest, RegistrationMintsSecretOnceAndStoresOnlyAFingerprint) {
    open();
    auto reg = register_webhook();
    EXPECT_EQ(reg.signing_secret.rfind("whsec_", 0), 0u);
    EXPECT_EQ(reg.ingest_url, "http://127.0.0.1:9999/v1/ingest/" + reg.record.id);
    EXPECT_EQ(reg.record.webhook_id.rfind("wh_", 0), 0u);
    EXPECT_EQ(reg.record.state, sub_state::active);
    EXPECT_LE(reg.record.secret_fingerprint.size(), 32u);
    EXPECT_FALSE(reg.record.secret_fingerprint.empty());
    auto again = bridge_->get_subscription("acme", reg.record.id).value().record;
    EXPECT_EQ(again.sealed_secret.find(reg.signing_secret.substr(6)), std::string::npos);
    EXPECT_EQ(again.sealed_secret.find("whsec_"), std::string::npos);
}

TEST_F(BridgeTest, RegistrationRefusesUnknownWorkflowsAndSeamWorkflows) {
    open();
    registration_request req;
    req.tenant = "acme";
    req.workflow_id = "nope";
    EXPECT_FALSE(bridge_->register_subscription(req).has_value());
    req.workflow_id = "__seam_noop__";
    EXPECT_FALSE(bridge_->register_subscription(req).has_value());
}

TEST_F(BridgeTest, AnotherTenantsIdIsNotFound) {
    open();
    auto reg = register_webhook();
    auto r = bridge_->get_subscription("other", reg.record.id);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error(), make_error_code(errc::not_found));
    EXPECT_FALSE(bridge_->set_state("other", reg.record.id, sub_state::paused).has_value());
    EXPECT_FALSE(bridge_->delete_subscription("other", reg.record.id).has_value());
    EXPECT_TRUE(bridge_->list_subscriptions("other").value().empty());
}

TEST_F(BridgeTest, DeliveredRunStartedIsCausedByTheDeliveredAttempt) {
    open();
    auto reg = register_webhook();
    auto res = ingest(reg.record.id, signed_post(reg, "msg_causation_000000001"));
    ASSERT_EQ(res.status, submit_status::accepted);
    EXPECT_EQ(res.run_id.rfind("run_", 0), 0u);
    EXPECT_EQ(bridge_->run_due(clock_.now_ms()), 1);

    auto log = run_log(res.run_id);
    ASSERT_GE(log.size(), 2u);
    EXPECT_EQ(log[0].type, events::delivery_attempted_type);
    EXPECT_EQ(log[0].sequence, 0);
    EXPECT_EQ(payload(log[0])["outcome"], "delivered");
    EXPECT_EQ(payload(log[0])["runId"].as_string(), res.run_id);
    EXPECT_EQ(log[1].type, events::run_started_type);
    EXPECT_EQ(log[1].causation_id, log[0].event_id);
    auto started = payload(log[1]);
    EXPECT_EQ(started["workflowId"], "wf");
    EXPECT_EQ(started["owner"].as_object().at("tenant"), "acme");
    for (const auto& e : log) {
        EXPECT_EQ(e.payload_json.find("hello"), std::string::npos) << "inbound content in an event";
    }
    EXPECT_TRUE(bridge_->read_events("acme", res.run_id, -1, 1000).value().is_complete);
    EXPECT_FALSE(bridge_->read_events("other", res.run_id, -1, 1000).has_value());
}

TEST_F(BridgeTest, PollBeforeRunStartedIsEmptyNotNotFound) {
    open();
    auto reg = register_webhook();
    auto res = ingest(reg.record.id, signed_post(reg, "msg_earlypoll_00000001"));
    ASSERT_EQ(res.status, submit_status::accepted);
    auto early = bridge_->read_events("acme", res.run_id, -1, 1000);
    ASSERT_TRUE(early.has_value());
    EXPECT_TRUE(early->events.empty());
    EXPECT_FALSE(early->is_complete);
    EXPECT_FALSE(bridge_->read_events("other", res.run_id, -1, 1000).has_value());
    bool fired = false;
    bridge_->watch_run(res.run_id, -1, [&] { fired = true; });
    EXPECT_FALSE(fired);
    bridge_->run_due(clock_.now_ms());
    EXPECT_TRUE(fired);
    EXPECT_GE(run_log(res.run_id).size(), 2u);
}

TEST_F(BridgeTest, UpstreamOrderStartsBeforeCommitWithTheSameCausation) {
    open(/*before_commit=*/true);
    auto reg = register_webhook();
    auto res = ingest(reg.record.id, signed_post(reg, "msg_upstream_0000000001"));
    ASSERT_EQ(res.status, submit_status::accepted);
    bridge_->run_due(clock_.now_ms());
    EXPECT_EQ(starter_->starts(), 1);
    auto log = run_log(res.run_id);
    ASSERT_GE(log.size(), 2u);
    EXPECT_EQ(log[1].causation_id, log[0].event_id);
}

TEST_F(BridgeTest, DuplicateWebhookIdReturnsThePriorRun) {
    open();
    auto reg = register_webhook();
    auto first = ingest(reg.record.id, signed_post(reg, "msg_duplicate_00000001"));
    auto second = ingest(reg.record.id, signed_post(reg, "msg_duplicate_00000001"));
    EXPECT_EQ(first.status, submit_status::accepted);
    EXPECT_EQ(second.status, submit_status::duplicate);
    EXPECT_EQ(second.run_id, first.run_id);
}

TEST_F(BridgeTest, IngestOfAnAlreadyReadSubscriptionDoesNotReadItAgain) {
    open();
    auto reg = register_webhook();
    auto found = bridge_->find_subscription(reg.record.id);
    ASSERT_TRUE(found);
    // The stored subscription is active; the copy handed in says paused-and-hold. A held answer
    // shows both the verification step and the intake step used the copy, not a fresh read.
    auto copy = *found;
    copy.state = sub_state::paused;
    copy.hold_when_not_active = true;
    auto held = wait_submit([&](submit_callback cb) {
        bridge_->ingest_webhook(copy, signed_post(reg, "msg_one_read_00000001"), std::move(cb));
    });
    EXPECT_EQ(held.status, submit_status::held);
    copy.hold_when_not_active = false;
    auto refused = wait_submit([&](submit_callback cb) {
        bridge_->ingest_webhook(copy, signed_post(reg, "msg_one_read_00000002"), std::move(cb));
    });
    EXPECT_EQ(refused.status, submit_status::not_active);
    auto accepted = wait_submit([&](submit_callback cb) {
        bridge_->ingest_webhook(*found, signed_post(reg, "msg_one_read_00000003"), std::move(cb));
    });
    EXPECT_EQ(accepted.status, submit_status::accepted);
}

TEST_F(BridgeTest, ConcurrentSubmissionsOfOneKeyMakeOneRun) {
    open();
    auto reg = register_webhook();
    submit_result a, b;
    std::thread t1([&] { a = submit(reg.record.id, "evt-concurrent-1"); });
    std::thread t2([&] { b = submit(reg.record.id, "evt-concurrent-1"); });
    t1.join();
    t2.join();
    EXPECT_EQ(a.run_id, b.run_id);
    EXPECT_EQ((a.status == submit_status::accepted) + (b.status == submit_status::accepted), 1);
    EXPECT_EQ((a.status == submit_status::duplicate) + (b.status == submit_status::duplicate), 1);
    EXPECT_EQ(bridge_->run_due(clock_.now_ms()), 1);
    EXPECT_EQ(bridge_->list_deliveries("acme", reg.record.id, {}).value().items.size(), 1u);
}

TEST_F(BridgeTest, RefusedSignatureLeavesStateActiveAndDeadLettersTheRefusal) {
    open();
    auto reg = register_webhook();
    auto bad = signed_post(reg, "msg_badsignature_0001");
    bad.body = R"({"hello":"tampered"})";
    EXPECT_EQ(ingest(reg.record.id, bad).status, submit_status::signature_invalid);
    auto stale = signed_post(reg, "msg_stale_00000000001");
    clock_.advance(301 * 1000);
    EXPECT_EQ(ingest(reg.record.id, stale).status, submit_status::signature_invalid);
    inbound_http_request unsigned_req;
    unsigned_req.body = "{}";
    EXPECT_EQ(ingest(reg.record.id, unsigned_req).status, submit_status::signature_invalid);

    EXPECT_EQ(state_of(reg.record.id), sub_state::active);
    auto dl = bridge_->list_dead_letters("acme", reg.record.id, {}).value();
    ASSERT_EQ(dl.items.size(), 3u);
    for (const auto& d : dl.items) {
        EXPECT_EQ(d.reason, dead_letter_reason::verification_failed);
        EXPECT_FALSE(d.caused_state_change.has_value());
        EXPECT_EQ(d.attempt.outcome, attempt_outcome::dead_lettered);
        EXPECT_EQ(d.attempt.dedup_key.rfind("dk_", 0), 0u);
        // The advertised retention, as every dead letter (RFC 0232 §C).
        EXPECT_EQ(d.expires_at - d.dead_lettered_at, 7LL * 24 * 3600 * 1000);
    }
    auto evs = bridge_->seam_events("acme", reg.record.id).value();
    for (const auto& e : evs) {
        EXPECT_NE(e.type, events::state_changed_type);
    }
    EXPECT_TRUE(bridge_->list_deliveries("acme", reg.record.id, {}).value().items.empty());
}

TEST_F(BridgeTest, RefusalsPastTheRecordBudgetAreAnsweredAlikeAndCountedNotWritten) {
    settings_.refused_records_per_subscription = {1, 3};
    settings_.refused_records_total = {2, 5};
    open();
    auto a = register_webhook();
    auto b = register_webhook();
    auto forged = [&](const registration_result& reg, int n) {
        auto post = signed_post(reg, "msg_budget_" + std::to_string(1000000 + n));
        post.body = R"({"hello":"tampered"})";
        return ingest(reg.record.id, post).status;
    };
    // a: 3 written (its burst), 2 more answered alike; b: 2 written (the total's burst of 5 spent).
    for (int i = 0; i < 5; ++i) {
        EXPECT_EQ(forged(a, i), submit_status::signature_invalid) << i;
    }
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(forged(b, 10 + i), submit_status::signature_invalid) << i;
    }
    auto stored = [&](const registration_result& reg) {
        return bridge_->list_dead_letters("acme", reg.record.id, {}).value().items.size();
    };
    EXPECT_EQ(stored(a), 3u);
    EXPECT_EQ(stored(b), 2u);
    // A second refills one token of a's bucket and two of the total: one more record for a.
    clock_.advance(1000);
    EXPECT_EQ(forged(a, 20), submit_status::signature_invalid);
    EXPECT_EQ(forged(a, 21), submit_status::signature_invalid);
    EXPECT_EQ(stored(a), 4u);
    // Signed posts never spend the budget.
    EXPECT_EQ(ingest(a.record.id, signed_post(a, "msg_budget_signed_0001")).status,
              submit_status::accepted);
    EXPECT_EQ(state_of(a.record.id), sub_state::active);
    const std::string text = bridge_->metrics_text();
    const std::string series = "wopbridge_verification_refusals_unrecorded_total{subscription=\"";
    EXPECT_NE(text.find(series + a.record.id + "\"} 3"), std::string::npos) << text;
    EXPECT_NE(text.find(series + b.record.id + "\"} 1"), std::string::npos) << text;
}

TEST_F(BridgeTest, BestEffortDeliversUnverified) {
    open();
    auto reg = register_webhook("wf", {}, verification_mode::best_effort);
    auto bad = signed_post(reg, "msg_besteffort_000001");
    bad.body = "{}";
    auto res = ingest(reg.record.id, bad);
    EXPECT_EQ(res.status, submit_status::accepted);
}

TEST_F(BridgeTest, PausedSubscriptionAnswersNotActiveAndResumeDeliversAgain) {
    open();
    auto reg = register_webhook();
    auto paused = bridge_->set_state("acme", reg.record.id, sub_state::paused);
    ASSERT_TRUE(paused.has_value());
    EXPECT_EQ(paused->state, sub_state::paused);
    EXPECT_EQ(ingest(reg.record.id, signed_post(reg, "msg_paused_0000000001")).status,
              submit_status::not_active);
    auto events = bridge_->seam_events("acme", reg.record.id).value();
    ASSERT_FALSE(events.empty());
    auto change = payload(events.back());
    EXPECT_EQ(change["reason"], "operator-paused");
    EXPECT_EQ(change["source"], "webhook");
    // paused -> failed is not an operator transition
    EXPECT_EQ(bridge_->set_state("acme", reg.record.id, sub_state::failed).error(),
              make_error_code(errc::conflict));
    EXPECT_EQ(bridge_->set_state("acme", reg.record.id, sub_state::active)->state,
              sub_state::active);
    EXPECT_EQ(ingest(reg.record.id, signed_post(reg, "msg_paused_0000000002")).status,
              submit_status::accepted);
}

TEST_F(BridgeTest, ExhaustionDeadLettersWithStateChangeAndDeadLetterRecord) {
    open();
    auto reg =
        register_webhook("wf-fail", retry_policy{2, backoff_kind::fixed, 1000, 60000, false});
    auto res = submit(reg.record.id, "evt-exhaust-1");
    ASSERT_EQ(res.status, submit_status::accepted);
    EXPECT_EQ(bridge_->run_due(clock_.now_ms()), 1);
    EXPECT_EQ(state_of(reg.record.id), sub_state::active);
    EXPECT_EQ(bridge_->run_due(clock_.now_ms() + 999), 0); // not due yet
    clock_.advance(1000);
    EXPECT_EQ(bridge_->run_due(clock_.now_ms()), 1);
    EXPECT_EQ(state_of(reg.record.id), sub_state::dead_lettered);

    auto log = bridge_->seam_events("acme", reg.record.id).value();
    ASSERT_EQ(log.size(), 3u);
    EXPECT_EQ(payload(log[0])["outcome"], "retrying");
    EXPECT_EQ(payload(log[1])["outcome"], "dead-lettered");
    EXPECT_EQ(payload(log[1])["attempt"], 2);
    EXPECT_FALSE(payload(log[1]).contains("runId"));
    EXPECT_EQ(log[2].type, events::state_changed_type);
    auto change = payload(log[2]);
    EXPECT_EQ(change["fromState"], "active");
    EXPECT_EQ(change["toState"], "dead-lettered");
    EXPECT_EQ(change["reason"], "retry-exhausted");

    auto dl = bridge_->list_dead_letters("acme", reg.record.id, {}).value();
    ASSERT_EQ(dl.items.size(), 1u);
    EXPECT_EQ(dl.items[0].reason, dead_letter_reason::retries_exhausted);
    ASSERT_TRUE(dl.items[0].caused_state_change.has_value());
    EXPECT_EQ(dl.items[0].caused_state_change->to, sub_state::dead_lettered);
    EXPECT_EQ(dl.items[0].attempt_event_id, log[1].event_id);
    EXPECT_EQ(dl.items[0].expires_at - dl.items[0].dead_lettered_at, 7LL * 24 * 3600 * 1000);
    EXPECT_FALSE(bridge_->get_run("acme", res.run_id).has_value()); // no run for a dead letter

    // Operator re-activation.
    EXPECT_EQ(bridge_->set_state("acme", reg.record.id, sub_state::active)->state,
              sub_state::active);
}

TEST_F(BridgeTest, PermanentFailureDeadLettersAtOnce) {
    open();
    starter_->set_behaviour("wf", behaviour::permanent);
    auto reg = register_webhook("wf", retry_policy{5, backoff_kind::none, 0, 0, false});
    submit(reg.record.id, "evt-permanent-1");
    EXPECT_EQ(bridge_->run_due(clock_.now_ms()), 1);
    EXPECT_EQ(state_of(reg.record.id), sub_state::dead_lettered);
}

TEST_F(BridgeTest, BackoffNoneRetriesAtOnceUntilExhausted) {
    open();
    auto reg = register_webhook("wf-fail", retry_policy{3, backoff_kind::none, 0, 0, false});
    submit(reg.record.id, "evt-none-1");
    EXPECT_EQ(bridge_->run_due(clock_.now_ms()), 3);
    EXPECT_EQ(state_of(reg.record.id), sub_state::dead_lettered);
}

TEST_F(BridgeTest, BreakerOpensThenADeliveredProbeReactivates) {
    settings_.default_breaker = {2, 30000};
    open();
    auto reg =
        register_webhook("wf-fail", retry_policy{10, backoff_kind::fixed, 1000, 60000, false});
    submit(reg.record.id, "evt-breaker-1");
    bridge_->run_due(clock_.now_ms());
    EXPECT_EQ(state_of(reg.record.id), sub_state::active);
    clock_.advance(1000);
    bridge_->run_due(clock_.now_ms());
    EXPECT_EQ(state_of(reg.record.id), sub_state::failed);
    EXPECT_EQ(ingest(reg.record.id, signed_post(reg, "msg_breaker_000000001")).status,
              submit_status::not_active);

    starter_->set_behaviour("wf-fail", behaviour::complete);
    clock_.advance(10000);
    EXPECT_EQ(bridge_->run_due(clock_.now_ms()), 0); // before the probe time
    clock_.advance(20000);
    EXPECT_EQ(bridge_->run_due(clock_.now_ms()), 1); // the probe
    EXPECT_EQ(state_of(reg.record.id), sub_state::active);
    auto sub = bridge_->get_subscription("acme", reg.record.id).value().record;
    EXPECT_EQ(sub.consecutive_failures, 0);

    auto log = bridge_->seam_events("acme", reg.record.id).value();
    std::vector<std::string> to_states;
    for (const auto& e : log) {
        if (e.type == events::state_changed_type) {
            to_states.push_back(std::string(payload(e)["toState"].as_string()));
        }
    }
    EXPECT_EQ(to_states, (std::vector<std::string>{"failed", "active"}));
}

TEST_F(BridgeTest, OperatorReactivationOfAFailedSubscriptionStartsAFreshCount) {
    settings_.default_breaker = {2, 30000};
    open();
    auto reg =
        register_webhook("wf-fail", retry_policy{10, backoff_kind::fixed, 1000, 60000, false});
    submit(reg.record.id, "evt-reactivate-1");
    bridge_->run_due(clock_.now_ms());
    clock_.advance(1000);
    bridge_->run_due(clock_.now_ms());
    ASSERT_EQ(state_of(reg.record.id), sub_state::failed);
    ASSERT_TRUE(bridge_->set_state("acme", reg.record.id, sub_state::active).has_value());
    clock_.advance(60000);
    EXPECT_EQ(bridge_->run_due(clock_.now_ms()), 1);
    EXPECT_EQ(state_of(reg.record.id), sub_state::active); // one failure: below the threshold
    clock_.advance(1000);
    EXPECT_EQ(bridge_->run_due(clock_.now_ms()), 1);
    EXPECT_EQ(state_of(reg.record.id), sub_state::failed); // the second one opens it again
}

TEST_F(BridgeTest, RestartMidRetryKeepsAttemptCountAndDueTime) {
    open();
    auto reg =
        register_webhook("wf-fail", retry_policy{5, backoff_kind::fixed, 10000, 60000, false});
    auto res = submit(reg.record.id, "evt-restart-1");
    bridge_->run_due(clock_.now_ms());
    const millis due = clock_.now_ms() + 10000;
    bridge_.reset();

    clock_.advance(2000);
    open();
    auto d = bridge_->list_deliveries("acme", reg.record.id, {}).value().items.at(0);
    EXPECT_EQ(d.id, res.delivery_id);
    EXPECT_EQ(d.attempts, 1);
    EXPECT_EQ(d.due_at, due);
    EXPECT_EQ(d.status, delivery_status::pending);
    EXPECT_EQ(bridge_->run_due(clock_.now_ms()), 0);
    starter_->set_behaviour("wf-fail", behaviour::complete);
    clock_.set(due);
    EXPECT_EQ(bridge_->run_due(clock_.now_ms()), 1);
    auto log = run_log(res.run_id);
    ASSERT_FALSE(log.empty());
    EXPECT_EQ(payload(log[0])["attempt"], 2);
}

TEST_F(BridgeTest, RunsLeftRunningByAPreviousProcessAreFailedNotRerun) {
    open();
    starter_->set_behaviour("wf", behaviour::keep_running);
    auto reg = register_webhook();
    auto res = submit(reg.record.id, "evt-interrupted-1");
    bridge_->run_due(clock_.now_ms());
    EXPECT_EQ(bridge_->get_run("acme", res.run_id)->status, run_status::running);
    bridge_.reset();

    open();
    ASSERT_TRUE(bridge_->start().has_value());
    EXPECT_EQ(bridge_->get_run("acme", res.run_id)->status, run_status::failed);
    auto log = run_log(res.run_id);
    EXPECT_EQ(log.back().type, events::run_failed_type);
    EXPECT_EQ(payload(log.back())["reason"], "interrupted");
    EXPECT_EQ(starter_->starts(), 0);
    bridge_->stop();
}

TEST_F(BridgeTest, LifecycleSinkAppendsRunCompleted) {
    open();
    starter_->set_behaviour("wf", behaviour::keep_running);
    auto reg = register_webhook();
    auto res = submit(reg.record.id, "evt-lifecycle-1");
    bridge_->run_due(clock_.now_ms());
    ASSERT_NE(starter_->sink(), nullptr);
    bool fired = false;
    auto log_before = run_log(res.run_id);
    bridge_->watch_run(res.run_id, log_before.back().sequence, [&] { fired = true; });
    EXPECT_FALSE(fired);
    starter_->sink()->on_run_finished(res.run_id, true, 0);
    EXPECT_TRUE(fired);
    EXPECT_EQ(bridge_->get_run("acme", res.run_id)->status, run_status::completed);
    EXPECT_EQ(run_log(res.run_id).back().type, events::run_completed_type);
}

TEST_F(BridgeTest, ThreadedEngineDeliversAndWakesWatchers) {
    open();
    ASSERT_TRUE(bridge_->start().has_value());
    auto reg = register_webhook();
    std::mutex m;
    std::condition_variable cv;
    bool fired = false;
    auto res = ingest(reg.record.id, signed_post(reg, "msg_threaded_00000001"));
    ASSERT_EQ(res.status, submit_status::accepted);
    auto token = bridge_->watch_run(res.run_id, -1, [&] {
        std::lock_guard lock(m);
        fired = true;
        cv.notify_all();
    });
    {
        std::unique_lock lock(m);
        EXPECT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return fired; }));
    }
    bridge_->cancel_watch(token);
    bridge_->stop();
    auto log = run_log(res.run_id);
    ASSERT_GE(log.size(), 2u);
    EXPECT_EQ(log[1].causation_id, log[0].event_id);
}

TEST_F(BridgeTest, ConfigSubscriptionsAreUpsertedSealedAndRemoved) {
    open();
    subscription a;
    a.id = "cfg-a";
    a.tenant = "acme";
    a.workflow_id = "wf";
    subscription b = a;
    b.id = "cfg-b";
    const std::string secret = "whsec_Y29uZmlnLXNlY3JldC1jb25maWctc2VjcmV0";
    ASSERT_TRUE(bridge_->apply_config_subscriptions({a, b}, {{"cfg-a", secret}}).has_value());
    auto got = bridge_->get_subscription("acme", "cfg-a").value().record;
    EXPECT_EQ(got.origin, subscription::origin_kind::config);
    EXPECT_FALSE(got.secret_fingerprint.empty());
    EXPECT_EQ(got.sealed_secret.find("whsec_"), std::string::npos);

    registration_result reg;
    reg.record = got;
    reg.signing_secret = secret;
    EXPECT_EQ(ingest("cfg-a", signed_post(reg, "msg_config_0000000001")).status,
              submit_status::accepted);

    ASSERT_TRUE(bridge_->apply_config_subscriptions({a}, {{"cfg-a", secret}}).has_value());
    EXPECT_FALSE(bridge_->get_subscription("acme", "cfg-b").has_value());
    EXPECT_TRUE(bridge_->get_subscription("acme", "cfg-a").has_value());
}

TEST_F(BridgeTest, ScheduleTicksBecomeDeliveriesOncePerTick) {
    open();
    registration_request req;
    req.tenant = "acme";
    req.source = source_kind::schedule;
    req.workflow_id = "wf";
    req.schedule = schedule_spec{"@every 1m", ""};
    auto reg = bridge_->register_subscription(req);
    ASSERT_TRUE(reg.has_value());
    EXPECT_TRUE(reg->ingest_url.empty());
    req.schedule = schedule_spec{"61 * * * *", ""};
    EXPECT_FALSE(bridge_->register_subscription(req).has_value());

    EXPECT_EQ(bridge_->run_schedules_due(clock_.now_ms() + 60000), 1);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    std::vector<delivery> items;
    while (items.empty() && std::chrono::steady_clock::now() < deadline) {
        items = bridge_->list_deliveries("acme", reg->record.id, {}).value().items;
        if (items.empty()) {
            std::this_thread::yield(); // the intake commit completes on the store thread
        }
    }
    ASSERT_EQ(items.size(), 1u);
    EXPECT_EQ(bridge_->run_due(clock_.now_ms() + 60000), 1);
    auto log = run_log(items[0].run_id);
    ASSERT_GE(log.size(), 2u);
    EXPECT_EQ(log[1].causation_id, log[0].event_id);

    // Paused: the tick is skipped, not queued.
    ASSERT_TRUE(bridge_->set_state("acme", reg->record.id, sub_state::paused).has_value());
    EXPECT_EQ(bridge_->run_schedules_due(clock_.now_ms() + 120000), 0);
}

} // namespace
} // namespace wopbridge::bridge_testing
