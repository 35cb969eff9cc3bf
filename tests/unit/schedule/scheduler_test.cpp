#include "schedule/scheduler.hpp"

#include "support/fake_clock.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <map>
#include <set>

namespace wopbridge {
namespace {

constexpr millis minute = 60 * 1000;

class SchedulerTest : public ::testing::Test {
protected:
    testing::fake_clock clock_{1767225600000}; // 2026-01-01T00:00:00Z
    std::vector<inbound_submission> submitted_;
    std::map<std::string, sub_state> states_;
    std::set<std::string> dedup_; // stands in for the bridge's unique (subscription, key) constraint

    scheduler::submit_fn sink() {
        return [this](const inbound_submission& s) {
            if (dedup_.insert(s.subscription_id + "|" + s.provider_event_id).second) {
                submitted_.push_back(s);
            }
        };
    }
    scheduler::state_fn states() {
        return [this](const std::string& id) -> std::optional<sub_state> {
            auto it = states_.find(id);
            return it == states_.end() ? std::nullopt : std::optional<sub_state>(it->second);
        };
    }
    static subscription schedule_sub(std::string id, std::string cron) {
        subscription s;
        s.id = std::move(id);
        s.source = source_kind::schedule;
        s.schedule = schedule_spec{std::move(cron), ""};
        return s;
    }
};

TEST_F(SchedulerTest, FiresOncePerTick) {
    scheduler sch(clock_, sink(), states());
    states_["every5"] = sub_state::active;
    EXPECT_TRUE(sch.update({schedule_sub("every5", "*/5 * * * *")}).empty());
    EXPECT_EQ(sch.next_tick("every5"), clock_.now_ms() + 5 * minute);

    EXPECT_EQ(sch.run_due(clock_.now_ms() + 4 * minute), 0);
    EXPECT_EQ(sch.run_due(clock_.now_ms() + 5 * minute), 1);
    EXPECT_EQ(sch.run_due(clock_.now_ms() + 5 * minute), 0); // same instant again: nothing
    EXPECT_EQ(sch.run_due(clock_.now_ms() + 6 * minute), 0);
    EXPECT_EQ(sch.run_due(clock_.now_ms() + 10 * minute), 1);
    ASSERT_EQ(submitted_.size(), 2u);

    const auto& first = submitted_[0];
    const millis tick = clock_.now_ms() + 5 * minute;
    EXPECT_EQ(first.subscription_id, "every5");
    EXPECT_EQ(first.provider_event_id, "tick:" + std::to_string(tick));
    EXPECT_EQ(first.received_at, tick);
    EXPECT_TRUE(first.verified);
    auto json = boost::json::parse(first.content_json).as_object();
    EXPECT_EQ(json.size(), 1u);
    EXPECT_EQ(json.at("schedule").at("scheduledAt").as_string(), "2026-01-01T00:05:00.000Z");
    EXPECT_EQ(json.at("schedule").at("cron").as_string(), "*/5 * * * *");
}

TEST_F(SchedulerTest, LateWakeUpFiresOnlyTheLatestTick) {
    scheduler sch(clock_, sink(), states());
    states_["m"] = sub_state::active;
    sch.update({schedule_sub("m", "* * * * *")});
    EXPECT_EQ(sch.run_due(clock_.now_ms() + 30 * minute), 1);
    ASSERT_EQ(submitted_.size(), 1u);
    EXPECT_EQ(submitted_[0].received_at, clock_.now_ms() + 30 * minute);
    EXPECT_EQ(sch.next_tick("m"), clock_.now_ms() + 31 * minute);
}

TEST_F(SchedulerTest, RestartAfterLongGapSkipsMissedTicks) {
    states_["hourly"] = sub_state::active;
    {
        scheduler sch(clock_, sink(), states());
        sch.update({schedule_sub("hourly", "@hourly")});
        clock_.advance(60 * minute);
        EXPECT_EQ(sch.run_due(clock_.now_ms()), 1);
    }
    clock_.advance(10 * 60 * minute + 5 * minute); // down for ten hours
    scheduler restarted(clock_, sink(), states());
    restarted.update({schedule_sub("hourly", "@hourly")});
    EXPECT_EQ(restarted.run_due(clock_.now_ms()), 0); // no catch-up burst
    EXPECT_EQ(restarted.next_tick("hourly"), clock_.now_ms() + 55 * minute);
    clock_.advance(55 * minute);
    EXPECT_EQ(restarted.run_due(clock_.now_ms()), 1);
    EXPECT_EQ(submitted_.size(), 2u);
}

TEST_F(SchedulerTest, TwoInstancesSubmitTheSameTickKey) {
    states_["s"] = sub_state::active;
    scheduler a(clock_, sink(), states());
    scheduler b(clock_, sink(), states());
    a.update({schedule_sub("s", "@every 1m")});
    b.update({schedule_sub("s", "@every 1m")});
    a.run_due(clock_.now_ms() + minute);
    b.run_due(clock_.now_ms() + minute);
    EXPECT_EQ(submitted_.size(), 1u); // the dedup constraint keeps one: same provider_event_id
}

TEST_F(SchedulerTest, PausedSkipsTicksAndResumeStartsFresh) {
    scheduler sch(clock_, sink(), states());
    states_["p"] = sub_state::paused;
    sch.update({schedule_sub("p", "*/10 * * * *")});
    EXPECT_EQ(sch.run_due(clock_.now_ms() + 10 * minute), 0);
    EXPECT_EQ(sch.run_due(clock_.now_ms() + 20 * minute), 0);
    states_["p"] = sub_state::active; // resumed at +25m
    EXPECT_EQ(sch.run_due(clock_.now_ms() + 25 * minute), 0); // no replay of skipped ticks
    EXPECT_EQ(sch.run_due(clock_.now_ms() + 30 * minute), 1);
    ASSERT_EQ(submitted_.size(), 1u);
    EXPECT_EQ(submitted_[0].received_at, clock_.now_ms() + 30 * minute);
}

TEST_F(SchedulerTest, UpdateKeepsUnchangedAndReportsInvalid) {
    scheduler sch(clock_, sink(), states());
    auto errors = sch.update({schedule_sub("a", "0 * * * *"), schedule_sub("bad", "99 * * * *")});
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0], "subscription bad: minute field: 99 is out of range 0-59");
    EXPECT_FALSE(sch.next_tick("bad"));
    auto before = sch.next_tick("a");
    clock_.advance(90 * minute);
    sch.update({schedule_sub("a", "0 * * * *")});
    EXPECT_EQ(sch.next_tick("a"), before);
    sch.update({});
    EXPECT_FALSE(sch.next_tick("a"));
}

TEST_F(SchedulerTest, ThreadFiresAtTheTick) {
    system_clock_source real;
    std::mutex mu;
    std::condition_variable cv;
    int fired = 0;
    scheduler sch(real, [&](const inbound_submission&) {
        std::lock_guard lock(mu);
        ++fired;
        cv.notify_all();
    });
    sch.start();
    sch.update({schedule_sub("fast", "@every 1s")});
    std::unique_lock lock(mu);
    EXPECT_TRUE(cv.wait_for(lock, std::chrono::seconds(5), [&] { return fired >= 1; }));
    lock.unlock();
    sch.stop();
}

} // namespace
} // namespace wopbridge
