#include "delivery/delivery_engine.hpp"

#include "core/synchronized_random.hpp"
#include "store/store.hpp"
#include "support/fake_clock.hpp"
#include "support/forwarding_store.hpp"
#include "support/scripted_run_starter.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <mutex>

namespace wopbridge {
namespace {

// An upstream-style starter that keeps the start callbacks until the test answers them.
class held_starter final : public run_starter {
public:
    run_start_result prepare(const run_start_request&) override { return {}; }
    void start(const run_start_request& req, run_start_callback done) override {
        std::lock_guard lock(mutex_);
        held_.push_back(std::move(done));
        requests_.push_back(req);
    }
    bool starts_before_commit() const noexcept override { return true; }
    void set_lifecycle_sink(run_lifecycle_sink*) override {}
    void stop() override {}
    std::vector<std::string> workflow_ids() const override { return {}; }

    std::vector<run_start_callback> take() {
        std::lock_guard lock(mutex_);
        return std::exchange(held_, {});
    }
    std::vector<run_start_request> requests() {
        std::lock_guard lock(mutex_);
        return requests_;
    }

private:
    std::mutex mutex_;
    std::vector<run_start_callback> held_;
    std::vector<run_start_request> requests_;
};

// A local-style starter that reports run.completed both from prepare() (to be committed with
// run.started) and from start(), as the real local starter and the seam starter do.
class completes_at_once_starter final : public run_starter {
public:
    run_start_result prepare(const run_start_request&) override { return completed(); }
    void start(const run_start_request&, run_start_callback done) override { done(completed()); }
    bool starts_before_commit() const noexcept override { return false; }
    void set_lifecycle_sink(run_lifecycle_sink*) override {}
    void stop() override {}
    std::vector<std::string> workflow_ids() const override { return {"wf"}; }

private:
    static run_start_result completed() {
        run_start_result r;
        r.follow_up_events.emplace_back("run.completed", "{}");
        r.status_after = run_status::completed;
        return r;
    }
};

// Loses every run write made after the attempt's commit, as a SIGKILL right after it would.
class killed_after_commit_store final : public testing::forwarding_store {
public:
    using forwarding_store::forwarding_store;
    result<run_event> append_run_event(const std::string&, const std::string&, const std::string&,
                                       const std::string&, const std::string&, millis) override {
        return make_error_code(errc::store_unavailable);
    }
    result<void> set_run_status(const std::string&, run_status, millis) override {
        return make_error_code(errc::store_unavailable);
    }
    result<run_event> end_run(const std::string&, const std::string&, const std::string&,
                              const std::string&, run_status, millis) override {
        return make_error_code(errc::store_unavailable);
    }
};

class DeliveryEngineTest : public ::testing::Test {
protected:
    void SetUp() override {
        sqlite_options o;
        o.path = dir_.file("engine.db");
        auto st = open_sqlite_store(o);
        ASSERT_TRUE(st.has_value());
        store_ = std::move(*st);
        sub_.id = "sub_engine";
        sub_.tenant = "acme";
        sub_.workflow_id = "wf";
        sub_.retry = {3, backoff_kind::fixed, 1000, 60000, false};
        sub_.created_at = sub_.updated_at = clock_.now_ms();
        ASSERT_TRUE(store_->insert_subscription(sub_).has_value());
    }

    delivery enqueue(const std::string& key) {
        intake_request req;
        req.subscription_id = sub_.id;
        req.tenant = sub_.tenant;
        req.dedup_key = key;
        req.delivery_id = "dlv_" + key;
        req.run_id = "run_" + key;
        req.received_at = req.due_at = clock_.now_ms();
        req.dedup_expires_at = req.received_at + 24LL * 3600 * 1000;
        req.content_json = R"({"source":"webhook","webhook":{}})";
        auto out = store_->intake_sync(req);
        EXPECT_TRUE(out.has_value());
        return store_->get_delivery(req.delivery_id).value();
    }

    delivery_engine_options opts(millis timeout) {
        delivery_engine_options o;
        o.attempt_timeout_ms = timeout;
        return o;
    }

