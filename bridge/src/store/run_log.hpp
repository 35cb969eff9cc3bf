#pragma once
// The store's role for runs and their event logs (see store.hpp for the transaction and threading
// rules).

#include "contract/types.hpp"
#include "core/error.hpp"

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace wopbridge {

// Where a page of runs ends: the next page holds runs strictly older in (created_at, id) order.
struct run_position {
    millis created_at = 0;
    std::string id;
};

// A filtered read of one tenant's runs, newest first ((created_at, id) descending).
struct run_query {
    std::string tenant;
    std::string subscription_id;       // "" = any
    std::string workflow_id;           // "" = any
    std::optional<run_status> status;  // none = any
    millis created_from = 0;           // created_at >= created_from
    millis created_to = std::numeric_limits<millis>::max(); // created_at <= created_to
    std::optional<run_position> before; // the previous page's last run
    int limit = 50;
};

class run_log {
public:
    virtual ~run_log() = default;

    // Runs and their event logs. append_run_event assigns the next sequence atomically.
    virtual result<run_record> get_run(const std::string& run_id) = 0;
    virtual result<std::vector<run_event>> run_events_after(const std::string& run_id,
                                                            std::int64_t after_sequence,
                                                            int limit) = 0;
    virtual result<run_event> append_run_event(const std::string& run_id, const std::string& type,
                                               const std::string& payload_json,
                                               const std::string& causation_id,
                                               const std::string& event_id, millis at) = 0;
    virtual result<void> set_run_status(const std::string& run_id, run_status status, millis at) = 0;
    // A run's last event and its terminal status in one transaction: a reader (or a restart) never
    // sees run.completed / run.failed on a run still `running`.
    virtual result<run_event> end_run(const std::string& run_id, const std::string& type,
                                      const std::string& payload_json, const std::string& event_id,
                                      run_status status, millis at) = 0;
    virtual result<std::vector<run_record>> list_runs_with_status(run_status status) = 0;

    // The run-less event log of a subscription (state changes, dead-lettered attempts, and attempts
    // that did not start a run), in order.
    virtual result<std::vector<run_event>> subscription_events(const std::string& subscription_id) = 0;

    // Operator view: up to q.limit runs of q.tenant matching the filters, newest first. A run
    // started by a dead-letter replay has replay_of_attempt_event_id set (from its delivery's
    // dedup key).
    virtual result<std::vector<run_record>> list_runs(const run_query& q) = 0;
};

} // namespace wopbridge
