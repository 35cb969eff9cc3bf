#include "contract/wire.hpp"

#include <boost/json/parse.hpp>

#include <array>
#include <utility>

namespace wopbridge::wire {

namespace json = boost::json;

namespace {

template <class E, std::size_t N>
std::optional<E> lookup(const std::array<std::pair<E, std::string_view>, N>& table,
                        std::string_view text) noexcept {
    for (const auto& [e, n] : table) {
        if (n == text) {
            return e;
        }
    }
    return std::nullopt;
}

template <class E, std::size_t N>
std::string_view lookup(const std::array<std::pair<E, std::string_view>, N>& table, E e) noexcept {
    for (const auto& [k, n] : table) {
        if (k == e) {
            return n;
        }
    }
    return "";
}

constexpr std::array<std::pair<source_kind, std::string_view>, 5> sources{{
    {source_kind::webhook, "webhook"},
    {source_kind::schedule, "schedule"},
    {source_kind::queue, "queue"},
    {source_kind::email, "email"},
    {source_kind::form, "form"},
}};
constexpr std::array<std::pair<sub_state, std::string_view>, 4> states{{
    {sub_state::active, "active"},
    {sub_state::paused, "paused"},
    {sub_state::failed, "failed"},
    {sub_state::dead_lettered, "dead-lettered"},
}};
constexpr std::array<std::pair<backoff_kind, std::string_view>, 3> backoffs{{
    {backoff_kind::none, "none"},
    {backoff_kind::fixed, "fixed"},
    {backoff_kind::exponential, "exponential"},
}};
constexpr std::array<std::pair<verification_mode, std::string_view>, 3> verifications{{
    {verification_mode::required, "required"},
    {verification_mode::best_effort, "best-effort"},
    {verification_mode::none, "none"},
}};
constexpr std::array<std::pair<attempt_outcome, std::string_view>, 3> outcomes{{
    {attempt_outcome::delivered, "delivered"},
    {attempt_outcome::retrying, "retrying"},
    {attempt_outcome::dead_lettered, "dead-lettered"},
}};
constexpr std::array<std::pair<state_reason, std::string_view>, 7> reasons{{
    {state_reason::none, ""},
    {state_reason::retry_exhausted, "retry-exhausted"},
    {state_reason::operator_paused, "operator-paused"},
    {state_reason::signature_invalid, "signature-invalid"},
    {state_reason::backpressure, "backpressure"},
    {state_reason::source_removed, "source-removed"},
    {state_reason::provenance_unevaluable, "provenance-unevaluable"},
}};
constexpr std::array<std::pair<dead_letter_reason, std::string_view>, 2> dl_reasons{{
    {dead_letter_reason::verification_failed, "verification_failed"},
    {dead_letter_reason::retries_exhausted, "retries_exhausted"},
}};
constexpr std::array<std::pair<delivery_status, std::string_view>, 5> delivery_states{{
    {delivery_status::pending, "pending"},
    {delivery_status::in_flight, "in_flight"},
    {delivery_status::delivered, "delivered"},
    {delivery_status::dead_lettered, "dead_lettered"},
    {delivery_status::held, "held"},
}};

std::string_view delivery_status_name(delivery_status s) noexcept {
    for (const auto& [k, n] : delivery_states) {
        if (k == s) {
            return n;
        }
    }
    return "";
}
constexpr std::array<std::pair<run_status, std::string_view>, 4> run_states{{
    {run_status::pending, "pending"},
    {run_status::running, "running"},
    {run_status::completed, "completed"},
    {run_status::failed, "failed"},
}};

} // namespace

std::string_view name(source_kind k) noexcept { return lookup(sources, k); }
std::string_view name(sub_state s) noexcept { return lookup(states, s); }
std::string_view name(backoff_kind b) noexcept { return lookup(backoffs, b); }
std::string_view name(verification_mode v) noexcept { return lookup(verifications, v); }
std::string_view name(attempt_outcome o) noexcept { return lookup(outcomes, o); }
std::string_view name(state_reason r) noexcept { return lookup(reasons, r); }
std::string_view name(dead_letter_reason r) noexcept { return lookup(dl_reasons, r); }
std::string_view name(delivery_status s) noexcept { return lookup(delivery_states, s); }
std::string_view name(run_status s) noexcept { return lookup(run_states, s); }

std::optional<source_kind> parse_source(std::string_view t) noexcept { return lookup(sources, t); }
std::optional<sub_state> parse_state(std::string_view t) noexcept { return lookup(states, t); }
std::optional<backoff_kind> parse_backoff(std::string_view t) noexcept {
    return lookup(backoffs, t);
}
std::optional<verification_mode> parse_verification(std::string_view t) noexcept {
    return lookup(verifications, t);
}

bool is_terminal_run_event(std::string_view type) noexcept {
    return type == "run.completed" || type == "run.failed" || type == "run.cancelled" ||
           type == "run.dead_lettered";
}

json::object retry_policy(const wopbridge::retry_policy& p) {
    json::object o;
    o["maxAttempts"] = p.max_attempts;
    o["backoff"] = name(p.backoff);
    return o;
}

json::object subscription(const wopbridge::subscription& s) {
    json::object o;
    o["subscriptionId"] = s.id;
    o["source"] = name(s.source);
    o["state"] = name(s.state);
    o["dedupEnabled"] = s.dedup_enabled;
    o["retryPolicy"] = retry_policy(s.retry);
    if (s.source == source_kind::webhook) {
        if (!s.webhook_id.empty()) {
            o["webhookId"] = s.webhook_id;
        }
        // Never longer than the schema's 32: a full digest would be an oracle.
        if (!s.secret_fingerprint.empty()) {
            o["secretFingerprint"] = s.secret_fingerprint.substr(0, 32);
        }
    }
    return o;
}

json::object delivery_summary(const wopbridge::delivery& d) {
    // schemas/wopbridge/deliveries-page.schema.json#/$defs/delivery (closed).
    json::object o;
    o["deliveryId"] = d.id;
    o["subscriptionId"] = d.subscription_id;
    if (!d.dedup_key.empty()) {
        o["dedupKey"] = d.dedup_key; // host-opaque
    }
    o["status"] = delivery_status_name(d.status);
    o["attempts"] = d.attempts;
    if (!d.run_id.empty() && d.status != delivery_status::dead_lettered) {
        o["runId"] = d.run_id;
    }
    o["receivedAt"] = format_iso8601(d.received_at);
    if (d.updated_at > 0) {
        o["updatedAt"] = format_iso8601(d.updated_at);
    }
    if (d.due_at > 0) {
        o["dueAt"] = format_iso8601(d.due_at);
    }
    if (!d.last_error.empty()) {
        o["lastError"] = d.last_error.substr(0, 256);
    }
    return o;
}

json::object delivery_attempt(const wopbridge::delivery_attempt& a) {
    json::object o;
    o["subscriptionId"] = a.subscription_id;
    o["dedupKey"] = a.dedup_key;
    o["attempt"] = a.attempt;
    o["outcome"] = name(a.outcome);
    if (a.outcome == attempt_outcome::delivered && !a.run_id.empty()) {
        o["runId"] = a.run_id;
    }
    return o;
}

json::object state_change(const wopbridge::state_change& c) {
    json::object o;
    o["subscriptionId"] = c.subscription_id;
    o["source"] = name(c.source);
    o["fromState"] = name(c.from);
    o["toState"] = name(c.to);
    if (c.reason != state_reason::none) {
        o["reason"] = name(c.reason);
    }
    return o;
}

json::object dead_letter(const wopbridge::dead_letter& d) {
    json::object o;
    o["subscriptionId"] = d.subscription_id;
    o["attemptEventId"] = d.attempt_event_id;
    auto attempt = d.attempt;
    attempt.outcome = attempt_outcome::dead_lettered; // the record is of the dead-lettered attempt
    o["attempt"] = delivery_attempt(attempt);
    if (d.caused_state_change && d.reason != dead_letter_reason::verification_failed) {
        o["stateChange"] = state_change(*d.caused_state_change);
    }
    o["reason"] = name(d.reason);
    o["deadLetteredAt"] = format_iso8601(d.dead_lettered_at);
    o["expiresAt"] = format_iso8601(d.expires_at);
    return o;
}

json::object run_event(const wopbridge::run_event& e) {
    json::object o;
    o["eventId"] = e.event_id;
    o["runId"] = e.run_id;
    o["type"] = e.type;
    boost::system::error_code ec;
    json::value payload = e.payload_json.empty() ? json::value(json::object())
                                                 : json::parse(e.payload_json, ec);
    if (ec) {
        payload = json::object();
    }
    o["payload"] = std::move(payload);
    o["timestamp"] = format_iso8601(e.timestamp);
    o["sequence"] = e.sequence;
    if (!e.causation_id.empty()) {
        o["causationId"] = e.causation_id;
    }
    return o;
}

json::object run_snapshot(const wopbridge::run_record& r) {
    json::object o;
    o["runId"] = r.id;
    o["workflowId"] = r.workflow_id;
    o["status"] = name(r.status);
    o["createdAt"] = format_iso8601(r.created_at);
    o["updatedAt"] = format_iso8601(r.updated_at);
    o["subscriptionId"] = r.subscription_id;
    o["deliveryId"] = r.delivery_id;
    if (!r.upstream_run_id.empty()) {
        o["upstreamRunId"] = r.upstream_run_id;
    }
    if (!r.replay_of_attempt_event_id.empty()) {
        // Provenance of a replayed run: the dead letter it replays (same subscription).
        o["replayOf"] = json::object{{"subscriptionId", r.subscription_id},
                                     {"attemptEventId", r.replay_of_attempt_event_id}};
    }
    return o;
}

} // namespace wopbridge::wire
