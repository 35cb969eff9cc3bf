#pragma once
// The OpenWOP trigger-bridge vocabulary (CONTRACT.md (b)-(d)) as plain C++ types.
// No Asio, no Beast, no SQL here: the HTTP layer and the store both speak these types.

#include "core/clock.hpp"
#include "core/error.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wopbridge {

enum class source_kind { webhook, schedule, queue, email, form };
enum class sub_state { active, paused, failed, dead_lettered };
enum class backoff_kind { none, fixed, exponential };
enum class verification_mode { required, best_effort, none };
enum class attempt_outcome { delivered, retrying, dead_lettered };

// `reason` on trigger.subscription.state.changed: the closed kebab-case enum of the contract.
enum class state_reason {
    none, // reason omitted
    retry_exhausted,
    operator_paused,
    signature_invalid,
    backpressure,
    source_removed,
    provenance_unevaluable,
};

// `reason` on a dead-letter record: snake_case, a different enum (CONTRACT.md (i) 10).
enum class dead_letter_reason { verification_failed, retries_exhausted };

std::string_view to_string(source_kind) noexcept;
std::string_view to_string(sub_state) noexcept;
std::string_view to_string(backoff_kind) noexcept;
std::string_view to_string(verification_mode) noexcept;
std::string_view to_string(attempt_outcome) noexcept;
std::string_view to_string(state_reason) noexcept; // "" for none
std::string_view to_string(dead_letter_reason) noexcept;

std::optional<source_kind> parse_source_kind(std::string_view) noexcept;
std::optional<sub_state> parse_sub_state(std::string_view) noexcept;
std::optional<backoff_kind> parse_backoff_kind(std::string_view) noexcept;
std::optional<verification_mode> parse_verification_mode(std::string_view) noexcept;

// Retry schedule (documented in docs/guarantees/retry.md):
//   none        -> every retry is due at once (delay 0)
//   fixed       -> base_delay_ms between attempts
//   exponential -> min(cap_ms, base_delay_ms * 2^(attempt-1)), then "equal jitter": the delay d becomes
//                  d/2 + uniform[0, d/2] when jitter is on.
// A Retry-After from the run host raises the delay to at least that value (never lowers it).
struct retry_policy {
    int max_attempts = 8;
    backoff_kind backoff = backoff_kind::exponential;
    millis base_delay_ms = 1000;
    millis max_delay_ms = 5 * 60 * 1000;
    bool jitter = true;
};

// Circuit breaker that moves a subscription to `failed` (CONTRACT.md (b)): after `failure_threshold`
// consecutive failed attempts across the subscription's deliveries the subscription becomes `failed`;
// while failed, one delivery at a time is tried as a probe every `probe_interval_ms`; a delivered probe
// moves it back to `active`.
struct breaker_policy {
    int failure_threshold = 5;
    millis probe_interval_ms = 30 * 1000;
};

// Schedule of a `source: schedule` subscription: a 5-field cron expression or "@every <duration>".
struct schedule_spec {
    std::string cron;      // "0 2 * * *" or "@every 5m"
    std::string time_zone; // IANA name; empty = UTC
};

// The durable subscription record. Serialized to the wire only through contract/wire.hpp
// (which never emits the sealed secret or connector settings).
struct subscription {
    std::string id;
    std::string tenant = "default";
    source_kind source = source_kind::webhook;
    sub_state state = sub_state::active;
    std::string workflow_id;
    bool dedup_enabled = true;
    retry_policy retry;
    breaker_policy breaker;
    verification_mode verification = verification_mode::required;

    // Webhook source.
    std::string webhook_id;
    // provider: a catalogue entry (bridge/providers/) that verifies this subscription's requests;
    // empty: Standard Webhooks. Declared in the config file only, so held in memory, not stored.
    std::string provider;
    std::string secret_fingerprint; // <= 32 chars, host-keyed, truncated
    std::string sealed_secret;      // AES-GCM sealed signing secret(s); never leaves the store/intake

    // Schedule source.
    std::optional<schedule_spec> schedule;

    // Connector-backed subscriptions: the connector instance name and its per-subscription settings
    // (a JSON object as text, validated by the connector).
    std::string connector;
    std::string connector_settings_json = "{}";

    enum class origin_kind { config, api, seam } origin = origin_kind::api;

    // Breaker bookkeeping (persisted so a restart does not reset it).
    int consecutive_failures = 0;
    millis next_probe_at = 0;

    millis created_at = 0;
    millis updated_at = 0;

    // whenNotActive: hold. While not active, verified inbound events are committed `held` instead of
    // refused with 409, and released in arrival order when the subscription becomes active again.
    bool hold_when_not_active = false;

    // maxConcurrency: attempts of this subscription claimed at once, across the cluster (0 = no
    // bound but delivery.concurrency). 1 starts its runs one at a time, in due order
    // (ordering: perSubscription); a retrying delivery does not hold back the next one.
    int max_concurrency = 0;
};

// A content-free record of one state change: exactly the trigger.subscription.state.changed payload.
struct state_change {
    std::string subscription_id;
    source_kind source = source_kind::webhook;
    sub_state from = sub_state::active;
    sub_state to = sub_state::active;
    state_reason reason = state_reason::none;
};

// Exactly the trigger.delivery.attempted payload.
struct delivery_attempt {
    std::string subscription_id;
    std::string dedup_key;
    int attempt = 1;
    attempt_outcome outcome = attempt_outcome::delivered;
    std::string run_id; // only when delivered
};

// A stored run event (RunEventDoc).
struct run_event {
    std::string event_id;
    std::string run_id;
    std::string type;
    std::string payload_json; // serialized JSON value
    millis timestamp = 0;
    std::int64_t sequence = 0;
    std::string causation_id; // empty = absent
};

enum class delivery_status { pending, in_flight, delivered, dead_lettered, held };
std::string_view to_string(delivery_status) noexcept;

// One inbound event's delivery (content is kept separately and never event-logged).
struct delivery {
    std::string id;
    std::string subscription_id;
    std::string tenant;
    std::string dedup_key;
    std::string run_id;      // reserved at intake; the run this delivery starts
    delivery_status status = delivery_status::pending;
    int attempts = 0;        // attempts made so far
    millis due_at = 0;
    millis received_at = 0;
    millis updated_at = 0;
    std::string last_error;  // content-free reason of the last failed attempt
};

struct dead_letter {
    std::string subscription_id;
    std::string attempt_event_id;
    delivery_attempt attempt;
    std::optional<state_change> caused_state_change;
    dead_letter_reason reason = dead_letter_reason::retries_exhausted;
    millis dead_lettered_at = 0;
    millis expires_at = 0;
    std::string delivery_id; // empty for verification failures (no delivery was created)
};

enum class run_status { pending, running, completed, failed };
std::string_view to_string(run_status) noexcept;

struct run_record {
    std::string id;
    std::string tenant;
    std::string workflow_id;
    std::string subscription_id;
    std::string delivery_id;
    run_status status = run_status::pending;
    std::string upstream_run_id; // set with the upstream run starter
    millis created_at = 0;
    millis updated_at = 0;
    // Appended: set by bridge::get_run when the run was started by a dead-letter replay (the
    // dead-lettered attempt's event id); not stored in the runs table (derived from the delivery).
    std::string replay_of_attempt_event_id;
};

} // namespace wopbridge
