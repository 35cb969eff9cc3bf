#pragma once
// The ONLY place event payloads (and the in-run TriggerEvent) are built. Every payload is assembled
// from an allow-list of fields (ids, states, counters); no function here accepts inbound content
// except trigger_event_json, whose output is handed to the run and never event-logged.

#include "contract/types.hpp"
#include "core/error.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace wopbridge::events {

inline constexpr std::string_view state_changed_type = "trigger.subscription.state.changed";
inline constexpr std::string_view delivery_attempted_type = "trigger.delivery.attempted";
inline constexpr std::string_view run_started_type = "run.started";
inline constexpr std::string_view run_completed_type = "run.completed";
inline constexpr std::string_view run_failed_type = "run.failed";

// {subscriptionId, source, fromState, toState, reason?}
std::string state_changed_payload(const state_change& c);

// {subscriptionId, dedupKey, attempt, outcome, runId?}; runId only when delivered.
std::string delivery_attempted_payload(const delivery_attempt& a);

struct run_started_fields {
    std::string workflow_id;
    std::string tenant;
    std::string subscription_id;
    std::string delivery_id;
};
// {workflowId, inputs:{}, transport:"rest", owner:{tenant}, metadata:{subscriptionId, deliveryId}}
std::string run_started_payload(const run_started_fields& f);

// {runId, exitCode?}
std::string run_completed_payload(std::string_view run_id, std::optional<int> exit_code = {});
// {runId, reason, exitCode?}; reason is a content-free code such as "exit-status" or "interrupted".
std::string run_failed_payload(std::string_view run_id, std::string_view reason,
                               std::optional<int> exit_code = {});

struct trigger_event_fields {
    source_kind source = source_kind::webhook;
    std::string subscription_id;
    std::string delivery_id;
    millis received_at = 0;
    std::string dedup_key;
    bool verified = false;
};
// CONTRACT (d) "In-run TriggerEvent": source, subscriptionId, deliveryId, receivedAt, dedupKey,
// verified, contentTrust:"untrusted", plus the single per-source object of `content_json`
// ({"webhook":{…}} …). invalid_argument when content_json is not an object with exactly one object
// member.
result<std::string> trigger_event_json(const trigger_event_fields& f, std::string_view content_json);

} // namespace wopbridge::events
