// Private to the bridge*.cpp files: the helpers they share (bridge_detail) and the definition of
// bridge's pimpl, struct bridge::impl, whose methods are defined in bridge_lifecycle.cpp,
// bridge_intake.cpp, bridge_replay.cpp, bridge_seams.cpp and bridge.cpp.
#pragma once

#include "app/bridge.hpp"
#include "app/observed_store.hpp"
#include "app/replay_jobs.hpp"

#include "contract/events.hpp"
#include "contract/state_machine.hpp"
#include "core/ids.hpp"
#include "core/log.hpp"
#include "core/metrics.hpp"
#include "core/rate_limiter.hpp"
#include "app/host_key_check.hpp"
#include "app/node_liveness.hpp"
#include "core/secret_box.hpp"
#include "core/synchronized_random.hpp"
#include "core/thread_annotations.hpp"
#include "delivery/delivery_engine.hpp"
#include "intake/webhook_intake.hpp"
#include "outbound/webhook_dispatcher.hpp"
#include "runs/run_starter.hpp"
#include "schedule/scheduler.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <thread>
#include <utility>

namespace wopbridge::bridge_detail {

inline constexpr std::string_view seam_noop_workflow = "__seam_noop__";
inline constexpr std::string_view seam_fail_workflow = "__seam_always_fail__";
inline constexpr int unavailable_retry_after_s = 5;
inline constexpr int overloaded_retry_after_s = 1;
inline constexpr millis day_ms = 24LL * 3600 * 1000;
inline constexpr auto seam_deadline = std::chrono::seconds(15); // well inside the suite's 20 s

inline bool is_seam_workflow(std::string_view id) { return id.substr(0, 7) == "__seam_"; }

// Wraps the configured starter: the conformance seams' two workflows are served here (one that
// completes at once, one whose every start fails), everything else goes to the real starter.
class seam_aware_starter final : public run_starter {
public:
    seam_aware_starter(std::unique_ptr<run_starter> inner, bool seams)
        : inner_(std::move(inner)), seams_(seams) {}

    run_start_result prepare(const run_start_request& req) override {
        if (seams_ && req.workflow_id == seam_noop_workflow) {
            run_start_result r;
            r.follow_up_events.emplace_back(std::string(events::run_completed_type),
                                            events::run_completed_payload(req.run_id));
            r.status_after = run_status::completed;
            return r;
        }
        if (seams_ && req.workflow_id == seam_fail_workflow) {
            run_start_result r;
            r.outcome = run_start_result::kind::retry;
            r.reason = "seam workflow always fails";
            return r;
        }
        if (!inner_) {
            run_start_result r;
            r.outcome = run_start_result::kind::retry;
            r.reason = "no run starter configured";
            return r;
        }
        return inner_->prepare(req);
    }
    void start(const run_start_request& req, run_start_callback done) override {
        if (seams_ && is_seam_workflow(req.workflow_id)) {
            run_start_result r;
            if (req.workflow_id != seam_noop_workflow) {
                r.outcome = run_start_result::kind::retry;
                r.reason = "seam workflow always fails";
            } else {
                r.follow_up_events.emplace_back(std::string(events::run_completed_type),
                                                events::run_completed_payload(req.run_id));
                r.status_after = run_status::completed;
            }
            done(std::move(r));
            return;
        }
        if (!inner_) {
            run_start_result r;
            r.outcome = run_start_result::kind::retry;
            r.reason = "no run starter configured";
            done(std::move(r));
            return;
        }
        inner_->start(req, std::move(done));
    }
    bool starts_before_commit() const noexcept override {
        return inner_ && inner_->starts_before_commit();
    }
    void set_lifecycle_sink(run_lifecycle_sink* sink) override {
        if (inner_) {
            inner_->set_lifecycle_sink(sink);
        }
    }
    void stop() override {
        if (inner_) {
            inner_->stop();
        }
    }
    std::vector<std::string> workflow_ids() const override {
        return inner_ ? inner_->workflow_ids() : std::vector<std::string>{};
    }
    bool has_inner() const noexcept { return inner_ != nullptr; }

private:
    std::unique_ptr<run_starter> inner_;
    bool seams_;
};

inline submit_result status_only(submit_status s, std::string message = {}) {
    submit_result r;
    r.status = s;
    r.message = std::move(message);
    if (s == submit_status::unavailable) {
        r.retry_after_seconds = unavailable_retry_after_s;
    } else if (s == submit_status::overloaded) {
        r.retry_after_seconds = overloaded_retry_after_s;
    }
    return r;
}

} // namespace wopbridge::bridge_detail

