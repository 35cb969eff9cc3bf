#include "support/scripted_run_starter.hpp"

#include "contract/events.hpp"

#include <algorithm>

namespace wopbridge::testing {

scripted_run_starter::scripted_run_starter(std::vector<std::string> workflows, bool before_commit)
    : workflows_(std::move(workflows)), before_commit_(before_commit) {}

void scripted_run_starter::set_behaviour(const std::string& workflow, behaviour b, millis retry_after) {
    std::lock_guard lock(mutex_);
    behaviours_[workflow] = {b, retry_after};
}

run_start_result scripted_run_starter::outcome_for(const run_start_request& req) {
    run_start_result r;
    if (std::find(workflows_.begin(), workflows_.end(), req.workflow_id) == workflows_.end()) {
        r.outcome = run_start_result::kind::permanent;
        r.reason = "unknown workflow";
        return r;
    }
    std::pair<behaviour, millis> b{behaviour::complete, 0};
    {
        std::lock_guard lock(mutex_);
        if (auto it = behaviours_.find(req.workflow_id); it != behaviours_.end()) {
            b = it->second;
        }
    }
    switch (b.first) {
    case behaviour::complete:
        r.follow_up_events.emplace_back(std::string(events::run_completed_type),
                                        events::run_completed_payload(req.run_id));
        r.status_after = run_status::completed;
        break;
    case behaviour::keep_running: r.status_after = run_status::running; break;
    case behaviour::transient:
        r.outcome = run_start_result::kind::retry;
        r.retry_after_ms = b.second;
        r.reason = "scripted transient failure";
        break;
    case behaviour::permanent:
        r.outcome = run_start_result::kind::permanent;
        r.reason = "scripted permanent failure";
        break;
    }
    return r;
}

run_start_result scripted_run_starter::prepare(const run_start_request& req) {
    ++prepares_;
    auto r = outcome_for(req);
    if (before_commit_ && r.outcome == run_start_result::kind::started) {
        return {}; // upstream-style: the real answer comes from start()
    }
    return r;
}

void scripted_run_starter::start(const run_start_request& req, run_start_callback done) {
    ++starts_;
    auto r = outcome_for(req);
    if (!before_commit_) {
        r.follow_up_events.clear(); // already committed from prepare()
    }
    done(std::move(r));
}

} // namespace wopbridge::testing
