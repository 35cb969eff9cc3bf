#pragma once
// What a process-level connector test asserts on, read from a running `wopbridge serve` through its
// management API (an API key with webhooks:manage and runs:read): a subscription's deliveries and
// state, the ingest outcome counters of /metrics, and each delivery's run log — exactly one
// run.started whose causationId is the eventId of the delivered trigger.delivery.attempted.
// Also: the config prelude every connector test uses.

#include "support/bridge_reads.hpp"
#include "support/child_process.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace wopbridge::testing {

class serve_probe {
public:
    serve_probe(std::string base_url, std::string api_key)
        : base_url_(std::move(base_url)), api_key_(std::move(api_key)) {}

    std::vector<delivery_row> deliveries(const std::string& subscription_id) const;
    std::string subscription_state(const std::string& subscription_id) const; // "" when unreadable
    // wopbridge_ingests_total{subscription, outcome} from /metrics (0 when absent).
    long ingest_count(const std::string& subscription_id, const std::string& outcome) const;

    // Waits (bounded) until the subscription has exactly `count` deliveries, each delivered with its
    // own run, and checks every run's log: one run.started, causationId == the eventId of the
    // delivered trigger.delivery.attempted. `run_ids` gets the runs, oldest first.
    ::testing::AssertionResult runs_started(const std::string& subscription_id, std::size_t count,
                                            std::vector<std::string>* run_ids = nullptr) const;
    // Nothing new was committed (still `count` deliveries) and the subscription is still active.
    ::testing::AssertionResult nothing_started(const std::string& subscription_id,
                                               std::size_t count) const;
    // Waits (bounded) until the run's log ends (run.completed / run.failed).
    bool run_finished(const std::string& run_id) const;

private:
    ::testing::AssertionResult one_start_caused_by_its_attempt(const std::string& run_id) const;
    std::string base_url_;
    std::string api_key_;
};

// The top of a test config: loopback on port 0, an API key `hk_probe` (tenant default) with the
// probe's scopes, the SQLite store and host key under `dir`, and `/metrics`.
std::string probe_config_prelude(const std::string& dir, const std::string& public_url);

// A `runs.local.workflows` entry (YAML, indented for the list) whose command keeps the TriggerEvent
// it receives on stdin as <events_dir>/<runId>.json.
std::string capturing_workflow_yaml(const std::string& workflow_id, const std::string& events_dir);

} // namespace wopbridge::testing