namespace wopbridge {

struct bridge::impl final : run_lifecycle_sink {
    bridge_settings settings;
    change_feed changes; // before st: the observed store reports into it
    std::unique_ptr<store> st;
    std::unique_ptr<bridge_detail::seam_aware_starter> starter;
    clock_source& clock;
    synchronized_random random;
    result<secret_box> host_key; // the hostKeyFile: opens the store's data key
    // The store's data key once ensure_host_key() opened it: replaced under key_mutex before
    // key_bound is set, and read only after ensure_host_key() answered (key_bound acquired).
    result<secret_box> box;
    std::optional<error_info> key_refusal GUARDED_BY(key_mutex); // once checked against the store
    // Set by a commit that failed on the store (full disk, read-only file, lost connection),
    // cleared by the next that succeeds (or by /readyz's write probe): one log line each way.
    std::atomic<bool> store_failing{false};
    std::atomic<bool> store_damage_logged{false};
    std::atomic<bool> key_bound{false};
    std::unique_ptr<delivery_engine> engine;
    std::unique_ptr<scheduler> sched;

    std::atomic<int> pending_intake{0};
    metrics_registry metrics;

    // The dead letters of refused signatures a forged flood may write: token buckets per
    // subscription and in all (deadLetter.refusedSignatureRecords). Past them a refusal is answered
    // alike and counted; its log line comes at most once a minute per subscription.
    rate_limiter refusal_records{clock};
    wopbridge::mutex refusal_log_mutex;
    struct unrecorded_refusals {
        std::uint64_t since_logged = 0;
        millis logged_at = 0;
        // Counts one; returns how many to log now, or 0 when the last line is under `interval` old.
        std::uint64_t count_one(millis t, millis interval) {
            ++since_logged;
            if (logged_at != 0 && t - logged_at < interval) {
                return 0;
            }
            logged_at = t;
            return std::exchange(since_logged, 0);
        }
    };
    // Known subscription ids only.
    std::map<std::string, unrecorded_refusals> refusals_unrecorded GUARDED_BY(refusal_log_mutex);
    // 429s since their last log line, by limit (a bounded map: two keys).
    std::map<std::string, unrecorded_refusals, std::less<>> rate_limited_unlogged
        GUARDED_BY(refusal_log_mutex);

    // Bulk replay jobs (durable, app/replay_jobs) and the housekeeping timer: real-time
    // background threads, joined by stop().
    std::unique_ptr<replay_jobs> jobs;
    wopbridge::mutex jobs_mutex;
    std::condition_variable jobs_cv;
    bool jobs_stopping GUARDED_BY(jobs_mutex) = false;
    std::thread housekeeping;
    std::vector<std::function<void(millis)>> housekeeping_tasks GUARDED_BY(jobs_mutex);

    wopbridge::mutex mutex; // watchers, seam progress, started flag
    std::condition_variable progress_cv;
    std::uint64_t progress GUARDED_BY(mutex) = 0; // bumped after every recorded attempt
    bool started GUARDED_BY(mutex) = false;
    // Interrupted runs are failed once, at the first start().
    bool recovered GUARDED_BY(mutex) = false;
    // Run ids reserved by accepted submissions whose delivery has not settled yet (run id ->
    // tenant): a poll that arrives before run.started is committed waits instead of answering 404.
    std::map<std::string, std::string> reserved_runs GUARDED_BY(mutex);
    // The config file's subscriptions with `provider:` (subscription id -> catalogue name).
    std::map<std::string, std::string> providers_by_subscription GUARDED_BY(mutex);

    std::string provider_of(const std::string& subscription_id) EXCLUDES(mutex) {
        wopbridge::lock_guard lock(mutex);
        auto it = providers_by_subscription.find(subscription_id);
        return it == providers_by_subscription.end() ? std::string() : it->second;
    }
    struct watcher {
        std::string run_id;
        std::int64_t after = -1;
        std::function<void()> notify;
    };
    std::map<std::uint64_t, watcher> watchers GUARDED_BY(mutex);
    std::uint64_t next_token GUARDED_BY(mutex) = 1;

    wopbridge::mutex observers_mutex;
    std::vector<std::function<void(const run_event&)>> observers GUARDED_BY(observers_mutex);
    std::vector<std::function<std::string()>> metrics_sources GUARDED_BY(observers_mutex);
    bridge::connector_settings_sealer settings_sealer; // set before start()

    // The stored form of a connector subscription's settings (secrets sealed by the sealer).
    result<std::string> stored_settings(const subscription& sub) const {
        if (sub.connector.empty() || !settings_sealer) {
            return sub.connector_settings_json;
        }
        return settings_sealer(sub.connector, sub.connector_settings_json);
    }
    std::unique_ptr<outbound::webhook_dispatcher> webhooks; // destroyed before the store
    std::unique_ptr<node_liveness> liveness;                 // shared stores only; likewise

    void notify_run_event(const run_event& e) EXCLUDES(observers_mutex);

    impl(bridge_settings s, std::unique_ptr<store> store_in, std::unique_ptr<run_starter> starter_in,
         clock_source& clock_in, random_source& random_in);

