#pragma once
// Fires `source: schedule` subscriptions. Each tick becomes an inbound_submission whose
// provider_event_id is "tick:<epoch ms>", so the bridge's dedup constraint (one transaction, unique
// key) makes a tick fire exactly once even when several nodes or a restarted process submit it.
// Semantics (docs/guarantees/schedules.md):
//   - next tick computed from NOW when a schedule is (re)loaded: ticks missed while down are skipped;
//   - a late wake-up (suspend, clock jump) fires at most the latest due tick, never a burst;
//   - a subscription that is not active at tick time skips the tick; resume picks the next tick.
// One thread waits on a condition variable until the earliest tick; run_due() is the deterministic
// entry point tests drive with a fake clock.

#include "contract/intake.hpp"
#include "contract/types.hpp"
#include "core/clock.hpp"
#include "schedule/cron.hpp"

#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace wopbridge {

class scheduler {
public:
    using submit_fn = std::function<void(const inbound_submission&)>;
    // Current state of a subscription (nullopt = gone: the tick is skipped).
    using state_fn = std::function<std::optional<sub_state>(const std::string& subscription_id)>;

    // `state` may be empty: the state from the last update() is used then.
    scheduler(clock_source& clock, submit_fn submit, state_fn state = {});
    ~scheduler();
    scheduler(const scheduler&) = delete;
    scheduler& operator=(const scheduler&) = delete;

    // Replaces the set of schedules (non-schedule subscriptions are ignored). Unchanged schedules
    // keep their next tick; new or changed ones start from the next tick after now. Returns one
    // content-free message per schedule that could not be parsed (those are not scheduled).
    std::vector<std::string> update(const std::vector<subscription>& subs);

    void start(); // the waiting thread
    void stop();  // idempotent

    // Fires every schedule whose tick is <= now (at most once each); returns how many were submitted.
    int run_due(millis now);

    std::optional<millis> next_tick(const std::string& subscription_id) const;
    std::optional<millis> earliest_tick() const;

    // The submission for one tick (exposed for tests and the conformance tick seam).
    static inbound_submission make_tick(const std::string& subscription_id, const cron_expr& expr,
                                        millis tick);

private:
    struct entry {
        cron_expr expr;
        std::string cron_text;
        std::string time_zone;
        std::optional<millis> next;
        sub_state state = sub_state::active;
    };

    clock_source& clock_;
    submit_fn submit_;
    state_fn state_;
    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::map<std::string, entry> entries_;
    bool stopping_ = false;
    std::uint64_t generation_ = 0; // bumped by update() so the waiting thread re-plans
    std::thread thread_;

    void loop();
};

} // namespace wopbridge
