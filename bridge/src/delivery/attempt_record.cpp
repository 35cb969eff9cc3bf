#include "delivery/attempt_record.hpp"

#include "contract/events.hpp"
#include "contract/retry_schedule.hpp"
#include "contract/state_machine.hpp"

#include <boost/json.hpp>

#include <algorithm>

namespace wopbridge {

namespace {
constexpr std::string_view replay_prefix = "replay:";

std::string with_replay_of(const std::string& payload_json, const std::string& attempt_event_id) {
    boost::system::error_code ec;
    auto v = boost::json::parse(payload_json, ec);
    if (ec || !v.is_object()) {
        return payload_json;
    }
    auto& o = v.as_object();
    if (!o["metadata"].is_object()) {
        o["metadata"] = boost::json::object{};
    }
    o["metadata"].as_object()["replayOf"] = attempt_event_id;
    return boost::json::serialize(v);
}

constexpr millis retention_day_ms = 24LL * 3600 * 1000;
} // namespace

std::string replay_dedup_key(std::string_view attempt_event_id) {
    return std::string(replay_prefix) + std::string(attempt_event_id);
}

std::string replay_of(std::string_view dedup_key) {
    if (dedup_key.substr(0, replay_prefix.size()) != replay_prefix) {
        return {};
    }
    return std::string(dedup_key.substr(replay_prefix.size()));
}

namespace delivery_detail {

bool build_record(const delivery_engine::attempt_view& a, const subscription& sub,
                  const run_start_result& res, millis at, const delivery_engine_options& opts,
                  random_source& random, const std::function<std::string()>& mint_event_id,
                  attempt_record& rec) {
    bool delivered = false;
    rec.delivery_id = a.dlv.id;
    rec.subscription_id = sub.id;
    rec.at = at;
    rec.attempt_event_id = a.attempt_event_id;
    rec.attempt.subscription_id = sub.id;
    rec.attempt.dedup_key = a.dlv.dedup_key;
    rec.attempt.attempt = a.dlv.attempts + 1;
    rec.next_probe_at = sub.next_probe_at;

    auto change_to = [&](sub_state to, state_reason reason) {
        if (transition_allowed(sub.state, to)) {
            rec.state_change_caused = state_change{sub.id, sub.source, sub.state, to, reason};
            rec.state_change_event_id = mint_event_id();
        }
    };

    if (res.outcome == run_start_result::kind::started) {
        rec.attempt.outcome = attempt_outcome::delivered;
        rec.attempt.run_id = a.dlv.run_id;
        run_record run;
        run.id = a.dlv.run_id;
        run.tenant = sub.tenant;
        run.workflow_id = sub.workflow_id;
        run.subscription_id = sub.id;
        run.delivery_id = a.dlv.id;
        run.upstream_run_id = res.upstream_run_id;
        run.created_at = at;
        run.updated_at = at;
        // Local: prepare() told what follows run.started (e.g. run.completed for a workflow
        // without a command); upstream: the start result may.
        const auto& follow = res.follow_up_events.empty() ? a.prepared.follow_up_events
                                                          : res.follow_up_events;
        run.status = res.follow_up_events.empty() ? a.prepared.status_after : res.status_after;
        if (run.status == run_status::pending) {
            run.status = run_status::running;
        }
        rec.run = run;
        rec.run_started_event_id = a.run_started_event_id;
        rec.run_started_payload_json = events::run_started_payload(
            {sub.workflow_id, sub.tenant, sub.id, a.dlv.id});
        if (auto of = replay_of(a.dlv.dedup_key); !of.empty()) {
            rec.run_started_payload_json = with_replay_of(rec.run_started_payload_json, of);
        }
        rec.extra_run_events = follow;
        for (std::size_t i = 0; i < follow.size(); ++i) {
            rec.extra_run_event_ids.push_back(mint_event_id());
        }
        rec.consecutive_failures = 0;
        rec.next_probe_at = 0;
        if (sub.state == sub_state::failed) {
            change_to(sub_state::active, state_reason::none); // the probe was delivered
        }
        delivered = true;
    } else {
        rec.error = res.reason.empty() ? "start failed" : res.reason;
        // An active subscription that still carries a probe time was re-activated by an
        // operator while failed (a delivered probe clears it): its count starts afresh, so
        // the first failure after a re-activation does not re-open the breaker at once.
        const bool reactivated = sub.state == sub_state::active && sub.next_probe_at != 0;
        if (reactivated) {
            rec.next_probe_at = 0;
        }
        rec.consecutive_failures = (reactivated ? 0 : sub.consecutive_failures) + 1;
        bool exhausted = res.outcome == run_start_result::kind::permanent ||
                         rec.attempt.attempt >= std::max(1, sub.retry.max_attempts);
        if (exhausted) {
            rec.attempt.outcome = attempt_outcome::dead_lettered;
            rec.dead_letter_expires_at = at + opts.dead_letter_retention_days * retention_day_ms;
            change_to(sub_state::dead_lettered, state_reason::retry_exhausted);
        } else {
            rec.attempt.outcome = attempt_outcome::retrying;
            rec.next_due_at =
                at + retry_delay(sub.retry, rec.attempt.attempt, res.retry_after_ms, &random);
            if (sub.state == sub_state::active &&
                rec.consecutive_failures >= std::max(1, sub.breaker.failure_threshold)) {
                change_to(sub_state::failed, state_reason::none);
                rec.next_probe_at = at + sub.breaker.probe_interval_ms;
            } else if (sub.state == sub_state::failed) {
                rec.next_probe_at = at + sub.breaker.probe_interval_ms;
            }
            if (rec.next_probe_at > 0 &&
                (sub.state == sub_state::failed || rec.state_change_caused)) {
                rec.next_due_at = std::max(rec.next_due_at, rec.next_probe_at);
            }
        }
    }
    return delivered;
}

} // namespace delivery_detail
} // namespace wopbridge
