#pragma once
// The due-time engine: claims due deliveries from the store, starts their runs through the run
// starter and records every attempt in one store::record_attempt transaction (delivered / retrying /
// dead-lettered, with the breaker bookkeeping and any state change).
//
// Batched: the engine thread claims up to batch_size due deliveries in one transaction (reading
// their subscriptions once and their contents in one read), prepares their starts, and hands each
// finished attempt to the recorder. The recorder thread takes every outcome waiting (up to
// batch_size), computes the records (breaker counts carried from one record to the next of the same
// subscription), and writes them with store::record_attempts: one transaction, one fsync, which on
// SQLite is shared with intake's group commit. Local starts happen after that commit; upstream
// starts run concurrently (at most max_in_flight attempts out) and complete on the starter's
// thread. No ordering holds within a subscription: its deliveries may start in parallel.
//
// Threads: the engine thread waits on a condition variable until the earliest due time
// (store::next_due_at, at most 1 s so expired leases and probes are noticed) or a notify(). Neither
// thread holds a lock across a run start. run_due(now) is the deterministic test/seam API: it
// claims and completes everything due at `now` in the calling thread.

#include "contract/types.hpp"
#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/thread_annotations.hpp"
#include "runs/run_starter.hpp"

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace wopbridge {

class store;

struct delivery_engine_options {
    // Attempts claimed and not yet recorded, at most (delivery.concurrency).
    int max_in_flight = 256;
    // Deliveries claimed in one store transaction, and attempt outcomes recorded in one, at most.
    int batch_size = 256;
    millis lease_ms = 60 * 1000;
    millis attempt_timeout_ms = 30 * 1000;
    int dead_letter_retention_days = 7;
};

// Told to the owner after each attempt commits (and after a post-commit start failure).
struct attempt_report {
    std::string delivery_id;
    std::string subscription_id;
    std::string run_id; // the run that got events (delivered, or a failed local start); else empty
    std::string reserved_run_id; // the delivery's reserved run id, whatever the outcome
    attempt_outcome outcome = attempt_outcome::retrying;
    std::optional<state_change> state_changed;
    // Appended for metrics: set on the report of the recorded attempt (not on the post-start one).
    bool run_started = false;       // this attempt committed run.started
    millis received_at = 0;         // the delivery's intake time
    millis recorded_at = 0;         // the attempt's time (clock of the engine)
    double commit_seconds = -1;     // wall time of store::record_attempt; < 0 when not recorded
};

// Deliveries created by a dead-letter replay carry the dedup key "replay:<attemptEventId>": replaying
// one dead letter twice is a duplicate, and run.started gets metadata.replayOf.
std::string replay_dedup_key(std::string_view attempt_event_id);
std::string replay_of(std::string_view dedup_key); // the attempt event id, "" when not a replay

class delivery_engine {
public:
    using attempt_listener = std::function<void(const attempt_report&)>;

    // `random` must be safe to use from several threads (see core/synchronized_random.hpp).
    delivery_engine(store& st, run_starter& starter, clock_source& clock, random_source& random,
                    delivery_engine_options opts);
    ~delivery_engine();
    delivery_engine(const delivery_engine&) = delete;
    delivery_engine& operator=(const delivery_engine&) = delete;

    // Called after each recorded attempt, on the thread that recorded it; must not block.
    void set_attempt_listener(attempt_listener listener);

    void start() EXCLUDES(mutex_);
    // Stops claiming, waits for in-flight attempts (each at most attempt_timeout_ms), and leaves
    // unclaimed or unfinished deliveries to the next start (leases expire). Idempotent.
    void stop() EXCLUDES(mutex_);
    // New work may be due (intake committed, a subscription was resumed).
    void notify() EXCLUDES(mutex_);

    // Claims and completes everything due at `now`, synchronously. Returns the attempts recorded.
    int run_due(millis now) EXCLUDES(mutex_);

    struct attempt_ctx;
    struct completion;
    // What the record of an attempt is built from (besides its outcome and subscription).
    struct attempt_view {
        const delivery& dlv;
        const run_start_result& prepared;
        const std::string& attempt_event_id;
        const std::string& run_started_event_id;
    };

private:
    void loop() EXCLUDES(mutex_);
    void recorder_loop() EXCLUDES(mutex_);
    int claim_and_dispatch(millis now, int limit, std::vector<std::shared_ptr<attempt_ctx>>& out)
        EXCLUDES(mutex_);
    void dispatch(const std::shared_ptr<attempt_ctx>& ctx, std::optional<std::string> content);
    // The attempt's outcome is known: queued for the recorder (the first outcome wins).
    void complete(const std::shared_ptr<attempt_ctx>& ctx, run_start_result res, millis at)
        EXCLUDES(mutex_);
    // Records every queued outcome (up to batch_size) in one store transaction. Returns how many.
    int record_queued() EXCLUDES(mutex_, record_mutex_);
    void after_commit_start(const std::shared_ptr<attempt_ctx>& ctx);
    void expire_timeouts(millis now) EXCLUDES(mutex_);
    void wait_for(const std::vector<std::shared_ptr<attempt_ctx>>& ctxs) EXCLUDES(mutex_);
    std::string mint(std::string_view prefix);

    store& store_;
    run_starter& starter_;
    clock_source& clock_;
    random_source& random_;
    delivery_engine_options opts_;
    attempt_listener listener_;

    wopbridge::mutex mutex_;
    std::condition_variable cv_;      // engine wake-ups
    std::condition_variable done_cv_; // an attempt finished
    bool running_ GUARDED_BY(mutex_) = false;
    bool stopping_ GUARDED_BY(mutex_) = false;
    bool notified_ GUARDED_BY(mutex_) = false;
    std::map<attempt_ctx*, std::shared_ptr<attempt_ctx>> in_flight_ GUARDED_BY(mutex_);
    std::vector<completion> completions_ GUARDED_BY(mutex_); // outcomes waiting for the recorder
    std::condition_variable completion_cv_;
    bool recorder_running_ GUARDED_BY(mutex_) = false;
    bool recorder_stopping_ GUARDED_BY(mutex_) = false;
    std::thread thread_;
    std::thread recorder_;

    wopbridge::mutex record_mutex_; // one recorder at a time: breaker counts are read-modify-write
};

} // namespace wopbridge
