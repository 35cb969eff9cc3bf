#pragma once
// Bulk dead-letter replay jobs, kept in the store: the job, its selection (one row per dead
// letter, oldest first) and its progress. The node that creates a job holds it under a lease it
// renews while it works; a clean stop lets go of the lease, a crash lets it run out. Every node
// looks for running jobs whose lease ran out and resumes them at the first unsettled item. An item
// is marked replayed only after its replay delivery committed, so an interruption between the two
// replays that dead letter again: its dedup key (replay_dedup_key) answers the first replay's
// delivery, never a second one.
//
// Status reads come from the store, so every node of a shared store answers them.

#include "app/bridge.hpp"
#include "core/clock.hpp"
#include "core/error.hpp"
#include "store/store.hpp"

#include <condition_variable>
#include <functional>
#include <list>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace wopbridge {

struct replay_jobs_options {
    std::string owner;            // this node's id for the leases (unique per process)
    millis lease_ms = 30 * 1000;  // injected-clock time a job stays ours without a renewal
    millis poll_ms = 2000;        // real time between looks for orphaned jobs
    int failure_limit = 5;        // consecutive failed replays that stop a job
    int retention_days = 7;       // a finished job's record is kept this long
};

class replay_jobs {
public:
    using replay_fn = std::function<result<replay_result>(const subscription&, const dead_letter&)>;
    using dead_letters_fn = std::function<result<std::vector<dead_letter>>(const std::string&)>;

    replay_jobs(store& st, clock_source& clock, replay_jobs_options opts, replay_fn replay,
                dead_letters_fn dead_letters);
    ~replay_jobs();
    replay_jobs(const replay_jobs&) = delete;
    replay_jobs& operator=(const replay_jobs&) = delete;

    // Resumes orphaned jobs now and then every poll_ms, until stop().
    void start();
    // Waits for the running jobs to reach a safe point and lets go of their leases: they stay
    // `running` in the store and resume at the next start (or on another node).
    void stop();

    // Stores the job (selection oldest first) and starts it here. shutting_down while stopped.
    result<std::string> create(const std::string& id, const subscription& sub,
                               const std::vector<dead_letter>& selected, double rate_per_second);
    result<replay_job_status> get(const std::string& tenant, const std::string& id);

private:
    void poll_loop();
    void claim_orphans();
    void launch(replay_job_record job); // jobs_mu_ held
    void run(replay_job_record job);
    void reap(); // jobs_mu_ held: joins runners that finished

    store& st_;
    clock_source& clock_;
    replay_jobs_options opts_;
    replay_fn replay_;
    dead_letters_fn dead_letters_;

    std::mutex mu_;
    std::condition_variable cv_;
    bool running_ = false;
    bool stopping_ = false;
    std::set<std::string> active_; // job ids with a runner here
    struct runner {
        std::string job_id;
        std::thread thread;
        bool done = false;
    };
    std::list<runner> runners_;
    std::thread poller_;
};

} // namespace wopbridge