    testing::temp_dir dir_;
    testing::fake_clock clock_;
    testing::seeded_random seeded_{5};
    synchronized_random random_{seeded_};
    std::unique_ptr<store> store_;
    subscription sub_;
};

TEST_F(DeliveryEngineTest, StartRequestCarriesTheAttemptEventAsCausation) {
    testing::scripted_run_starter starter({"wf"});
    delivery_engine engine(*store_, starter, clock_, random_, opts(5000));
    auto d = enqueue("k1");
    EXPECT_EQ(engine.run_due(clock_.now_ms()), 1);
    auto log = store_->run_events_after(d.run_id, -1, 10).value();
    ASSERT_GE(log.size(), 2u);
    EXPECT_EQ(log[1].causation_id, log[0].event_id);
    EXPECT_EQ(store_->get_delivery(d.id)->status, delivery_status::delivered);
}

TEST_F(DeliveryEngineTest, TimedOutAttemptRetriesAndALateAnswerIsIgnored) {
    held_starter starter;
    delivery_engine engine(*store_, starter, clock_, random_, opts(30));
    auto d = enqueue("k2");
    EXPECT_EQ(engine.run_due(clock_.now_ms()), 1); // returns after the attempt timeout
    auto after = store_->get_delivery(d.id).value();
    EXPECT_EQ(after.status, delivery_status::pending);
    EXPECT_EQ(after.attempts, 1);
    EXPECT_EQ(after.last_error, "attempt timed out");
    EXPECT_EQ(after.due_at, clock_.now_ms() + 1000);
    ASSERT_EQ(starter.requests().size(), 1u);
    EXPECT_EQ(starter.requests()[0].delivery_id, d.id);
    for (auto& cb : starter.take()) {
        cb(run_start_result{}); // the late success
    }
    EXPECT_EQ(store_->get_delivery(d.id)->status, delivery_status::pending);
    EXPECT_FALSE(store_->get_run(d.run_id).has_value());
}

TEST_F(DeliveryEngineTest, RetryAfterRaisesTheNextDueTime) {
    testing::scripted_run_starter starter({"wf"});
    starter.set_behaviour("wf", testing::scripted_run_starter::behaviour::transient, 45000);
    delivery_engine engine(*store_, starter, clock_, random_, opts(5000));
    auto d = enqueue("k3");
    engine.run_due(clock_.now_ms());
    EXPECT_EQ(store_->get_delivery(d.id)->due_at, clock_.now_ms() + 45000);
}

TEST_F(DeliveryEngineTest, ThreadedEngineDeliversWithoutRunDue) {
    testing::scripted_run_starter starter({"wf"});
    delivery_engine engine(*store_, starter, clock_, random_, opts(5000));
    std::mutex m;
    std::condition_variable cv;
    int reports = 0;
    engine.set_attempt_listener([&](const attempt_report&) {
        std::lock_guard lock(m);
        ++reports;
        cv.notify_all();
    });
    engine.start();
    auto d = enqueue("k4");
    engine.notify();
    {
        std::unique_lock lock(m);
        EXPECT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return reports >= 1; }));
    }
    engine.stop();
    engine.stop(); // idempotent
    EXPECT_EQ(store_->get_delivery(d.id)->status, delivery_status::delivered);
}

TEST_F(DeliveryEngineTest, StopLeavesFutureWorkForTheNextStart) {
    testing::scripted_run_starter starter({"wf"});
    starter.set_behaviour("wf", testing::scripted_run_starter::behaviour::transient);
    delivery_engine engine(*store_, starter, clock_, random_, opts(5000));
    auto d = enqueue("k5");
    engine.run_due(clock_.now_ms());
    engine.start();
    engine.stop();
    auto after = store_->get_delivery(d.id).value();
    EXPECT_EQ(after.status, delivery_status::pending); // due in the future: not claimed
    EXPECT_EQ(after.attempts, 1);
}

