#pragma once
// Reads of a running bridge over its REST API for process-level tests: every delivery of a
// subscription (all pages), one run, a signed Standard Webhooks ingest.

#include "support/http_client.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace wopbridge::testing {

struct delivery_row {
    std::string delivery_id;
    std::string dedup_key;
    std::string status;
    std::string run_id;
    int attempts = 0;
    std::string due_at;      // ISO 8601 as served
    std::string last_error;
};

// GET /v1/trigger-subscriptions/{id}/deliveries until the last page. `ok` false on any non-200.
std::vector<delivery_row> read_all_deliveries(const std::string& base_url,
                                              const std::string& api_key,
                                              const std::string& subscription_id, bool& ok);

// GET /v1/runs/{id}: the status code and the run's "status" ("" when absent).
struct run_read {
    long http_status = 0;
    std::string status;
    std::string upstream_run_id;
};
run_read read_run(const std::string& base_url, const std::string& api_key,
                  const std::string& run_id);

// The subscription's state ("active", "failed", ...) or "" when it cannot be read.
std::string read_subscription_state(const std::string& base_url, const std::string& api_key,
                                    const std::string& subscription_id);

// A signed POST /v1/ingest/{subscription} call (Standard Webhooks, signed now).
http_call signed_ingest_call(const std::string& base_url, const std::string& subscription_id,
                             const std::string& secret, const std::string& webhook_id,
                             const std::string& body, long timeout_ms = 10000);

// "runId" / "outcome" of an ingest answer ("" when absent or not JSON).
std::string json_string_field(const std::string& body, const std::string& name);

} // namespace wopbridge::testing
