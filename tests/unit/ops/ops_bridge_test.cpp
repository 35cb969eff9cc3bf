#include "app/bridge.hpp"

#include "contract/events.hpp"
#include "runs/run_starter.hpp"
#include "store/store.hpp"
#include "support/eventually.hpp"
#include "support/fake_clock.hpp"
#include "support/scripted_run_starter.hpp"
#include "support/temp_dir.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <map>
#include <thread>

namespace wopbridge {
namespace {
namespace json = boost::json;
using behaviour = testing::scripted_run_starter::behaviour;

class OpsBridgeTest : public ::testing::Test {
protected:
    OpsBridgeTest() {
        settings_.host_key_file = dir_.file("host.key");
        settings_.default_retry = {2, backoff_kind::fixed, 1000, 60000, false};
        settings_.default_breaker = {100, 30000};
        settings_.attempt_timeout_ms = 5000;
    }
    ~OpsBridgeTest() override { bridge_.reset(); }

    void open() {
        sqlite_options o;
        o.path = dir_.file("bridge.db");
        auto st = open_sqlite_store(o);
        ASSERT_TRUE(st.has_value()) << st.error().message;
        auto starter = std::make_unique<testing::scripted_run_starter>(
            std::vector<std::string>{"wf", "wf-fail"}, false);
        starter_ = starter.get();
        starter_->set_behaviour("wf-fail", behaviour::transient);
        bridge_ = std::make_unique<bridge>(settings_, std::move(*st), std::move(starter), clock_, random_);
    }

    registration_result register_sub(bool hold, const std::string& workflow = "wf") {
        registration_request req;
        req.tenant = "acme";
        req.workflow_id = workflow;
        req.verification = verification_mode::none;
        req.hold_when_not_active = hold;
        auto r = bridge_->register_subscription(req);
        EXPECT_TRUE(r.has_value());
        return r.value();
    }

    submit_result submit(const std::string& sub_id, const std::string& event_id) {
        inbound_submission s;
        s.subscription_id = sub_id;
        s.provider_event_id = event_id;
        s.received_at = clock_.now_ms();
        s.verified = true;
        s.content_json = R"({"webhook":{"method":"POST","headers":{},"body":{"n":")" + event_id +
                         R"("}}})";
        auto p = std::make_shared<std::promise<submit_result>>();
        auto f = p->get_future();
        bridge_->submit(s, [p](submit_result r) { p->set_value(std::move(r)); });
        EXPECT_EQ(f.wait_for(std::chrono::seconds(10)), std::future_status::ready);
        return f.get();
    }

    std::vector<run_event> run_log(const std::string& run_id) {
        auto r = bridge_->read_events("acme", run_id, -1, 1000);
        EXPECT_TRUE(r.has_value());
        return r ? r->events : std::vector<run_event>{};
    }

    static json::object payload(const run_event& e) { return json::parse(e.payload_json).as_object(); }

    testing::temp_dir dir_;
    testing::fake_clock clock_;
    testing::seeded_random random_{17};
    bridge_settings settings_;
    testing::scripted_run_starter* starter_ = nullptr;
    std::unique_ptr<bridge> bridge_;
};

TEST_F(OpsBridgeTest, HoldPersistsOnTheSubscription) {
    open();
    auto reg = register_sub(true);
    EXPECT_TRUE(bridge_->get_subscription("acme", reg.record.id)->record.hold_when_not_active);
    auto plain = register_sub(false);
    EXPECT_FALSE(bridge_->get_subscription("acme", plain.record.id)->record.hold_when_not_active);
}

TEST_F(OpsBridgeTest, HeldWhilePausedAndDeliveredInOrderAfterResume) {
    open();
    auto reg = register_sub(true);
    ASSERT_TRUE(bridge_->set_state("acme", reg.record.id, sub_state::paused).has_value());
    auto first = submit(reg.record.id, "evt-held-1");
    clock_.advance(10);
    auto second = submit(reg.record.id, "evt-held-2");
    ASSERT_EQ(first.status, submit_status::held);
    ASSERT_EQ(second.status, submit_status::held);
    EXPECT_FALSE(first.delivery_id.empty());
    EXPECT_EQ(first.run_id.rfind("run_", 0), 0u);
    EXPECT_EQ(submit(reg.record.id, "evt-held-1").status, submit_status::duplicate);
    EXPECT_EQ(bridge_->run_due(clock_.now_ms() + 100000), 0); // nothing delivered while paused

    ASSERT_TRUE(bridge_->set_state("acme", reg.record.id, sub_state::active).has_value());
    EXPECT_EQ(bridge_->run_due(clock_.now_ms()), 2);
    auto a = run_log(first.run_id);
    auto b = run_log(second.run_id);
    ASSERT_GE(a.size(), 2u);
    ASSERT_GE(b.size(), 2u);
    EXPECT_EQ(a[1].type, events::run_started_type);
    EXPECT_EQ(a[1].causation_id, a[0].event_id);
    EXPECT_LE(a[1].timestamp, b[1].timestamp);
    auto ra = bridge_->get_run("acme", first.run_id).value();
    auto rb = bridge_->get_run("acme", second.run_id).value();
    EXPECT_LE(ra.created_at, rb.created_at);
    // Released in arrival order: the earlier held delivery keeps the earlier due time.
    auto dl = bridge_->list_deliveries("acme", reg.record.id, {}).value();
    ASSERT_EQ(dl.items.size(), 2u);
    EXPECT_EQ(dl.items[1].id, first.delivery_id); // newest first
    EXPECT_EQ(dl.items[0].status, delivery_status::delivered);
    EXPECT_EQ(dl.items[1].status, delivery_status::delivered);
}