TEST_F(DeliveryEngineTest, ManyDueDeliveriesAreClaimedAndRecordedInAFewCommits) {
    testing::scripted_run_starter starter({"wf"});
    delivery_engine engine(*store_, starter, clock_, random_, opts(5000));
    std::vector<delivery> ds;
    for (int i = 0; i < 50; ++i) {
        ds.push_back(enqueue("many" + std::to_string(i)));
    }
    const auto before = store_->stats().commits;
    EXPECT_EQ(engine.run_due(clock_.now_ms()), 50);
    // One claim and one record transaction for the fifty (a third pass finds nothing due).
    EXPECT_LE(store_->stats().commits - before, 3u);
    for (const auto& d : ds) {
        EXPECT_EQ(store_->get_delivery(d.id)->status, delivery_status::delivered) << d.id;
        auto log = store_->run_events_after(d.run_id, -1, 10).value();
        ASSERT_GE(log.size(), 2u);
        EXPECT_EQ(log[1].causation_id, log[0].event_id);
    }
}

TEST_F(DeliveryEngineTest, FailuresRecordedInOneBatchCountUpAndOpenTheBreakerOnce) {
    sub_.breaker = {3, 60000};
    sub_.retry = {10, backoff_kind::fixed, 1000, 60000, false};
    ASSERT_TRUE(store_->upsert_config_subscription(sub_));
    testing::scripted_run_starter starter({"wf"});
    starter.set_behaviour("wf", testing::scripted_run_starter::behaviour::transient);
    delivery_engine engine(*store_, starter, clock_, random_, opts(5000));
    for (int i = 0; i < 5; ++i) {
        enqueue("fail" + std::to_string(i));
    }
    EXPECT_EQ(engine.run_due(clock_.now_ms()), 5);
    auto sub = store_->get_subscription(sub_.id).value();
    EXPECT_EQ(sub.consecutive_failures, 5);
    EXPECT_EQ(sub.state, sub_state::failed);
    int state_changes = 0;
    for (const auto& e : store_->subscription_events(sub_.id).value()) {
        state_changes += e.type == "trigger.subscription.state.changed";
    }
    EXPECT_EQ(state_changes, 1);
}

TEST_F(DeliveryEngineTest, CompletionReportedByPrepareIsCommittedOnceWithRunStarted) {
    completes_at_once_starter starter;
    delivery_engine engine(*store_, starter, clock_, random_, opts(5000));
    auto d = enqueue("k6");
    EXPECT_EQ(engine.run_due(clock_.now_ms()), 1);
    auto log = store_->run_events_after(d.run_id, -1, 10).value();
    ASSERT_EQ(log.size(), 3u); // attempted, run.started, run.completed: never a second completion
    EXPECT_EQ(log[1].type, "run.started");
    EXPECT_EQ(log[2].type, "run.completed");
    EXPECT_EQ(store_->get_run(d.run_id)->status, run_status::completed);
}

TEST_F(DeliveryEngineTest, ALocalWorkflowWithoutCommandIsCompletedByTheAttemptCommitItself) {
    // Found by CrashIngestTest: a kill between the attempt commit and the appended run.completed
    // left the run `running`, and the restart failed it as interrupted.
    sqlite_options o;
    o.path = dir_.file("killed.db");
    killed_after_commit_store lossy(std::move(open_sqlite_store(o).value()));
    ASSERT_TRUE(lossy.insert_subscription(sub_).has_value());
    auto starter = make_local_run_starter({{"wf", {}, {}, 10000}}, dir_.path().string());
    delivery_engine engine(lossy, *starter, clock_, random_, opts(5000));
    intake_request req;
    req.subscription_id = sub_.id;
    req.tenant = sub_.tenant;
    req.dedup_key = "k7";
    req.delivery_id = "dlv_k7";
    req.run_id = "run_k7";
    req.received_at = req.due_at = clock_.now_ms();
    req.dedup_expires_at = req.received_at + 24LL * 3600 * 1000;
    req.content_json = R"({"source":"webhook","webhook":{}})";
    ASSERT_TRUE(lossy.intake_sync(req).has_value());
    EXPECT_EQ(engine.run_due(clock_.now_ms()), 1);
    EXPECT_EQ(lossy.get_run("run_k7")->status, run_status::completed);
    auto log = lossy.run_events_after("run_k7", -1, 10).value();
    ASSERT_EQ(log.size(), 3u);
    EXPECT_EQ(log[2].type, "run.completed");
    starter->stop();
}

} // namespace
} // namespace wopbridge
