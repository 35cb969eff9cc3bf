#pragma once
// What the bridge (app/bridge.hpp) is configured with, filled from the config file by
// make_bridge_settings (config/config.hpp). A plain value type, so config/ needs nothing of app/.

#include "contract/types.hpp"
#include "core/clock.hpp"
#include "core/rate_limiter.hpp"

#include <string>
#include <vector>

namespace wopbridge {

struct bridge_settings {
    std::string public_url = "http://127.0.0.1:8080"; // base for ingestUrl
    retry_policy default_retry;
    breaker_policy default_breaker;
    millis dedup_retention_ms = 24LL * 3600 * 1000; // never below 24 h
    // Shared stores: a beat per node_beat_ms; a node silent past node_timeout_ms has its claims
    // freed for the others (app/node_liveness.hpp).
    millis node_beat_ms = 1000;
    millis node_timeout_ms = 10000;
    int dead_letter_retention_days = 7;
    rate_limit refused_records_per_subscription{0.2, 100}; // deadLetter.refusedSignatureRecords
    rate_limit refused_records_total{1, 1000};
    int dead_letter_max_page_size = 100;
    int max_in_flight_deliveries = 1024;
    int delivery_batch_size = 256;
    int max_pending_intake = 10000;   // bounded intake queue; past it submissions answer overloaded
    millis delivery_lease_ms = 60 * 1000;
    millis attempt_timeout_ms = 30 * 1000;
    bool test_seams = false;
    std::vector<std::string> local_workflows; // workflow ids the run starter can start
    std::string host_key_file;        // 32 random bytes; created 0600 when absent
    millis housekeeping_interval_ms = 5 * 60 * 1000; // purge_expired period (real time)
    int replay_failure_limit = 5;     // consecutive failed replays that stop a bulk job
    millis replay_job_lease_ms = 30 * 1000; // a bulk job's node renews it; past it another resumes
    millis replay_job_poll_ms = 2000; // real time between looks for jobs whose lease ran out
    // Outbound run-event webhooks (config `webhooks:`; bridge/src/outbound/).
    bool webhooks_durable = false;             // retries + dead letters instead of best effort
    bool webhooks_allow_loopback_http = false; // admit http://127.0.0.1:<port> (tests, local dev)
};

} // namespace wopbridge