    // The scheduler's view of the `source: schedule` subscriptions, after any change to them.
    void refresh_schedules() {
        if (auto all = st->list_all_subscriptions()) {
            (void)sched->update(*all); // unparsable schedules were refused at config/registration
        }
    }

    ~impl() override;

    bool is_reserved(const std::string& run_id, const std::string& tenant) EXCLUDES(mutex) {
        wopbridge::lock_guard lock(mutex);
        auto it = reserved_runs.find(run_id);
        return it != reserved_runs.end() && it->second == tenant;
    }

    std::string mint(std::string_view prefix) {
        return id_generator(random, &clock).make(prefix);
    }
    millis now() const { return clock.now_ms(); }

    // ---- watchers -------------------------------------------------------------------------------

    void notify_run(const std::string& run_id) EXCLUDES(mutex);

    // ---- store health -----------------------------------------------------------------------------

    void note_store_failure(std::string_view operation, const boost::system::error_code& ec);
    void note_store_recovered();
    // The store named damage in its own files (store_upkeep::damage): logged once, as itself.
    void note_store_damaged(std::string_view operation, const std::string& damage);

    // ---- host key vs store -----------------------------------------------------------------------

    // Opens the store's data key with this host key, binding a new store to it, and refuses a key
    // the store does not know: secrets, signatures and dedup keys depend on the data key, so a key
    // that cannot open it would answer 401 to correctly signed requests and start a second run for
    // an event already taken. Everything that uses `box` comes through here first.
    result<void> ensure_host_key() EXCLUDES(key_mutex);

    wopbridge::mutex key_mutex;

    // ---- run lifecycle --------------------------------------------------------------------------

    void on_run_finished(const std::string& run_id, bool succeeded, int exit_code) override;

    // Runs left `running` by a previous process: with the local ledger their commands died with it
    // and cannot be waited for, so they fail ("interrupted"); they are never re-run.
    void fail_interrupted_runs();

    // ---- tenant scoping ---------------------------------------------------------------------------

    result<subscription> owned(const std::string& tenant, const std::string& id) {
        auto sub = st->get_subscription(id);
        if (!sub) {
            return sub.error();
        }
        if (sub->tenant != tenant) {
            return make_error_code(errc::not_found);
        }
        return sub;
    }

    // ---- intake ------------------------------------------------------------------------------------

    static std::string_view outcome_name(submit_status s);

    // One line per recorded attempt: ids, outcome and any state change; never content.
    static void log_attempt(const attempt_report& rep);

    void declare_metrics();

    void submit(const inbound_submission& s, submit_callback done_in);

    // Every answer to an inbound event is counted once, refusals included.
    void count_ingest(const std::string& sub_id, submit_status status);
    void count_rate_limited(const std::string& sub_id, std::string_view limit,
                            std::string_view address);
    // Takes a token for one refused-signature dead letter, or counts the refusal as unrecorded.
    bool refusal_record_admitted(const std::string& sub_id);

    // The gate every inbound event passes exactly once: an answer to give now (not active, host
    // key unavailable), or nothing, with `hold` set when it is to be committed `held`.
    std::optional<submit_result> admit(const subscription& sub, bool& hold);

    // Wraps `done` so the answer is counted and an accepted event's latency observed.
    submit_callback counted(const std::string& sub_id, submit_callback done);

    // Commits an admitted event: dedup key, trigger event, the store's intake transaction.
    void commit_intake(const inbound_submission& s, const subscription& sub, bool hold,
                       submit_callback done);

    void ingest_webhook(const std::string& id, const inbound_http_request& req, submit_callback done);

    // `found`: the subscription as the caller just read it (the HTTP route reads it to choose
    // between connector and webhook), so a request costs one read transaction, not two.
    void ingest_webhook(const subscription& found, const inbound_http_request& req,
                        submit_callback submitted);

    submit_result submit_sync(const inbound_submission& s);

    // ---- seams --------------------------------------------------------------------------------------

    // Drives the engine until `delivery_id` is delivered or dead-lettered. Due times in the future
    // (retry backoff) are reached by running the engine at that time rather than by waiting.
    result<delivery> drive(const std::string& delivery_id);

    // ---- replay ------------------------------------------------------------------------------------

    // Every dead letter of a subscription, newest first.
    result<std::vector<dead_letter>> all_dead_letters(const std::string& sub_id);

    result<replay_result> replay(const subscription& sub, const dead_letter& dl);

    // ---- background: replay jobs and housekeeping ---------------------------------------------

    void stop_background() EXCLUDES(jobs_mutex);

    void start_housekeeping() EXCLUDES(jobs_mutex);

    // ---- seam subscriptions ------------------------------------------------------------------------

    result<subscription> make_seam_subscription(const std::string& tenant, source_kind source,
                                                std::string_view workflow, retry_policy retry,
                                                std::string sealed_secret = {});
};

} // namespace wopbridge
