#pragma once
// The only place contract records become wire JSON (CONTRACT.md (b)-(d)). Every builder emits the
// closed shape of its schema from an allow-list of fields: secrets (sealed secret, connector
// settings) and inbound content are never serialized.

#include "contract/types.hpp"

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <optional>
#include <string_view>

namespace wopbridge::wire {

// TriggerSubscription (trigger-subscription.schema.json, closed).
boost::json::object subscription(const wopbridge::subscription& s);
// {maxAttempts, backoff}
boost::json::object retry_policy(const wopbridge::retry_policy& p);
// Content-free delivery record (schemas/wopbridge/deliveries-page.schema.json#/$defs/delivery):
// {deliveryId, subscriptionId, dedupKey?, status, attempts, runId?, receivedAt, updatedAt?, dueAt?,
//  lastError?}.
boost::json::object delivery_summary(const wopbridge::delivery& d);
// trigger.delivery.attempted payload.
boost::json::object delivery_attempt(const wopbridge::delivery_attempt& a);
// trigger.subscription.state.changed payload.
boost::json::object state_change(const wopbridge::state_change& c);
// deadLetteredTriggerDelivery (trigger-dead-letter-page.schema.json, closed).
boost::json::object dead_letter(const wopbridge::dead_letter& d);
// RunEventDoc (run-event.schema.json, closed).
boost::json::object run_event(const wopbridge::run_event& e);
// RunSnapshot: {runId, workflowId, status, createdAt, updatedAt, subscriptionId, deliveryId,
// upstreamRunId?}.
boost::json::object run_snapshot(const wopbridge::run_record& r);

// Wire spellings (kept here so the HTTP layer does not depend on where types.cpp lives).
std::string_view name(source_kind k) noexcept;
std::string_view name(sub_state s) noexcept;
std::string_view name(backoff_kind b) noexcept;
std::string_view name(verification_mode v) noexcept;
std::string_view name(attempt_outcome o) noexcept;
std::string_view name(state_reason r) noexcept; // "" for none
std::string_view name(dead_letter_reason r) noexcept;
std::string_view name(delivery_status s) noexcept;
std::string_view name(run_status s) noexcept;

std::optional<source_kind> parse_source(std::string_view) noexcept;
std::optional<sub_state> parse_state(std::string_view) noexcept;
std::optional<backoff_kind> parse_backoff(std::string_view) noexcept;
std::optional<verification_mode> parse_verification(std::string_view) noexcept;

// True for the run-event types after which a run's log never grows.
bool is_terminal_run_event(std::string_view type) noexcept;

} // namespace wopbridge::wire