TEST_F(OpsBridgeTest, RefuseStaysNotActive) {
    open();
    auto reg = register_sub(false);
    ASSERT_TRUE(bridge_->set_state("acme", reg.record.id, sub_state::paused).has_value());
    EXPECT_EQ(submit(reg.record.id, "evt-refused").status, submit_status::not_active);
}

} // namespace
} // namespace wopbridge

namespace wopbridge {
namespace {

class OpsReplayTest : public OpsBridgeTest {
protected:
    // A subscription whose one event dead-lettered after two attempts; the subscription is
    // dead-lettered too. Returns (subscription id, the dead letter).
    std::pair<std::string, dead_letter> dead_lettered_event(const std::string& event_id,
                                                            std::string sub_id = {}) {
        if (sub_id.empty()) {
            sub_id = register_sub(false, "wf-fail").record.id;
        }
        starter_->set_behaviour("wf-fail", behaviour::transient);
        EXPECT_EQ(submit(sub_id, event_id).status, submit_status::accepted);
        bridge_->run_due(clock_.now_ms());
        clock_.advance(1000);
        bridge_->run_due(clock_.now_ms());
        auto dl = bridge_->list_dead_letters("acme", sub_id, {}).value();
        EXPECT_FALSE(dl.items.empty());
        return {sub_id, dl.items.empty() ? dead_letter{} : dl.items.front()};
    }

