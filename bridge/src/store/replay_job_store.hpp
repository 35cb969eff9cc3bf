#pragma once
// The store's role for bulk dead-letter replay jobs (SQLite migration 8, PostgreSQL migration 7;
// see store.hpp for the transaction and threading rules).

#include "contract/types.hpp"
#include "core/error.hpp"

#include <string>
#include <vector>

namespace wopbridge {

// One dead letter a job selected, in selection order (oldest first).
struct replay_job_item {
    int position = 0;
    std::string attempt_event_id;
    std::string delivery_id; // the replay's delivery, once its intake committed
    // selected (not replayed yet) | replayed (committed, outcome unknown) | delivered | failed
    std::string outcome = "selected";
};

struct replay_job_record {
    std::string id;
    std::string tenant;
    std::string subscription_id;
    std::string state = "running"; // running | completed | stopped
    double rate_per_second = 1;
    int total = 0;
    int replayed = 0;
    int delivered = 0;
    int failed = 0;
    int consecutive_failures = 0;
    millis started_at = 0;
    millis finished_at = 0; // 0 while running
    millis expires_at = 0;  // a finished job's record is purged then (0 while running)
    std::string owner;      // the node running it; its lease runs until lease_until
    millis lease_until = 0;
};

// Progress of a job, written in one transaction by the node that holds its lease: the changed
// items and the job's counters (absolute values). Refused with conflict when the job is no longer
// running under `owner` (another node took it over after the lease ran out, or it finished).
struct replay_job_update {
    std::string job_id;
    std::string owner;
    millis lease_until = 0; // renewed
    std::vector<replay_job_item> items; // by position: delivery_id and outcome
    int replayed = 0;
    int delivered = 0;
    int failed = 0;
    int consecutive_failures = 0;
    std::string state = "running";
    millis finished_at = 0;
    millis expires_at = 0;
};

class replay_job_store {
public:
    virtual ~replay_job_store() = default;

    // The job (owned by job.owner until job.lease_until) and its selection, in one transaction.
    virtual result<void> create_replay_job(const replay_job_record& job,
                                           const std::vector<std::string>& attempt_event_ids) = 0;
    virtual result<replay_job_record> get_replay_job(const std::string& id) = 0; // not_found
    // The items of a job not settled yet (selected or replayed), by position.
    virtual result<std::vector<replay_job_item>> unsettled_replay_job_items(
        const std::string& job_id) = 0;
    virtual result<void> update_replay_job(const replay_job_update& u) = 0;
    // Running jobs whose lease ran out (their node died or let go): leased to `owner` until
    // now + lease_ms and returned. Across nodes each is taken by one.
    virtual result<std::vector<replay_job_record>> claim_replay_jobs(const std::string& owner,
                                                                     millis now,
                                                                     millis lease_ms) = 0;
    // Lets go of the leases `owner` holds (a clean stop), so a restart or another node resumes
    // its jobs at once. Returns how many.
    virtual result<int> release_replay_jobs(const std::string& owner) = 0;
};

} // namespace wopbridge
