// The bridge with the real local run starter (config/runs): commands receive the TriggerEvent on
// stdin after run.started is committed, and their exit lands on the run's log.
#include "app/bridge.hpp"

#include "contract/events.hpp"
#include "runs/run_starter.hpp"
#include "store/store.hpp"
#include "support/fake_clock.hpp"
#include "support/temp_dir.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <condition_variable>
#include <fstream>
#include <future>
#include <sstream>

namespace wopbridge {
namespace {
namespace json = boost::json;

class BridgeLocalRunsTest : public ::testing::Test {
protected:
    void SetUp() override {
        settings_.host_key_file = dir_.file("host.key");
        sqlite_options o;
        o.path = dir_.file("bridge.db");
        auto st = open_sqlite_store(o);
        ASSERT_TRUE(st.has_value());
        std::vector<local_workflow> wfs;
        wfs.push_back({"noop", {}, {}, 60000});
        wfs.push_back({"capture", {"/bin/sh", "-c", "cat > trigger.json; exit 0"}, {}, 60000});
        wfs.push_back({"fails", {"/bin/sh", "-c", "cat > /dev/null; exit 3"}, {}, 60000});
        local_run_options lo;
        lo.inherit_output = false;
        auto starter = make_local_run_starter(std::move(wfs), dir_.path().string(), lo);
        bridge_ = std::make_unique<bridge>(settings_, std::move(*st), std::move(starter), clock_, random_);
    }
    void TearDown() override { bridge_.reset(); }

    submit_result submit(const std::string& workflow, const std::string& event_id) {
        registration_request req;
        req.tenant = "acme";
        req.workflow_id = workflow;
        req.verification = verification_mode::none;
        auto reg = bridge_->register_subscription(req);
        EXPECT_TRUE(reg.has_value());
        inbound_submission s;
        s.subscription_id = reg->record.id;
        s.provider_event_id = event_id;
        s.content_json = R"({"webhook":{"method":"POST","headers":{},"body":{"order":42}}})";
        auto p = std::make_shared<std::promise<submit_result>>();
        auto f = p->get_future();
        bridge_->submit(s, [p](submit_result r) { p->set_value(std::move(r)); });
        EXPECT_EQ(f.wait_for(std::chrono::seconds(10)), std::future_status::ready);
        return f.get();
    }

    // Waits (bounded) until the run's log has an event of `type`.
    std::vector<run_event> wait_for_event(const std::string& run_id, std::string_view type) {
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        for (;;) {
            auto log = bridge_->read_events("acme", run_id, -1, 1000).value().events;
            for (const auto& e : log) {
                if (e.type == type) {
                    return log;
                }
            }
            if (std::chrono::steady_clock::now() > deadline) {
                ADD_FAILURE() << "no " << type << " on " << run_id;
                return log;
            }
            std::mutex m;
            std::condition_variable cv;
            bool fired = false;
            auto token = bridge_->watch_run(run_id, log.empty() ? -1 : log.back().sequence, [&] {
                std::lock_guard lock(m);
                fired = true;
                cv.notify_all();
            });
            std::unique_lock lock(m);
            cv.wait_until(lock, deadline, [&] { return fired; });
            lock.unlock();
            bridge_->cancel_watch(token);
        }
    }

    testing::temp_dir dir_;
    testing::fake_clock clock_;
    testing::seeded_random random_{3};
    bridge_settings settings_;
    std::unique_ptr<bridge> bridge_;
};

TEST_F(BridgeLocalRunsTest, WorkflowWithoutCommandCompletesAfterRunStarted) {
    auto res = submit("noop", "evt-noop-1");
    ASSERT_EQ(res.status, submit_status::accepted);
    EXPECT_EQ(bridge_->run_due(clock_.now_ms()), 1);
    auto log = wait_for_event(res.run_id, events::run_completed_type);
    ASSERT_EQ(log.size(), 3u);
    EXPECT_EQ(log[0].type, events::delivery_attempted_type);
    EXPECT_EQ(log[1].type, events::run_started_type);
    EXPECT_EQ(log[1].causation_id, log[0].event_id);
    EXPECT_EQ(log[2].type, events::run_completed_type);
    EXPECT_EQ(bridge_->get_run("acme", res.run_id)->status, run_status::completed);
}

TEST_F(BridgeLocalRunsTest, CommandReceivesTheTriggerEventOnStdin) {
    auto res = submit("capture", "evt-capture-1");
    ASSERT_EQ(res.status, submit_status::accepted);
    bridge_->run_due(clock_.now_ms());
    wait_for_event(res.run_id, events::run_completed_type);
    std::ifstream in(dir_.file("trigger.json"));
    std::stringstream text;
    text << in.rdbuf();
    auto ev = json::parse(text.str()).as_object();
    EXPECT_EQ(ev.at("contentTrust"), "untrusted");
    EXPECT_EQ(ev.at("source"), "webhook");
    EXPECT_EQ(ev.at("deliveryId").as_string(), res.delivery_id);
    EXPECT_EQ(ev.at("webhook").as_object().at("body").as_object().at("order"), 42);
    EXPECT_EQ(bridge_->get_run("acme", res.run_id)->status, run_status::completed);
}

TEST_F(BridgeLocalRunsTest, NonZeroExitFailsTheRun) {
    auto res = submit("fails", "evt-fails-1");
    bridge_->run_due(clock_.now_ms());
    auto log = wait_for_event(res.run_id, events::run_failed_type);
    auto p = json::parse(log.back().payload_json).as_object();
    EXPECT_EQ(p.at("exitCode"), 3);
    EXPECT_EQ(bridge_->get_run("acme", res.run_id)->status, run_status::failed);
    // The run failed, the delivery did not: it is not retried.
    EXPECT_EQ(bridge_->run_due(clock_.now_ms() + 3600 * 1000), 0);
}

} // namespace
} // namespace wopbridge