    replay_job_status wait_job(const std::string& id, bool drive = false) {
        replay_job_status last;
        testing::eventually(
            [&] {
                if (drive) {
                    bridge_->run_due(clock_.now_ms());
                }
                auto st = bridge_->get_replay_job("acme", id);
                EXPECT_TRUE(st.has_value());
                last = st ? *st : replay_job_status{};
                return !st || st->state != "running";
            },
            std::chrono::seconds(20));
        return last;
    }
};

TEST_F(OpsReplayTest, ReplayStartsANewRunLinkedToTheDeadLetteredAttempt) {
    open();
    auto [sub_id, dl] = dead_lettered_event("evt-replay-1");
    ASSERT_EQ(dl.reason, dead_letter_reason::retries_exhausted);
    starter_->set_behaviour("wf-fail", behaviour::complete);

    auto r = bridge_->replay_dead_letter("acme", sub_id, dl.attempt_event_id);
    ASSERT_TRUE(r.has_value()) << r.error().message();
    EXPECT_TRUE(r->held); // the subscription is dead-lettered: held until re-activated
    EXPECT_NE(r->delivery_id, dl.delivery_id);
    auto again = bridge_->replay_dead_letter("acme", sub_id, dl.attempt_event_id).value();
    EXPECT_TRUE(again.repeated);
    EXPECT_EQ(again.delivery_id, r->delivery_id);
    EXPECT_EQ(again.run_id, r->run_id);

    ASSERT_TRUE(bridge_->set_state("acme", sub_id, sub_state::active).has_value());
    EXPECT_EQ(bridge_->run_due(clock_.now_ms()), 1);
    auto log = run_log(r->run_id);
    ASSERT_GE(log.size(), 2u);
    EXPECT_EQ(log[1].type, events::run_started_type);
    EXPECT_EQ(log[1].causation_id, log[0].event_id);
    auto meta = payload(log[1])["metadata"].as_object();
    EXPECT_EQ(meta["replayOf"], dl.attempt_event_id.c_str());
    EXPECT_EQ(meta["deliveryId"], r->delivery_id.c_str());
}

TEST_F(OpsReplayTest, ReplayIsTenantScopedAndUnknownIdsAreNotFound) {
    open();
    auto [sub_id, dl] = dead_lettered_event("evt-replay-2");
    EXPECT_EQ(bridge_->replay_dead_letter("other", sub_id, dl.attempt_event_id).error(),
              make_error_code(errc::not_found));
    EXPECT_EQ(bridge_->replay_dead_letter("acme", sub_id, "evt_nope").error(),
              make_error_code(errc::not_found));
}

TEST_F(OpsReplayTest, VerificationFailuresAreNotReplayable) {
    open();
    registration_request req;
    req.tenant = "acme";
    req.workflow_id = "wf";
    auto reg = bridge_->register_subscription(req).value();
    inbound_http_request bad;
    bad.target = "/v1/ingest/" + reg.record.id;
    bad.body = "{}";
    bad.headers = {{"webhook-id", "msg_0123456789abcdef"},
                   {"webhook-timestamp", std::to_string(clock_.now_ms() / 1000)},
                   {"webhook-signature", "v1,AAAA"}};
    auto p = std::make_shared<std::promise<submit_result>>();
    auto f = p->get_future();
    bridge_->ingest_webhook(reg.record.id, bad, [p](submit_result r) { p->set_value(r); });
    ASSERT_EQ(f.get().status, submit_status::signature_invalid);
    auto dl = bridge_->list_dead_letters("acme", reg.record.id, {}).value();
    ASSERT_EQ(dl.items.size(), 1u);
    EXPECT_EQ(bridge_->replay_dead_letter("acme", reg.record.id, dl.items[0].attempt_event_id).error(),
              make_error_code(errc::conflict));
}

TEST_F(OpsReplayTest, BulkReplayDeliversEveryDeadLetterOldestFirst) {
    open();
    auto [sub_id, first] = dead_lettered_event("evt-bulk-1");
    ASSERT_TRUE(bridge_->set_state("acme", sub_id, sub_state::active).has_value());
    dead_lettered_event("evt-bulk-2", sub_id);
    ASSERT_TRUE(bridge_->set_state("acme", sub_id, sub_state::active).has_value());
    starter_->set_behaviour("wf-fail", behaviour::complete);

    EXPECT_FALSE(bridge_->replay_dead_letters("acme", sub_id, {}, 100).has_value()); // no selection
    EXPECT_FALSE(bridge_->replay_dead_letters("other", sub_id, {{}, {}, true}, 100).has_value());
    auto job = bridge_->replay_dead_letters("acme", sub_id, {{}, {}, true}, 500);
    ASSERT_TRUE(job.has_value());
    ASSERT_TRUE(testing::eventually(
        [&] { return bridge_->get_replay_job("acme", *job)->replayed == 2; },
        std::chrono::seconds(20)));
    // Both replays are committed but not yet delivered: the job is still running.
    EXPECT_EQ(bridge_->get_replay_job("acme", *job)->state, "running");
    EXPECT_EQ(bridge_->get_replay_job("acme", *job)->delivered, 0);
    auto st = wait_job(*job, true);
    EXPECT_EQ(st.state, "completed");
    EXPECT_EQ(st.total, 2);
    EXPECT_EQ(st.replayed, 2);
    EXPECT_EQ(st.delivered, 2);
    EXPECT_FALSE(bridge_->get_replay_job("other", *job).has_value());
    EXPECT_EQ(bridge_->run_due(clock_.now_ms()), 0);
}

TEST_F(OpsReplayTest, BulkReplayStopsAfterConsecutiveFailures) {
    settings_.replay_failure_limit = 1;
    open();
    auto [sub_id, first] = dead_lettered_event("evt-stop-1");
    for (int i = 2; i <= 4; ++i) {
        ASSERT_TRUE(bridge_->set_state("acme", sub_id, sub_state::active).has_value());
        dead_lettered_event("evt-stop-" + std::to_string(i), sub_id);
    }
    ASSERT_TRUE(bridge_->set_state("acme", sub_id, sub_state::active).has_value());
    starter_->set_behaviour("wf-fail", behaviour::permanent);
    auto job = bridge_->replay_dead_letters("acme", sub_id, {{}, {}, true}, 20);
    ASSERT_TRUE(job.has_value());
    auto st = wait_job(*job, true);
    EXPECT_EQ(st.state, "stopped");
    EXPECT_EQ(st.total, 4);
    EXPECT_LT(st.replayed, 4);
    EXPECT_GE(st.failed, 1);
}

// A job whose bridge goes away mid-job is left running in the store; the next bridge on the store
// resumes it at its first unsettled dead letter, and every dead letter gets one replay delivery.
TEST_F(OpsReplayTest, BulkReplayStoppedMidJobResumesOnTheNextStart) {
    settings_.replay_job_poll_ms = 20;
    open();
    constexpr int dead = 6;
    std::string sub_id;
    for (int i = 0; i < dead; ++i) {
        sub_id = dead_lettered_event("evt-resume-" + std::to_string(i), sub_id).first;
        ASSERT_TRUE(bridge_->set_state("acme", sub_id, sub_state::active).has_value());
    }
    starter_->set_behaviour("wf-fail", behaviour::complete);
    auto job = bridge_->replay_dead_letters("acme", sub_id, {{}, {}, true}, 5);
    ASSERT_TRUE(job.has_value());
    ASSERT_TRUE(testing::eventually(
        [&] { return bridge_->get_replay_job("acme", *job)->replayed >= 1; },
        std::chrono::seconds(20)));
    bridge_.reset(); // joins the job at a safe point and lets go of its lease
    open();
    auto left = bridge_->get_replay_job("acme", *job);
    ASSERT_TRUE(left.has_value());
    EXPECT_EQ(left->state, "running");
    ASSERT_GE(left->replayed, 1);
    ASSERT_LT(left->replayed, dead) << "the job finished before the stop";

    starter_->set_behaviour("wf-fail", behaviour::complete); // the new bridge's starter
    ASSERT_TRUE(bridge_->start().has_value());
    auto st = wait_job(*job, true);
    EXPECT_EQ(st.state, "completed") << "replayed " << st.replayed << ", delivered "
                                     << st.delivered << ", failed " << st.failed;
    EXPECT_EQ(st.delivered, dead);
    EXPECT_EQ(st.total, dead);
    EXPECT_EQ(st.replayed, dead);
    EXPECT_EQ(st.failed, 0);
    // Each dead letter's replay is one delivery (dedup key replay:<attemptEventId>).
    auto deliveries = bridge_->list_deliveries("acme", sub_id, {1000, {}});
    ASSERT_TRUE(deliveries.has_value());
    std::map<std::string, int> replays;
    for (const auto& d : deliveries->items) {
        if (d.dedup_key.rfind("replay:", 0) == 0) {
            ++replays[d.dedup_key];
        }
    }
    EXPECT_EQ(replays.size(), static_cast<std::size_t>(dead));
    for (const auto& [key, n] : replays) {
        EXPECT_EQ(n, 1) << key;
    }
    bridge_->stop();
}

// SQLite keeps a dedup claim in its delivery's row (migration 11): nothing for the sweep to
// delete, and the key is taken again once its retention is over.
TEST_F(OpsBridgeTest, AKeyIsADuplicateWithinItsRetentionAndAcceptedAgainAfterIt) {
    open();
    auto reg = register_sub(false);
    ASSERT_EQ(submit(reg.record.id, "evt-purge-1").status, submit_status::accepted);
    bridge_->run_due(clock_.now_ms());
    EXPECT_EQ(bridge_->purge_expired().value(), 0);
    clock_.advance(24LL * 3600 * 1000);
    EXPECT_EQ(submit(reg.record.id, "evt-purge-1").status, submit_status::duplicate);
    clock_.advance(1);
    EXPECT_EQ(bridge_->purge_expired().value(), 0);
    EXPECT_EQ(submit(reg.record.id, "evt-purge-1").status, submit_status::accepted);
    EXPECT_EQ(submit(reg.record.id, "evt-purge-1").status, submit_status::duplicate);
}

TEST_F(OpsBridgeTest, MetricsCountIngestsAttemptsAndStates) {
    open();
    auto reg = register_sub(false);
    ASSERT_EQ(submit(reg.record.id, "evt-m-1").status, submit_status::accepted);
    ASSERT_EQ(submit(reg.record.id, "evt-m-1").status, submit_status::duplicate);
    bridge_->run_due(clock_.now_ms());
    auto text = bridge_->metrics_text();
    EXPECT_NE(text.find("wopbridge_ingests_total{subscription=\"" + reg.record.id +
                        "\",outcome=\"accepted\"} 1\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("outcome=\"duplicate\"} 1\n"), std::string::npos);
    EXPECT_NE(text.find("wopbridge_delivery_attempts_total{outcome=\"delivered\"} 1\n"),
              std::string::npos);
    EXPECT_NE(text.find("wopbridge_subscriptions{state=\"active\"} 1\n"), std::string::npos);
    EXPECT_NE(text.find("wopbridge_ingest_latency_seconds_count 1\n"), std::string::npos);
    // Both submissions went through the store's intake writer (the duplicate answered by it).
    EXPECT_NE(text.find("wopbridge_store_intake_requests_total 2\n"), std::string::npos);
    EXPECT_NE(text.find("wopbridge_store_round_trips_total 0\n"), std::string::npos); // SQLite
    EXPECT_EQ(text.find("evt-m-1"), std::string::npos); // never content
}

} // namespace
} // namespace wopbridge
