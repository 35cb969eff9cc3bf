#pragma once
// Backend-neutral pieces every store backend shares: the stored names of the enums, the two
// content-free audit payloads (built from allow-listed fields only) and the opaque page cursor.

#include "contract/types.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace wopbridge::store_codec {

inline constexpr std::string_view event_state_changed = "trigger.subscription.state.changed";
inline constexpr std::string_view event_delivery_attempted = "trigger.delivery.attempted";
inline constexpr std::string_view event_run_started = "run.started";

// Wire spellings (CONTRACT.md): also the spellings stored in the database.
std::string_view name_of(source_kind) noexcept;
std::string_view name_of(sub_state) noexcept;
std::string_view name_of(backoff_kind) noexcept;
std::string_view name_of(verification_mode) noexcept;
std::string_view name_of(attempt_outcome) noexcept;
std::string_view name_of(state_reason) noexcept; // "" for none
std::string_view name_of(dead_letter_reason) noexcept;
std::string_view name_of(delivery_status) noexcept;
std::string_view name_of(run_status) noexcept;
std::string_view name_of(subscription::origin_kind) noexcept;

// Unknown spellings yield nullopt (a newer writer or a corrupt row; callers report internal).
std::optional<source_kind> source_from(std::string_view) noexcept;
std::optional<sub_state> state_from(std::string_view) noexcept;
std::optional<backoff_kind> backoff_from(std::string_view) noexcept;
std::optional<verification_mode> verification_from(std::string_view) noexcept;
std::optional<attempt_outcome> outcome_from(std::string_view) noexcept;
std::optional<state_reason> reason_from(std::string_view) noexcept;
std::optional<dead_letter_reason> dead_letter_reason_from(std::string_view) noexcept;
std::optional<delivery_status> delivery_status_from(std::string_view) noexcept;
std::optional<run_status> run_status_from(std::string_view) noexcept;
std::optional<subscription::origin_kind> origin_from(std::string_view) noexcept;

// {"subscriptionId","dedupKey","attempt","outcome"[,"runId" only when delivered]}
std::string attempt_payload_json(const delivery_attempt& a);
// {"subscriptionId","source","fromState","toState"[,"reason"]}
std::string state_change_payload_json(const state_change& c);

// The attempt event id a dead-letter replay's delivery carries in its dedup key
// ("replay:<attemptEventId>", delivery/delivery_engine.hpp); "" for any other key.
std::string replay_of_dedup_key(std::string_view dedup_key);

// Opaque page cursor: base64url of {"c": collection, "s": subscription id, "k": last sort key}.
std::string encode_cursor(std::string_view collection, std::string_view subscription_id,
                          std::int64_t key);
// nullopt when the text is garbage or was minted for another collection or subscription.
std::optional<std::int64_t> decode_cursor(std::string_view cursor, std::string_view collection,
                                          std::string_view subscription_id);

} // namespace wopbridge::store_codec
