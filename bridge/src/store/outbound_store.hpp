#pragma once
// The store's role for outbound run-event webhooks and their outbox (webhooks.md;
// bridge/src/outbound/; see store.hpp for the transaction and threading rules).

#include "contract/types.hpp"
#include "core/error.hpp"
#include "store/store_page.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace wopbridge {

// A run-event webhook subscription. The secrets are sealed (core/secret_box); reads never carry them.
struct outbound_webhook {
    std::string id;
    std::string tenant;                 // the workspace whose runs it receives
    std::string url;
    std::vector<std::string> events;    // RunEventType values
    std::vector<std::string> tags;
    std::string sealed_secret;          // the host-generated v1 secret
    std::string sealed_standard_secret; // optional subscriber "whsec_" secret (Standard Webhooks)
    std::string secret_fingerprint;     // first 8 hex of sha256(secret)
    sub_state state = sub_state::active;
    int consecutive_failures = 0;
    millis breaker_open_until = 0;      // best-effort breaker: 0 = closed
    millis created_at = 0;
    millis updated_at = 0;
};

// One (webhook, run event) delivery of the outbox. Status: pending, in_flight, delivered, failed
// (best-effort, not retried), skipped (best-effort breaker open), dead_lettered.
struct outbound_delivery {
    std::string id;
    std::string webhook_id;
    std::string run_id;
    std::int64_t sequence = 0;
    std::string event_type;
    std::string status;
    int attempts = 0;
    millis due_at = 0;
    millis created_at = 0;
    std::string last_error; // content-free
};

struct outbound_state_change {
    std::string webhook_id;
    sub_state from = sub_state::active;
    sub_state to = sub_state::active;
    std::string reason; // kebab-case: retry-exhausted, failure-threshold
    millis at = 0;
};

// The outcome of one outbound attempt, written in one transaction.
struct outbound_attempt {
    std::string delivery_id;
    std::string webhook_id;
    millis at = 0;
    std::string status;       // delivered | pending (retry) | failed | skipped | dead_lettered
    bool counted_attempt = true; // false for a breaker skip (nothing was sent)
    bool failure = false;        // a failed send: counted in the 7-day failure window
    millis next_due_at = 0;      // status pending
    std::string error;           // content-free
    int consecutive_failures = 0;
    millis breaker_open_until = 0;
    std::optional<outbound_state_change> state_change;
    millis dead_letter_expires_at = 0; // status dead_lettered
};

struct outbound_dead_letter {
    std::string webhook_id;
    std::string delivery_id;
    std::string run_id;
    std::int64_t sequence = 0;
    std::string event_type;
    int attempts = 0;
    std::string reason; // retries_exhausted
    std::string last_error;
    millis dead_lettered_at = 0;
    millis expires_at = 0;
    std::optional<outbound_state_change> state_change;
};

class outbound_store {
public:
    virtual ~outbound_store() = default;

    // Backends enqueue the outbox rows for every subscribed webhook in the same transaction as
    // the run event (append_run_event / record_attempt); enqueue_outbound does the same explicitly
    // and is idempotent on (webhook_id, run_id, sequence).
    virtual result<void> insert_outbound_webhook(const outbound_webhook& w) = 0;
    virtual result<outbound_webhook> get_outbound_webhook(const std::string& id) = 0;
    virtual result<std::vector<outbound_webhook>> list_outbound_webhooks(const std::string& tenant) = 0;
    virtual result<void> delete_outbound_webhook(const std::string& id) = 0;
    virtual result<int> enqueue_outbound(const std::string& run_id, std::int64_t sequence,
                                         millis at) = 0;
    // Claims up to `limit` due deliveries of active webhooks (pending and due, or in_flight with an
    // expired lease), at most `per_webhook_limit` in flight per webhook, leased until now + lease_ms.
    virtual result<std::vector<outbound_delivery>> claim_outbound_due(millis now, int limit,
                                                                      int per_webhook_limit,
                                                                      millis lease_ms) = 0;
    virtual result<void> record_outbound_attempt(const outbound_attempt& a) = 0;
    // Failed sends of a webhook at or after `since` (the best-effort 7-day window).
    virtual result<int> count_outbound_failures(const std::string& webhook_id, millis since) = 0;
    virtual result<std::optional<millis>> outbound_next_due_at() = 0;
    virtual result<std::vector<outbound_delivery>> list_outbound_deliveries(
        const std::string& webhook_id) = 0;
    // Newest first; a cursor minted for another webhook -> invalid_argument.
    virtual result<page<outbound_dead_letter>> list_outbound_dead_letters(
        const std::string& webhook_id, const page_request& req, millis now) = 0;
    virtual result<std::vector<outbound_state_change>> list_outbound_state_changes(
        const std::string& webhook_id) = 0;
};

} // namespace wopbridge
