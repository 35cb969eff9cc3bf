#pragma once
// Outbound run-event webhooks (webhooks.md; CONTRACT.md (c) "Best-effort outbound webhooks" and
// (e)). Registration mints the v1 secret; deliveries come from the store's outbox (rows committed in
// the same transaction as their run event) and are sent by one worker thread over one libcurl multi
// handle, so a slow or dead subscriber holds only its own in-flight slots.
//
// durable = false (default, best-effort): one attempt per event, breaker 4 consecutive failures ->
// skip 1 h -> half-open probe; 100 failures in 7 days -> subscription `failed`.
// durable = true: retried per `retry`, dead-lettered on exhaustion with the subscription moving to
// `dead-lettered` (reason retry-exhausted), like inbound deliveries.

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/secret_box.hpp"
#include "store/store.hpp"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace wopbridge::outbound {

struct dispatcher_options {
    bool durable = false;
    bool allow_loopback_http = false;
    retry_policy retry{8, backoff_kind::exponential, 1000, 5 * 60 * 1000, true};
    millis attempt_timeout_ms = 5000;
    int max_in_flight = 32;           // global
    int per_webhook_in_flight = 2;    // one subscriber never takes more than this
    millis lease_ms = 60 * 1000;      // a claim older than this (crash) is claimable again
    int dead_letter_retention_days = 7;
    int breaker_threshold = 4;
    millis breaker_open_ms = 3600LL * 1000;
    int failure_window_limit = 100;
    millis failure_window_ms = 7LL * 24 * 3600 * 1000;
    std::string version = "0";        // User-Agent openwop-webhook-dispatcher/<version>
};

struct webhook_registration {
    std::string tenant;
    std::string url;
    std::vector<std::string> events;
    std::vector<std::string> tags;
    std::string standard_secret; // optional subscriber "whsec_…" secret (Standard Webhooks headers)
};

struct webhook_registered {
    outbound_webhook record;
    std::string secret; // 64 hex chars; returned exactly once
};

struct registration_error {
    boost::system::error_code code;
    std::string field; // the request's field at fault: url, events, secret, tenant; else empty
    std::string message;
};

class webhook_dispatcher {
public:
    webhook_dispatcher(store& st, secret_box box, clock_source& clock, random_source& random,
                       dispatcher_options opts);
    ~webhook_dispatcher();
    webhook_dispatcher(const webhook_dispatcher&) = delete;
    webhook_dispatcher& operator=(const webhook_dispatcher&) = delete;

    const dispatcher_options& options() const noexcept;

    // A refused field (bad URL, SSRF refusal, empty events, a short secret) is invalid_argument
    // with the field and a content-free reason; a store failure keeps the store's code.
    result<webhook_registered, registration_error> register_webhook(const webhook_registration& req);
    result<std::vector<outbound_webhook>> list(const std::string& tenant);
    result<outbound_webhook> get(const std::string& tenant, const std::string& id);
    result<void> remove(const std::string& tenant, const std::string& id);
    result<page<outbound_dead_letter>> dead_letters(const std::string& tenant,
                                                    const std::string& id,
                                                    const page_request& req);
    result<std::vector<outbound_state_change>> state_changes(const std::string& tenant,
                                                             const std::string& id);

    // The bridge's run-event observer: the outbox row is already committed with the event (SQLite),
    // so this only wakes the worker.
    void on_run_event(const run_event& e);

    // The worker thread (production). stop() waits for in-flight transfers to finish or time out
    // and records them; it is idempotent.
    void start();
    void stop();

    // Deterministic driving (tests, fake clock; do not mix with start()): sends every delivery due
    // at `now` and waits for the answers. Returns the attempts recorded (skips included).
    int run_due(millis now);

    struct impl;

private:
    std::unique_ptr<impl> impl_;
};

} // namespace wopbridge::outbound
