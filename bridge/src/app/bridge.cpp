#include "app/bridge.hpp"
#include "app/observed_store.hpp"
#include "app/replay_jobs.hpp"

#include "contract/events.hpp"
#include "contract/state_machine.hpp"
#include "core/ids.hpp"
#include "core/log.hpp"
#include "core/metrics.hpp"
#include "app/host_key_check.hpp"
#include "app/node_liveness.hpp"
#include "core/secret_box.hpp"
#include "core/synchronized_random.hpp"
#include "delivery/delivery_engine.hpp"
#include "intake/webhook_intake.hpp"
#include "outbound/webhook_dispatcher.hpp"
#include "runs/run_starter.hpp"
#include "schedule/scheduler.hpp"

#include <wopbridge/signatures.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

namespace wopbridge {
namespace {

constexpr std::string_view seam_noop_workflow = "__seam_noop__";
constexpr std::string_view seam_fail_workflow = "__seam_always_fail__";
constexpr int unavailable_retry_after_s = 5;
constexpr int overloaded_retry_after_s = 1;
constexpr millis day_ms = 24LL * 3600 * 1000;
constexpr auto seam_deadline = std::chrono::seconds(15); // well inside the suite's 20 s

bool is_seam_workflow(std::string_view id) { return id.substr(0, 7) == "__seam_"; }

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

submit_result status_only(submit_status s, std::string message = {}) {
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

} // namespace

struct bridge::impl final : run_lifecycle_sink {
    bridge_settings settings;
    change_feed changes; // before st: the observed store reports into it
    std::unique_ptr<store> st;
    std::unique_ptr<seam_aware_starter> starter;
    clock_source& clock;
    synchronized_random random;
    result<secret_box> host_key; // the hostKeyFile: opens the store's data key
    result<secret_box> box;      // the store's data key once ensure_host_key() opened it
    std::optional<error_info> key_refusal; // set once the key was checked against the store
    // Set by a commit that failed on the store (full disk, read-only file, lost connection),
    // cleared by the next that succeeds (or by /readyz's write probe): one log line each way.
    std::atomic<bool> store_failing{false};
    std::atomic<bool> key_bound{false};
    std::unique_ptr<delivery_engine> engine;
    std::unique_ptr<scheduler> sched;

    std::atomic<int> pending_intake{0};
    metrics_registry metrics;

    // Bulk replay jobs (durable, app/replay_jobs) and the housekeeping timer: real-time
    // background threads, joined by stop().
    std::unique_ptr<replay_jobs> jobs;
    std::mutex jobs_mutex;
    std::condition_variable jobs_cv;
    bool jobs_stopping = false;
    std::thread housekeeping;
    std::vector<std::function<void(millis)>> housekeeping_tasks; // guarded by jobs_mutex

    std::mutex mutex; // watchers, seam progress, started flag
    std::condition_variable progress_cv;
    std::uint64_t progress = 0; // bumped after every recorded attempt
    bool started = false;
    bool recovered = false; // interrupted runs are failed once, at the first start()
    // Run ids reserved by accepted submissions whose delivery has not settled yet (run id ->
    // tenant): a poll that arrives before run.started is committed waits instead of answering 404.
    std::map<std::string, std::string> reserved_runs;
    struct watcher {
        std::string run_id;
        std::int64_t after = -1;
        std::function<void()> notify;
    };
    std::map<std::uint64_t, watcher> watchers;
    std::uint64_t next_token = 1;

    std::mutex observers_mutex;
    std::vector<std::function<void(const run_event&)>> observers;
    std::vector<std::function<std::string()>> metrics_sources; // guarded by observers_mutex
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

    void notify_run_event(const run_event& e) {
        std::vector<std::function<void(const run_event&)>> copy;
        {
            std::lock_guard lock(observers_mutex);
            copy = observers;
        }
        for (const auto& f : copy) {
            f(e);
        }
    }

    impl(bridge_settings s, std::unique_ptr<store> store_in, std::unique_ptr<run_starter> starter_in,
         clock_source& clock_in, random_source& random_in)
        : settings(std::move(s)),
          st(make_observed_store(std::move(store_in),
                                 [this](const run_event& e) { notify_run_event(e); }, &changes)),
          starter(std::make_unique<seam_aware_starter>(std::move(starter_in), settings.test_seams)),
          clock(clock_in),
          random(random_in),
          host_key(secret_box::open(settings.host_key_file, random)),
          box(host_key) {
        settings.dedup_retention_ms = std::max(settings.dedup_retention_ms, day_ms);
        delivery_engine_options opts;
        opts.max_in_flight = std::max(1, settings.max_in_flight_deliveries);
        opts.batch_size = std::max(1, settings.delivery_batch_size);
        opts.lease_ms = settings.delivery_lease_ms;
        opts.attempt_timeout_ms = settings.attempt_timeout_ms;
        opts.dead_letter_retention_days = settings.dead_letter_retention_days;
        engine = std::make_unique<delivery_engine>(*st, *starter, clock, random, opts);
        replay_jobs_options jo;
        jo.owner = mint("node");
        jo.lease_ms = settings.replay_job_lease_ms;
        jo.poll_ms = settings.replay_job_poll_ms;
        jo.failure_limit = settings.replay_failure_limit;
        jo.retention_days = settings.dead_letter_retention_days;
        jobs = std::make_unique<replay_jobs>(
            *st, clock, std::move(jo),
            [this](const subscription& sub, const dead_letter& dl) { return replay(sub, dl); },
            [this](const std::string& sub_id) { return all_dead_letters(sub_id); });
        declare_metrics();
        engine->set_attempt_listener([this](const attempt_report& rep) {
            metrics.increment("wopbridge_delivery_attempts_total",
                              {{"outcome", std::string(to_string(rep.outcome))}});
            if (rep.commit_seconds >= 0) {
                metrics.observe("wopbridge_store_commit_latency_seconds",
                                {{"operation", "attempt"}}, rep.commit_seconds);
                log_attempt(rep);
            }
            if (rep.run_started && rep.received_at > 0) {
                const millis waited = std::max<millis>(0, rep.recorded_at - rep.received_at);
                metrics.observe("wopbridge_run_start_latency_seconds", {},
                                static_cast<double>(waited) / 1000.0);
            }
            if (rep.outcome == attempt_outcome::dead_lettered) {
                metrics.increment("wopbridge_dead_letters_total", {{"reason", "retries_exhausted"}});
            }
            if (rep.state_changed && rep.state_changed->to == sub_state::active) {
                // A delivered breaker probe re-activated it: held events follow (the engine's
                // next pass, at most its idle wait away, claims them).
                (void)st->release_held(rep.subscription_id, now());
            }
            if (rep.outcome != attempt_outcome::retrying) {
                std::lock_guard lock(mutex);
                reserved_runs.erase(rep.reserved_run_id);
            }
            if (!rep.run_id.empty()) {
                notify_run(rep.run_id);
            } else if (rep.outcome == attempt_outcome::dead_lettered) {
                notify_run(rep.reserved_run_id); // a poller waiting for this run: it never comes
            }
            {
                std::lock_guard lock(mutex);
                ++progress;
            }
            progress_cv.notify_all();
        });
        starter->set_lifecycle_sink(this);
        if (box) {
            outbound::dispatcher_options wo;
            wo.durable = settings.webhooks_durable;
            wo.allow_loopback_http = settings.webhooks_allow_loopback_http;
            wo.retry = settings.default_retry;
            wo.dead_letter_retention_days = settings.dead_letter_retention_days;
            wo.version = WOPBRIDGE_VERSION;
            webhooks = std::make_unique<outbound::webhook_dispatcher>(*st, *box, clock, random, wo);
            observers.push_back([w = webhooks.get()](const run_event& e) { w->on_run_event(e); });
        }
        sched = std::make_unique<scheduler>(
            clock, [this](const inbound_submission& s) { submit(s, [](submit_result) {}); },
            [this](const std::string& id) -> std::optional<sub_state> {
                auto sub = st->get_subscription(id);
                return sub ? std::optional<sub_state>(sub->state) : std::nullopt;
            });
    }

    // The scheduler's view of the `source: schedule` subscriptions, after any change to them.
    void refresh_schedules() {
        if (auto all = st->list_all_subscriptions()) {
            (void)sched->update(*all); // unparsable schedules were refused at config/registration
        }
    }

    ~impl() override {
        stop_background();
        sched->stop();
        if (webhooks) {
            webhooks->stop();
        }
        engine->stop();
        starter->stop();
        starter->set_lifecycle_sink(nullptr);
    }

    bool is_reserved(const std::string& run_id, const std::string& tenant) {
        std::lock_guard lock(mutex);
        auto it = reserved_runs.find(run_id);
        return it != reserved_runs.end() && it->second == tenant;
    }

    std::string mint(std::string_view prefix) {
        return id_generator(random, &clock).make(prefix);
    }
    millis now() const { return clock.now_ms(); }

    // ---- watchers -------------------------------------------------------------------------------

    void notify_run(const std::string& run_id) {
        std::vector<std::function<void()>> fire;
        {
            std::lock_guard lock(mutex);
            for (auto it = watchers.begin(); it != watchers.end();) {
                if (it->second.run_id == run_id) {
                    fire.push_back(std::move(it->second.notify));
                    it = watchers.erase(it);
                } else {
                    ++it;
                }
            }
        }
        for (auto& f : fire) {
            f();
        }
    }

    // ---- store health -----------------------------------------------------------------------------

    void note_store_failure(std::string_view operation, const boost::system::error_code& ec) {
        if (!store_failing.exchange(true)) {
            log_line("error", "store.unavailable",
                     {{"operation", operation}, {"error", ec.message()}});
        }
    }
    void note_store_recovered() {
        if (store_failing.exchange(false)) {
            log_line("info", "store.recovered", {});
        }
    }

    // ---- host key vs store -----------------------------------------------------------------------

    // Opens the store's data key with this host key, binding a new store to it, and refuses a key
    // the store does not know: secrets, signatures and dedup keys depend on the data key, so a key
    // that cannot open it would answer 401 to correctly signed requests and start a second run for
    // an event already taken. Everything that uses `box` comes through here first.
    result<void> ensure_host_key() {
        if (key_bound.load(std::memory_order_acquire)) {
            return {};
        }
        std::lock_guard lock(key_mutex);
        if (key_bound.load(std::memory_order_relaxed)) {
            return {};
        }
        if (key_refusal) {
            return make_error_code(key_refusal->code);
        }
        auto refuse = [&](errc code, std::string message) -> result<void> {
            key_refusal = error_info{code, std::move(message)};
            return make_error_code(code);
        };
        if (!host_key) {
            return refuse(errc::invalid_argument,
                          "the host key file " + settings.host_key_file + " cannot be used");
        }
        if (settings.host_key_file.empty()) {
            // An ephemeral key (tests): it is its own data key; nothing sealed outlives the process.
            key_bound.store(true, std::memory_order_release);
            return {};
        }
        auto unlocked = unlock_data_key(*st, *host_key, random, true);
        if (!unlocked) {
            return unlocked.error(); // the store is unavailable: try again later, nothing is decided
        }
        if (unlocked->verdict == host_key_verdict::differs) {
            return refuse(errc::conflict, wrong_host_key_message(settings.host_key_file));
        }
        // In place: the outbound dispatcher holds a reference to this box.
        *box = std::move(*unlocked->data_key);
        key_bound.store(true, std::memory_order_release);
        return {};
    }

    std::mutex key_mutex;

    // ---- run lifecycle --------------------------------------------------------------------------

    void on_run_finished(const std::string& run_id, bool succeeded, int exit_code) override {
        millis at = now();
        if (succeeded) {
            st->end_run(run_id, std::string(events::run_completed_type),
                        events::run_completed_payload(run_id, exit_code), mint("evt"),
                        run_status::completed, at);
        } else {
            st->end_run(run_id, std::string(events::run_failed_type),
                        events::run_failed_payload(run_id, "exit-status", exit_code), mint("evt"),
                        run_status::failed, at);
        }
        notify_run(run_id);
    }

    // Runs left `running` by a previous process: with the local ledger their commands died with it
    // and cannot be waited for, so they fail ("interrupted"); they are never re-run.
    void fail_interrupted_runs() {
        if (starter->starts_before_commit()) {
            return; // upstream runs live on the run host
        }
        auto running = st->list_runs_with_status(run_status::running);
        if (!running) {
            return;
        }
        millis at = now();
        for (const auto& run : *running) {
            st->end_run(run.id, std::string(events::run_failed_type),
                        events::run_failed_payload(run.id, "interrupted"), mint("evt"),
                        run_status::failed, at);
        }
    }

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

    static std::string_view outcome_name(submit_status s) {
        switch (s) {
        case submit_status::accepted: return "accepted";
        case submit_status::duplicate: return "duplicate";
        case submit_status::held: return "held";
        case submit_status::not_active: return "not_active";
        case submit_status::signature_invalid: return "signature_invalid";
        case submit_status::not_found: return "not_found";
        case submit_status::invalid: return "invalid";
        case submit_status::overloaded: return "overloaded";
        case submit_status::unavailable: return "unavailable";
        }
        return "unknown";
    }

    // One line per recorded attempt: ids, outcome and any state change; never content.
    static void log_attempt(const attempt_report& rep) {
        const char* level = rep.outcome == attempt_outcome::retrying ? "debug" : "info";
        if (!log_enabled(level)) {
            return;
        }
        boost::json::object f{{"subscriptionId", rep.subscription_id},
                              {"deliveryId", rep.delivery_id},
                              {"outcome", std::string(to_string(rep.outcome))}};
        if (rep.run_started) {
            f["runId"] = rep.run_id;
        }
        if (rep.state_changed) {
            f["fromState"] = std::string(to_string(rep.state_changed->from));
            f["toState"] = std::string(to_string(rep.state_changed->to));
        }
        log_line(level, "delivery.attempted", std::move(f));
    }

    void declare_metrics() {
        const std::vector<double> latency{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
                                          30, 60, 300};
        metrics.declare("wopbridge_ingests_total", metric_kind::counter,
                        "Inbound events by subscription and outcome.", {"subscription", "outcome"});
        metrics.declare("wopbridge_delivery_attempts_total", metric_kind::counter,
                        "Delivery attempts by outcome.", {"outcome"});
        metrics.declare("wopbridge_dead_letters_total", metric_kind::counter,
                        "Dead letters written, by reason.", {"reason"});
        metrics.declare("wopbridge_ingest_latency_seconds", metric_kind::histogram,
                        "Accept to durable commit of an inbound event.", {}, latency);
        metrics.declare("wopbridge_store_commit_latency_seconds", metric_kind::histogram,
                        "Store write transactions as seen by the bridge, by operation.",
                        {"operation"}, latency);
        metrics.declare("wopbridge_run_start_latency_seconds", metric_kind::histogram,
                        "Intake of an event to the commit of the run.started it caused.", {},
                        latency);
        metrics.declare("wopbridge_subscriptions", metric_kind::gauge, "Subscriptions by state.",
                        {"state"});
        metrics.declare("wopbridge_subscription_state", metric_kind::gauge,
                        "1 for the state each subscription is in.", {"subscription", "state"});
        metrics.declare("wopbridge_deliveries_due", metric_kind::gauge,
                        "Pending deliveries due now (the engine is behind or they are paused).",
                        {});
        metrics.declare("wopbridge_deliveries_in_flight", metric_kind::gauge,
                        "Deliveries claimed by an engine whose attempt has not been recorded.", {});
        metrics.declare("wopbridge_deliveries_pending", metric_kind::gauge,
                        "Pending deliveries, due or backing off.", {});
        metrics.declare("wopbridge_deliveries_held", metric_kind::gauge,
                        "Deliveries held while their subscription is not active.", {});
        metrics.declare("wopbridge_dead_letters_stored", metric_kind::gauge,
                        "Unexpired dead letters, by subscription.", {"subscription"});
        metrics.declare("wopbridge_replays_total", metric_kind::counter,
                        "Dead-letter replays committed.", {});
        metrics.declare("wopbridge_purged_rows_total", metric_kind::counter,
                        "Expired dedup rows and dead letters removed by housekeeping.", {});
    }

    void submit(const inbound_submission& s, submit_callback done_in) {
        submit(s, nullptr, std::move(done_in));
    }

    // Every answer to an inbound event is counted once, refusals included.
    void count_ingest(const std::string& sub_id, submit_status status) {
        // An unknown id is caller-chosen text: never a label value.
        metrics.increment("wopbridge_ingests_total",
                          {{"subscription", status == submit_status::not_found ? "unknown" : sub_id},
                           {"outcome", std::string(outcome_name(status))}});
    }

    // `known`: the subscription already read for this request (webhook ingest), else read here.
    void submit(const inbound_submission& s, const subscription* known, submit_callback done_in) {
        millis accepted_at = now();
        auto done = [this, sub_id = s.subscription_id, accepted_at,
                     done_in = std::move(done_in)](submit_result r) {
            count_ingest(sub_id, r.status);
            if (r.status == submit_status::accepted || r.status == submit_status::held) {
                double secs = static_cast<double>(now() - accepted_at) / 1000.0;
                metrics.observe("wopbridge_ingest_latency_seconds", {}, secs);
                metrics.observe("wopbridge_store_commit_latency_seconds", {{"operation", "intake"}},
                                secs);
            }
            done_in(std::move(r));
        };
        std::optional<result<subscription>> read;
        if (known == nullptr) {
            read = st->get_subscription(s.subscription_id);
            if (!*read) {
                done(status_only(read->error() == make_error_code(errc::not_found)
                                     ? submit_status::not_found
                                     : submit_status::unavailable));
                return;
            }
            known = &**read;
        }
        const subscription* sub = known;
        bool hold = false;
        if (!accepts_intake(sub->state)) {
            if (!sub->hold_when_not_active) {
                done(status_only(submit_status::not_active, "subscription not active"));
                return;
            }
            // whenNotActive: hold: committed `held`, released by store::release_held on resume.
            hold = true;
        }
        if (!ensure_host_key()) {
            done(status_only(submit_status::unavailable, "host key unavailable"));
            return;
        }
        if (pending_intake.fetch_add(1) >= std::max(1, settings.max_pending_intake)) {
            pending_intake.fetch_sub(1);
            done(status_only(submit_status::overloaded, "intake queue full"));
            return;
        }
        millis received = s.received_at > 0 ? s.received_at : now();
        std::string dedup_key;
        if (!s.verbatim_dedup_key.empty()) {
            dedup_key = s.verbatim_dedup_key;
        } else if (!s.provider_event_id.empty()) {
            dedup_key = box->dedup_key(sub->id, s.provider_event_id);
        } else {
            // No provider id: nothing to de-duplicate on; a fresh opaque key per event.
            dedup_key = box->dedup_key(sub->id, mint("evt"));
        }
        intake_request req;
        req.subscription_id = sub->id;
        req.tenant = sub->tenant;
        req.dedup_key = dedup_key;
        req.dedup_enabled = sub->dedup_enabled;
        req.delivery_id = mint("dlv");
        req.run_id = mint("run");
        req.received_at = received;
        req.due_at = now();
        req.hold = hold;
        req.dedup_expires_at = received + settings.dedup_retention_ms;
        events::trigger_event_fields f;
        f.source = sub->source;
        f.subscription_id = sub->id;
        f.delivery_id = req.delivery_id;
        f.received_at = received;
        f.dedup_key = dedup_key;
        f.verified = s.verified;
        auto trigger_event = events::trigger_event_json(f, s.content_json);
        if (!trigger_event) {
            pending_intake.fetch_sub(1);
            done(status_only(submit_status::invalid, "malformed submission content"));
            return;
        }
        req.content_json = std::move(*trigger_event);
        st->intake(std::move(req), [this, tenant = sub->tenant,
                                    done = std::move(done)](result<intake_outcome> out) {
            pending_intake.fetch_sub(1);
            if (!out && out.error() != make_error_code(errc::invalid_argument)) {
                note_store_failure("intake", out.error());
            } else if (out && store_failing.load(std::memory_order_relaxed)) {
                note_store_recovered();
            }
            if (!out) {
                done(status_only(out.error() == make_error_code(errc::invalid_argument)
                                     ? submit_status::invalid
                                     : submit_status::unavailable,
                                 "the submission could not be committed"));
                return;
            }
            submit_result r;
            r.run_id = out->run_id;
            r.delivery_id = out->delivery_id;
            switch (out->status) {
            case intake_status::accepted:
                r.status = submit_status::accepted;
                {
                    std::lock_guard lock(mutex);
                    reserved_runs[r.run_id] = tenant;
                }
                engine->notify();
                break;
            case intake_status::duplicate: r.status = submit_status::duplicate; break;
            case intake_status::held:
                r.status = submit_status::held;
                {
                    std::lock_guard lock(mutex);
                    reserved_runs[r.run_id] = tenant;
                }
                break;
            }
            done(std::move(r));
        });
    }

    void ingest_webhook(const std::string& id, const inbound_http_request& req, submit_callback done) {
        auto sub = st->get_subscription(id);
        if (!sub) {
            auto status = sub.error() == make_error_code(errc::not_found) ? submit_status::not_found
                                                                          : submit_status::unavailable;
            count_ingest(id, status);
            done(status_only(status));
            return;
        }
        ingest_webhook(*sub, req, std::move(done));
    }

    // `found`: the subscription as the caller just read it (the HTTP route reads it to choose
    // between connector and webhook), so a request costs one read transaction, not two.
    void ingest_webhook(const subscription& found, const inbound_http_request& req,
                        submit_callback submitted) {
        const subscription* sub = &found;
        // Answers given here are counted here; a submission is counted by submit().
        auto done = [this, &found, &submitted](submit_result r) {
            count_ingest(found.id, r.status);
            submitted(std::move(r));
        };
        if (sub->source != source_kind::webhook) {
            done(status_only(submit_status::not_found));
            return;
        }
        if (!accepts_intake(sub->state) && !sub->hold_when_not_active) {
            done(status_only(submit_status::not_active, "subscription not active"));
            return;
        }
        if (!ensure_host_key()) {
            done(status_only(submit_status::unavailable, "host key unavailable"));
            return;
        }
        millis t = now();
        std::vector<std::string> secrets;
        if (sub->verification != verification_mode::none && !sub->sealed_secret.empty()) {
            auto plain = box->unseal(sub->sealed_secret);
            if (plain) {
                secrets = intake::split_secrets(*plain);
            }
        }
        auto v = intake::verify_webhook(sub->verification, secrets, req, t / 1000);
        if (v.refused) {
            verification_refusal ref;
            ref.subscription_id = sub->id;
            ref.dedup_key = box->dedup_key(sub->id, v.webhook_id.empty() ? mint("evt") : v.webhook_id);
            ref.attempt_event_id = mint("evt");
            ref.at = t;
            ref.expires_at = t + settings.refused_signature_retention_ms;
            auto recorded = st->record_verification_refusal(ref);
            if (!recorded) {
                done(status_only(submit_status::unavailable, "the refusal could not be recorded"));
                return;
            }
            metrics.increment("wopbridge_dead_letters_total", {{"reason", "verification_failed"}});
            done(status_only(submit_status::signature_invalid, "signature verification failed"));
            return;
        }
        inbound_submission s;
        s.subscription_id = sub->id;
        s.provider_event_id = v.webhook_id;
        s.received_at = t;
        s.verified = v.verified;
        s.content_json = intake::webhook_content_json(req);
        submit(s, sub, std::move(submitted));
    }

    submit_result submit_sync(const inbound_submission& s) {
        auto p = std::make_shared<std::promise<submit_result>>();
        auto f = p->get_future();
        submit(s, [p](submit_result r) { p->set_value(std::move(r)); });
        if (f.wait_for(seam_deadline) != std::future_status::ready) {
            return status_only(submit_status::unavailable, "intake did not commit in time");
        }
        return f.get();
    }

    // ---- seams --------------------------------------------------------------------------------------

    // Drives the engine until `delivery_id` is delivered or dead-lettered. Due times in the future
    // (retry backoff) are reached by running the engine at that time rather than by waiting.
    result<delivery> drive(const std::string& delivery_id) {
        auto until = std::chrono::steady_clock::now() + seam_deadline;
        for (;;) {
            auto d = st->get_delivery(delivery_id);
            if (!d) {
                return d.error();
            }
            if (d->status == delivery_status::delivered || d->status == delivery_status::dead_lettered) {
                return d;
            }
            if (std::chrono::steady_clock::now() >= until) {
                return make_error_code(errc::internal);
            }
            std::uint64_t seen;
            {
                std::lock_guard lock(mutex);
                seen = progress;
            }
            int n = 0;
            if (d->status == delivery_status::pending) {
                n = engine->run_due(std::max(now(), d->due_at));
            }
            if (n == 0) {
                // In flight on the engine thread (or probing): wait for the next recorded attempt.
                std::unique_lock lock(mutex);
                progress_cv.wait_for(lock, std::chrono::milliseconds(50),
                                     [&] { return progress != seen; });
            }
        }
    }

    // ---- replay ------------------------------------------------------------------------------------

    // Every dead letter of a subscription, newest first.
    result<std::vector<dead_letter>> all_dead_letters(const std::string& sub_id) {
        std::vector<dead_letter> out;
        page_request pr;
        pr.limit = 1000;
        for (int guard = 0; guard < 100000; ++guard) {
            auto pg = st->list_dead_letters(sub_id, pr, now());
            if (!pg) {
                return pg.error();
            }
            out.insert(out.end(), pg->items.begin(), pg->items.end());
            if (pg->next_cursor.empty()) {
                break;
            }
            pr.cursor = pg->next_cursor;
        }
        return out;
    }

    result<replay_result> replay(const subscription& sub, const dead_letter& dl) {
        if (dl.reason == dead_letter_reason::verification_failed || dl.delivery_id.empty()) {
            return make_error_code(errc::conflict); // its content was never stored
        }
        auto content = st->delivery_content(dl.delivery_id);
        if (!content) {
            return content.error();
        }
        intake_request req;
        req.subscription_id = sub.id;
        req.tenant = sub.tenant;
        req.dedup_key = replay_dedup_key(dl.attempt_event_id);
        req.dedup_enabled = true; // replaying the same dead letter twice is idempotent
        req.delivery_id = mint("dlv");
        req.run_id = mint("run");
        req.received_at = now();
        req.due_at = now();
        req.hold = !accepts_intake(sub.state);
        req.dedup_expires_at = req.received_at + std::max<millis>(settings.dedup_retention_ms,
                                                                  dl.expires_at - req.received_at);
        req.content_json = std::move(*content);
        auto out = st->intake_sync(std::move(req));
        if (!out) {
            return out.error();
        }
        replay_result r;
        r.delivery_id = out->delivery_id;
        r.run_id = out->run_id;
        r.held = out->status == intake_status::held;
        r.repeated = out->status == intake_status::duplicate;
        log_line("info", "dead_letter.replayed",
                 {{"subscriptionId", sub.id},
                  {"attemptEventId", dl.attempt_event_id},
                  {"deliveryId", r.delivery_id},
                  {"runId", r.run_id},
                  {"held", r.held},
                  {"repeated", r.repeated}});
        if (!r.repeated) {
            metrics.increment("wopbridge_replays_total");
            std::lock_guard lock(mutex);
            reserved_runs[r.run_id] = sub.tenant;
        }
        engine->notify();
        return r;
    }

    void stop_background() {
        jobs->stop();
        {
            std::lock_guard lock(jobs_mutex);
            jobs_stopping = true;
        }
        jobs_cv.notify_all();
        if (housekeeping.joinable()) {
            housekeeping.join();
        }
    }

    void start_housekeeping() {
        {
            std::lock_guard lock(jobs_mutex);
            jobs_stopping = false;
        }
        housekeeping = std::thread([this] {
            auto period = std::chrono::milliseconds(std::max<millis>(1000, settings.housekeeping_interval_ms));
            // A first pass at start: a node that was down past some expiries purges them now.
            for (;;) {
                if (auto n = st->purge_expired(now()); n && *n > 0) {
                    metrics.increment("wopbridge_purged_rows_total", {}, *n);
                }
                std::vector<std::function<void(millis)>> tasks;
                {
                    std::lock_guard lock(jobs_mutex);
                    tasks = housekeeping_tasks;
                }
                for (const auto& task : tasks) {
                    task(now());
                }
                std::unique_lock lock(jobs_mutex);
                if (jobs_cv.wait_for(lock, period, [&] { return jobs_stopping; })) {
                    return;
                }
            }
        });
    }

    result<subscription> make_seam_subscription(const std::string& tenant, source_kind source,
                                                std::string_view workflow, retry_policy retry,
                                                std::string sealed_secret = {}) {
        subscription sub;
        sub.id = mint("sub");
        sub.tenant = tenant;
        sub.source = source;
        sub.state = initial_state();
        sub.workflow_id = std::string(workflow);
        sub.dedup_enabled = true;
        sub.retry = retry;
        sub.breaker = settings.default_breaker;
        sub.verification =
            sealed_secret.empty() ? verification_mode::none : verification_mode::required;
        sub.sealed_secret = std::move(sealed_secret);
        sub.origin = subscription::origin_kind::seam;
        sub.created_at = sub.updated_at = now();
        auto ins = st->insert_subscription(sub);
        if (!ins) {
            return ins.error();
        }
        return sub;
    }
};

// ---- bridge ------------------------------------------------------------------------------------------

bridge::bridge(bridge_settings settings, std::unique_ptr<store> st, std::unique_ptr<run_starter> starter,
               clock_source& clock, random_source& random)
    : impl_(std::make_unique<impl>(std::move(settings), std::move(st), std::move(starter), clock,
                                   random)) {}

bridge::~bridge() { stop(); }

result<void> bridge::bind_host_key(error_info& why) {
    auto r = impl_->ensure_host_key();
    if (!r) {
        std::lock_guard lock(impl_->key_mutex);
        why = impl_->key_refusal.value_or(
            error_info{errc::store_unavailable, "cannot read the store's host key check"});
    }
    return r;
}

result<void> bridge::start() {
    if (!impl_->box) {
        return impl_->box.error();
    }
    if (auto keyed = impl_->ensure_host_key(); !keyed) {
        return keyed.error();
    }
    bool first = false;
    {
        std::lock_guard lock(impl_->mutex);
        if (impl_->started) {
            return {};
        }
        impl_->started = true;
        first = !std::exchange(impl_->recovered, true);
    }
    if (first) {
        impl_->fail_interrupted_runs();
    }
    // Beats before the first claim, so a claim never names a node the others have not seen.
    auto live = std::make_unique<node_liveness>(*impl_->st, impl_->settings.node_beat_ms,
                                                impl_->settings.node_timeout_ms);
    if (live->start()) {
        impl_->liveness = std::move(live);
    }
    impl_->engine->start();
    impl_->start_housekeeping();
    impl_->jobs->start(); // after the engine: resumed replays are delivered
    if (impl_->webhooks) {
        impl_->webhooks->start();
    }
    impl_->refresh_schedules();
    impl_->sched->start();
    return {};
}

void bridge::stop() {
    {
        std::lock_guard lock(impl_->mutex);
        if (!impl_->started) {
            return;
        }
        impl_->started = false;
    }
    impl_->sched->stop(); // stop producing ticks before the engine drains
    impl_->stop_background();
    impl_->engine->stop();
    if (impl_->liveness) {
        impl_->liveness->stop(); // after the engine: what it left unsettled is claimable at once
        impl_->liveness.reset();
    }
    impl_->starter->stop();
    if (impl_->webhooks) {
        impl_->webhooks->stop(); // after the engine: its last run events are already in the outbox
    }
}

const bridge_settings& bridge::settings() const noexcept { return impl_->settings; }

result<void> bridge::apply_config_subscriptions(const std::vector<subscription>& subs,
                                                const std::map<std::string, std::string>& secrets) {
    auto& m = *impl_;
    if (!m.box) {
        return m.box.error();
    }
    if (auto keyed = m.ensure_host_key(); !keyed) {
        return keyed.error();
    }
    std::set<std::string> in_file;
    for (auto sub : subs) {
        if (sub.id.empty() || sub.workflow_id.empty()) {
            return make_error_code(errc::invalid_argument);
        }
        sub.origin = subscription::origin_kind::config;
        if (auto it = secrets.find(sub.id); it != secrets.end() && !it->second.empty()) {
            auto list = intake::split_secrets(it->second);
            sub.sealed_secret = m.box->seal(it->second, m.random);
            sub.secret_fingerprint = list.empty() ? "" : m.box->fingerprint(list.front());
        }
        if (sub.source == source_kind::webhook && sub.webhook_id.empty()) {
            sub.webhook_id = "wh_" + sub.id;
        }
        if (sub.created_at == 0) {
            sub.created_at = m.now();
        }
        sub.updated_at = m.now();
        auto stored = m.stored_settings(sub);
        if (!stored) {
            return stored.error();
        }
        sub.connector_settings_json = std::move(*stored);
        auto r = m.st->upsert_config_subscription(sub);
        if (!r) {
            return r.error();
        }
        in_file.insert(sub.id);
    }
    auto all = m.st->list_all_subscriptions();
    if (!all) {
        return all.error();
    }
    for (const auto& sub : *all) {
        if (sub.origin != subscription::origin_kind::config || in_file.count(sub.id)) {
            continue;
        }
        if (transition_allowed(sub.state, sub_state::paused)) {
            // Keep a content-free record of why it stopped before it goes.
            (void)m.st->change_state({sub.id, sub.source, sub.state, sub_state::paused,
                                      state_reason::source_removed},
                                     m.mint("evt"), m.now());
        }
        auto r = m.st->delete_subscription(sub.id);
        if (!r && r.error() != make_error_code(errc::not_found)) {
            return r.error();
        }
    }
    m.refresh_schedules();
    m.engine->notify();
    return {};
}

result<registration_result> bridge::register_subscription(const registration_request& req) {
    auto& m = *impl_;
    if (!m.box) {
        return m.box.error();
    }
    if (auto keyed = m.ensure_host_key(); !keyed) {
        return keyed.error();
    }
    if (req.tenant.empty() || req.workflow_id.empty() || is_seam_workflow(req.workflow_id)) {
        return make_error_code(errc::invalid_argument);
    }
    if (req.source == source_kind::schedule &&
        (!req.schedule || !cron_expr::parse(req.schedule->cron, req.schedule->time_zone))) {
        return make_error_code(errc::invalid_argument);
    }
    if (req.retry && req.retry->max_attempts < 1) {
        return make_error_code(errc::invalid_argument);
    }
    // A registration must not bind a workflow the host cannot start (an empty list = any, upstream).
    auto known = m.starter->workflow_ids();
    if (!m.starter->has_inner() ||
        (!known.empty() && std::find(known.begin(), known.end(), req.workflow_id) == known.end())) {
        return make_error_code(errc::invalid_argument);
    }
    subscription sub;
    sub.id = m.mint("sub");
    sub.tenant = req.tenant;
    sub.source = req.source;
    sub.state = initial_state();
    sub.workflow_id = req.workflow_id;
    sub.dedup_enabled = req.dedup_enabled;
    sub.retry = req.retry.value_or(m.settings.default_retry);
    sub.breaker = m.settings.default_breaker;
    sub.verification = req.verification;
    sub.schedule = req.schedule;
    sub.connector = req.connector;
    sub.connector_settings_json = req.connector_settings_json.empty() ? "{}" : req.connector_settings_json;
    sub.hold_when_not_active = req.hold_when_not_active;
    sub.origin = subscription::origin_kind::api;
    sub.created_at = sub.updated_at = m.now();

    registration_result out;
    if (sub.source == source_kind::webhook) {
        unsigned char raw[32];
        m.random.fill(raw, sizeof raw);
        out.signing_secret =
            "whsec_" + sig::base64_encode(std::string_view(reinterpret_cast<char*>(raw), sizeof raw));
        sub.sealed_secret = m.box->seal(out.signing_secret, m.random);
        sub.secret_fingerprint = m.box->fingerprint(out.signing_secret);
        sub.webhook_id = m.mint("wh");
    }
    auto stored = m.stored_settings(sub);
    if (!stored) {
        return stored.error();
    }
    sub.connector_settings_json = std::move(*stored);
    auto ins = m.st->insert_subscription(sub);
    if (!ins) {
        return ins.error();
    }
    if (sub.source != source_kind::schedule) {
        std::string base = m.settings.public_url;
        while (!base.empty() && base.back() == '/') {
            base.pop_back();
        }
        out.ingest_url = base + "/v1/ingest/" + sub.id;
    }
    out.record = std::move(sub);
    if (out.record.source == source_kind::schedule) {
        m.refresh_schedules();
    }
    return out;
}

result<std::vector<subscription>> bridge::list_subscriptions(const std::string& tenant) {
    return impl_->st->list_subscriptions(tenant);
}

result<subscription_view> bridge::get_subscription(const std::string& tenant, const std::string& id) {
    auto sub = impl_->owned(tenant, id);
    if (!sub) {
        return sub.error();
    }
    subscription_view view;
    view.record = std::move(*sub);
    page_request pr;
    pr.limit = 20;
    if (auto recent = impl_->st->list_deliveries(id, pr)) {
        view.recent_deliveries = std::move(recent->items);
    }
    return view;
}

result<subscription> bridge::set_state(const std::string& tenant, const std::string& id, sub_state to) {
    auto& m = *impl_;
    auto sub = m.owned(tenant, id);
    if (!sub) {
        return sub.error();
    }
    if (sub->state == to) {
        return sub; // already there: a no-op, not a transition
    }
    if (auto ok = check_transition(sub->state, to); !ok) {
        return ok.error();
    }
    millis at = m.now();
    auto changed = m.st->change_state({sub->id, sub->source, sub->state, to, operator_reason(to)},
                                      m.mint("evt"), at);
    if (!changed) {
        return changed.error();
    }
    log_line("info", "subscription.state_changed",
             {{"subscriptionId", sub->id},
              {"fromState", std::string(to_string(sub->state))},
              {"toState", std::string(to_string(to))},
              {"by", "operator"}});
    if (to == sub_state::active) {
        (void)m.st->release_held(sub->id, at);
        m.engine->notify();
    }
    return m.st->get_subscription(id);
}

result<void> bridge::delete_subscription(const std::string& tenant, const std::string& id) {
    auto sub = impl_->owned(tenant, id);
    if (!sub) {
        return sub.error();
    }
    auto r = impl_->st->delete_subscription(id);
    if (r && sub->source == source_kind::schedule) {
        impl_->refresh_schedules();
    }
    return r;
}

result<page<delivery>> bridge::list_deliveries(const std::string& tenant, const std::string& id,
                                               const page_request& req) {
    auto sub = impl_->owned(tenant, id);
    if (!sub) {
        return sub.error();
    }
    return impl_->st->list_deliveries(id, req);
}

result<page<dead_letter>> bridge::list_dead_letters(const std::string& tenant, const std::string& id,
                                                    const page_request& req) {
    auto sub = impl_->owned(tenant, id);
    if (!sub) {
        return sub.error();
    }
    page_request clamped = req;
    clamped.limit = std::clamp(req.limit, 1, std::max(1, impl_->settings.dead_letter_max_page_size));
    return impl_->st->list_dead_letters(id, clamped, impl_->now());
}

result<std::vector<subscription>> bridge::all_subscriptions() {
    return impl_->st->list_all_subscriptions();
}

result<subscription> bridge::find_subscription(const std::string& id) {
    return impl_->st->get_subscription(id);
}

void bridge::ingest_webhook(const std::string& subscription_id, const inbound_http_request& req,
                            submit_callback done) {
    impl_->ingest_webhook(subscription_id, req, std::move(done));
}

void bridge::ingest_webhook(const subscription& sub, const inbound_http_request& req,
                            submit_callback done) {
    impl_->ingest_webhook(sub, req, std::move(done));
}

void bridge::submit(const inbound_submission& s, submit_callback done) {
    impl_->submit(s, std::move(done));
}

result<run_record> bridge::get_run(const std::string& tenant, const std::string& run_id) {
    auto run = impl_->st->get_run(run_id);
    if (!run) {
        return run.error();
    }
    if (run->tenant != tenant) {
        return make_error_code(errc::not_found);
    }
    if (!run->delivery_id.empty()) {
        // A replay's delivery carries the dead-lettered attempt in its dedup key.
        if (auto d = impl_->st->get_delivery(run->delivery_id)) {
            run->replay_of_attempt_event_id = replay_of(d->dedup_key);
        }
    }
    return run;
}

result<poll_result> bridge::read_events(const std::string& tenant, const std::string& run_id,
                                        std::int64_t after_sequence, int limit) {
    auto run = get_run(tenant, run_id);
    if (!run) {
        if (run.error() == make_error_code(errc::not_found) && impl_->is_reserved(run_id, tenant)) {
            return poll_result{}; // accepted, run.started not committed yet: nothing to read so far
        }
        return run.error();
    }
    limit = std::clamp(limit, 1, 1000);
    auto evs = impl_->st->run_events_after(run_id, after_sequence, limit);
    if (!evs) {
        return evs.error();
    }
    poll_result out;
    // Complete when the run is terminal and this read reached the end of its log.
    bool terminal = run->status == run_status::completed || run->status == run_status::failed;
    out.is_complete = terminal && static_cast<int>(evs->size()) < limit;
    out.events = std::move(*evs);
    return out;
}

std::uint64_t bridge::watch_run(const std::string& run_id, std::int64_t after_sequence,
                                std::function<void()> notify) {
    auto& m = *impl_;
    std::uint64_t token;
    {
        std::lock_guard lock(m.mutex);
        token = m.next_token++;
        m.watchers[token] = {run_id, after_sequence, std::move(notify)};
    }
    // Registered first, checked second: an event committed in between still fires the watcher.
    auto evs = m.st->run_events_after(run_id, after_sequence, 1);
    if (evs && !evs->empty()) {
        std::function<void()> fire;
        {
            std::lock_guard lock(m.mutex);
            if (auto it = m.watchers.find(token); it != m.watchers.end()) {
                fire = std::move(it->second.notify);
                m.watchers.erase(it);
            }
        }
        if (fire) {
            fire();
        }
    }
    return token;
}

void bridge::cancel_watch(std::uint64_t token) {
    std::lock_guard lock(impl_->mutex);
    impl_->watchers.erase(token);
}

std::uint64_t bridge::watch_changes(const std::string& tenant, std::function<void()> notify) {
    return impl_->changes.watch(tenant, std::move(notify));
}

void bridge::cancel_changes_watch(std::uint64_t token) { impl_->changes.cancel(token); }

result<seam_deliver_result> bridge::seam_deliver(const seam_deliver_request& req) {
    auto& m = *impl_;
    if (!m.settings.test_seams) {
        return make_error_code(errc::not_found);
    }
    if (auto keyed = m.ensure_host_key(); !keyed) {
        return keyed.error();
    }
    auto source = req.source.empty() ? std::optional(source_kind::webhook) : parse_source_kind(req.source);
    if (!source) {
        return make_error_code(errc::invalid_argument);
    }
    const std::string tenant = req.tenant.empty() ? "default" : req.tenant;
    seam_deliver_result out;

    auto submission = [&](const subscription& sub) {
        inbound_submission s;
        s.subscription_id = sub.id;
        s.provider_event_id = m.mint("evt");
        s.received_at = m.now();
        s.verified = true;
        s.content_json = std::string("{\"") + std::string(to_string(sub.source)) + "\":{}}";
        return s;
    };

    if (req.scenario == "dedup" || req.scenario == "deliver") {
        retry_policy quick{3, backoff_kind::fixed, 50, 50, false};
        auto sub = req.subscription_id.empty()
                       ? m.make_seam_subscription(tenant, *source, seam_noop_workflow, quick)
                       : m.owned(tenant, req.subscription_id);
        if (!sub) {
            return sub.error();
        }
        auto s = submission(*sub);
        if (req.scenario == "dedup") {
            s.verbatim_dedup_key = req.dedup_key.empty() ? m.mint("seam") : req.dedup_key;
        }
        auto first = m.submit_sync(s);
        if (first.status != submit_status::accepted && first.status != submit_status::duplicate) {
            return make_error_code(first.status == submit_status::unavailable ? errc::store_unavailable
                                                                               : errc::internal);
        }
        auto d = m.drive(first.delivery_id);
        if (!d) {
            return d.error();
        }
        out.subscription_id = sub->id;
        out.run_id = first.run_id;
        out.outcome = std::string(to_string(attempt_outcome::delivered));
        out.delivered_count = d->status == delivery_status::delivered ? 1 : 0;
        if (req.scenario == "dedup") {
            auto second = m.submit_sync(s); // same key: a no-op returning the prior run
            if (second.status == submit_status::accepted) {
                return make_error_code(errc::internal); // dedup broken: say so rather than pass
            }
        }
        return out;
    }
    if (req.scenario == "exhaust") {
        retry_policy quick{2, backoff_kind::fixed, 20, 20, false};
        auto sub = m.make_seam_subscription(tenant, *source, seam_fail_workflow, quick);
        if (!sub) {
            return sub.error();
        }
        auto first = m.submit_sync(submission(*sub));
        if (first.status != submit_status::accepted) {
            return make_error_code(first.status == submit_status::unavailable ? errc::store_unavailable
                                                                               : errc::internal);
        }
        auto d = m.drive(first.delivery_id);
        if (!d) {
            return d.error();
        }
        out.subscription_id = sub->id;
        out.run_id = sub->id; // the carrier: seam_events serves the subscription's run-less log
        out.outcome = std::string(to_string(attempt_outcome::dead_lettered));
        out.delivered_count = 0;
        return out;
    }
    if (req.scenario == "refused") {
        // A signed subscription and one post whose signature cannot match, through the webhook
        // intake's verification and refusal recording (the path a forged request takes).
        retry_policy quick{3, backoff_kind::fixed, 50, 50, false};
        auto sub = m.make_seam_subscription(tenant, *source, seam_noop_workflow, quick,
                                            m.box->seal("whsec_" + m.mint("seam"), m.random));
        if (!sub) {
            return sub.error();
        }
        inbound_http_request forged;
        forged.target = "/v1/ingest/" + sub->id;
        forged.body = "{}";
        const std::string ts = std::to_string(m.now() / 1000);
        forged.headers = {{"content-type", "application/json"},
                          {"webhook-id", m.mint("msg")},
                          {"webhook-timestamp", ts},
                          {"webhook-signature", "v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}};
        subscription as_webhook = *sub; // verification is the webhook intake's for every source
        as_webhook.source = source_kind::webhook;
        auto p = std::make_shared<std::promise<submit_result>>();
        auto f = p->get_future();
        m.ingest_webhook(as_webhook, forged, [p](submit_result r) { p->set_value(std::move(r)); });
        auto refused = f.get();
        if (refused.status != submit_status::signature_invalid) {
            return make_error_code(refused.status == submit_status::unavailable
                                       ? errc::store_unavailable
                                       : errc::internal);
        }
        auto after = m.st->get_subscription(sub->id);
        if (!after) {
            return after.error();
        }
        out.subscription_id = sub->id;
        out.run_id = sub->id; // the carrier, as for exhaust: the refusal is in the run-less log
        out.outcome = std::string(to_string(attempt_outcome::dead_lettered));
        out.subscription_state = std::string(to_string(after->state));
        out.delivered_count = 0;
        return out;
    }
    return make_error_code(errc::invalid_argument);
}

result<std::vector<run_event>> bridge::seam_events(const std::string& tenant, const std::string& run_id) {
    auto& m = *impl_;
    if (!m.settings.test_seams) {
        return make_error_code(errc::not_found);
    }
    if (auto run = m.st->get_run(run_id); run && run->tenant == tenant) {
        return m.st->run_events_after(run_id, -1, 100000);
    }
    if (auto sub = m.st->get_subscription(run_id); sub && sub->tenant == tenant) {
        return m.st->subscription_events(run_id);
    }
    return std::vector<run_event>{};
}

result<void> bridge::seam_reset(const std::string& tenant) {
    auto& m = *impl_;
    if (!m.settings.test_seams) {
        return make_error_code(errc::not_found);
    }
    auto subs = m.st->list_subscriptions(tenant);
    if (!subs) {
        return subs.error();
    }
    for (const auto& sub : *subs) {
        if (sub.origin == subscription::origin_kind::seam) {
            (void)m.st->delete_subscription(sub.id);
        }
    }
    return {};
}

result<void> bridge::ready() {
    auto& m = *impl_;
    if (auto r = m.st->ping(); !r) {
        m.note_store_failure("ping", r.error());
        return r;
    }
    if (m.store_failing.load()) {
        // Not ready until a write commits again; the probe is what tells, without traffic.
        if (auto w = m.st->probe_write(); !w) {
            return w;
        }
        m.note_store_recovered();
    }
    return {};
}

result<replay_result> bridge::replay_dead_letter(const std::string& tenant,
                                                 const std::string& subscription_id,
                                                 const std::string& attempt_event_id) {
    auto& m = *impl_;
    auto sub = m.owned(tenant, subscription_id);
    if (!sub) {
        return sub.error();
    }
    auto all = m.all_dead_letters(sub->id);
    if (!all) {
        return all.error();
    }
    for (const auto& dl : *all) {
        if (dl.attempt_event_id == attempt_event_id) {
            return m.replay(*sub, dl);
        }
    }
    return make_error_code(errc::not_found);
}

result<std::string> bridge::replay_dead_letters(const std::string& tenant,
                                                const std::string& subscription_id,
                                                const replay_range& range, double rate_per_second) {
    auto& m = *impl_;
    if (!(rate_per_second > 0)) {
        return make_error_code(errc::invalid_argument);
    }
    if (!range.all && !range.from && !range.to) {
        return make_error_code(errc::invalid_argument); // say which: a range or all
    }
    auto sub = m.owned(tenant, subscription_id);
    if (!sub) {
        return sub.error();
    }
    auto all = m.all_dead_letters(sub->id);
    if (!all) {
        return all.error();
    }
    std::vector<dead_letter> selected;
    for (auto it = all->rbegin(); it != all->rend(); ++it) { // oldest first
        if (it->reason != dead_letter_reason::retries_exhausted) {
            continue;
        }
        if (!range.all && ((range.from && it->dead_lettered_at < *range.from) ||
                           (range.to && it->dead_lettered_at > *range.to))) {
            continue;
        }
        selected.push_back(*it);
    }
    return m.jobs->create(m.mint("rpl"), *sub, selected, rate_per_second);
}

result<replay_job_status> bridge::get_replay_job(const std::string& tenant, const std::string& job_id) {
    return impl_->jobs->get(tenant, job_id);
}

void bridge::add_housekeeping_task(std::function<void(millis now)> task) {
    std::lock_guard lock(impl_->jobs_mutex);
    impl_->housekeeping_tasks.push_back(std::move(task));
}

result<int> bridge::purge_expired() {
    auto n = impl_->st->purge_expired(impl_->now());
    if (n && *n > 0) {
        impl_->metrics.increment("wopbridge_purged_rows_total", {}, *n);
    }
    return n;
}

std::string bridge::metrics_text() {
    return metrics_text_for(nullptr);
}

std::string bridge::metrics_text(const std::optional<std::string>& tenant) {
    return metrics_text_for(&tenant);
}

// scoped: nullptr = every series; nullopt = none naming a subscription; a tenant = its own.
std::string bridge::metrics_text_for(const std::optional<std::string>* scoped) {
    auto& m = *impl_;
    const std::string* tenant = scoped != nullptr && scoped->has_value() ? &**scoped : nullptr;
    std::set<std::string, std::less<>> own; // the scraping tenant's subscription ids
    // Snapshots computed at scrape time.
    if (auto subs = m.st->list_all_subscriptions()) {
        std::map<std::string, int> by_state{{"active", 0}, {"paused", 0}, {"failed", 0},
                                            {"dead-lettered", 0}};
        for (const auto& sub : *subs) {
            ++by_state[std::string(to_string(sub.state))];
            if (tenant != nullptr && sub.tenant == *tenant) {
                own.insert(sub.id);
            }
        }
        m.metrics.clear("wopbridge_subscriptions");
        for (const auto& [state, n] : by_state) {
            m.metrics.set("wopbridge_subscriptions", {{"state", state}}, n);
        }
        m.metrics.clear("wopbridge_subscription_state");
        for (const auto& sub : *subs) {
            for (const auto& [state, n] : by_state) {
                m.metrics.set("wopbridge_subscription_state",
                              {{"subscription", sub.id}, {"state", state}},
                              state == to_string(sub.state) ? 1 : 0);
            }
        }
    }
    if (auto counts = m.st->delivery_stats(m.now())) {
        subscription_delivery_stats total;
        m.metrics.clear("wopbridge_dead_letters_stored");
        for (const auto& c : *counts) {
            total.due += c.due;
            total.in_flight += c.in_flight;
            total.pending += c.pending;
            total.held += c.held;
            if (c.dead_letters > 0) {
                m.metrics.set("wopbridge_dead_letters_stored",
                              {{"subscription", c.subscription_id}},
                              static_cast<double>(c.dead_letters));
            }
        }
        m.metrics.set("wopbridge_deliveries_due", {}, static_cast<double>(total.due));
        m.metrics.set("wopbridge_deliveries_in_flight", {}, static_cast<double>(total.in_flight));
        m.metrics.set("wopbridge_deliveries_pending", {}, static_cast<double>(total.pending));
        m.metrics.set("wopbridge_deliveries_held", {}, static_cast<double>(total.held));
    }
    std::string text = scoped == nullptr  ? m.metrics.exposition()
                       : scoped->has_value() ? m.metrics.exposition_for(own)
                                             : m.metrics.exposition_without_subscriptions();
    auto st = m.st->stats();
    text += "# HELP wopbridge_store_commits_total Write transactions committed by the store.\n"
            "# TYPE wopbridge_store_commits_total counter\n"
            "wopbridge_store_commits_total " + std::to_string(st.commits) + "\n";
    // Networked backends (PostgreSQL): statements sent, and the intake group commits, so round
    // trips per accepted event can be read off a running node.
    text += "# HELP wopbridge_store_round_trips_total Statements sent to the database server.\n"
            "# TYPE wopbridge_store_round_trips_total counter\n"
            "wopbridge_store_round_trips_total " + std::to_string(st.round_trips) + "\n";
    text += "# HELP wopbridge_store_intake_batches_total Intake group-commit transactions.\n"
            "# TYPE wopbridge_store_intake_batches_total counter\n"
            "wopbridge_store_intake_batches_total " + std::to_string(st.intake_batches) + "\n";
    text += "# HELP wopbridge_store_intake_requests_total Intake requests answered by those "
            "batches.\n"
            "# TYPE wopbridge_store_intake_requests_total counter\n"
            "wopbridge_store_intake_requests_total " + std::to_string(st.intake_requests) + "\n";
    std::vector<std::function<std::string()>> sources;
    {
        std::lock_guard lock(m.observers_mutex);
        sources = m.metrics_sources;
    }
    for (const auto& render : sources) {
        text += render();
    }
    return text;
}

void bridge::add_metrics_source(std::function<std::string()> render) {
    std::lock_guard lock(impl_->observers_mutex);
    impl_->metrics_sources.push_back(std::move(render));
}

void bridge::set_connector_settings_sealer(connector_settings_sealer sealer) {
    impl_->settings_sealer = std::move(sealer);
}

const secret_box* bridge::data_key_box() const noexcept {
    return impl_->box ? &*impl_->box : nullptr;
}

result<bool> bridge::replace_connector_settings(const std::string& id, const std::string& expected,
                                                const std::string& replacement) {
    return impl_->st->replace_connector_settings(id, expected, replacement);
}

result<std::vector<subscription_overview>> bridge::overview(const std::string& tenant) {
    auto& m = *impl_;
    auto subs = m.st->list_subscriptions(tenant);
    if (!subs) {
        return subs.error();
    }
    std::map<std::string, subscription_delivery_stats> counts;
    if (auto all = m.st->delivery_stats(m.now())) {
        for (auto& c : *all) {
            counts[c.subscription_id] = std::move(c);
        }
    }
    std::vector<subscription_overview> out;
    out.reserve(subs->size());
    for (auto& sub : *subs) {
        subscription_overview o;
        if (auto it = counts.find(sub.id); it != counts.end()) {
            o.counts = it->second;
        }
        o.counts.subscription_id = sub.id;
        page_request newest;
        newest.limit = 1;
        if (auto pg = m.st->list_deliveries(sub.id, newest); pg && !pg->items.empty()) {
            o.last_delivery = std::move(pg->items.front());
        }
        o.record = std::move(sub);
        out.push_back(std::move(o));
    }
    return out;
}

int bridge::run_due(millis now) { return impl_->engine->run_due(now); }

bool bridge::has_intake_capacity() const noexcept {
    return impl_->pending_intake.load() < std::max(1, impl_->settings.max_pending_intake);
}

int bridge::run_schedules_due(millis now) { return impl_->sched->run_due(now); }

void bridge::add_run_event_observer(std::function<void(const run_event&)> observer) {
    std::lock_guard lock(impl_->observers_mutex);
    impl_->observers.push_back(std::move(observer));
}

outbound::webhook_dispatcher* bridge::webhooks() noexcept { return impl_->webhooks.get(); }

// ---- operator views: the run listing and dead letters with their replays -----------------------

namespace {

// The filters a runs cursor was minted for: a cursor only continues the listing it came from.
boost::json::array run_filters_json(const run_list_request& req) {
    return boost::json::array{
        boost::json::value(req.subscription_id), boost::json::value(req.workflow_id),
        boost::json::value(req.status ? std::string(to_string(*req.status)) : std::string()),
        boost::json::value(req.from.value_or(-1)), boost::json::value(req.to.value_or(-1))};
}

// Opaque: hex of {"c":"runs","f":[filters],"t":created_at,"i":run id}.
std::string encode_runs_cursor(const run_list_request& req, const run_record& last) {
    boost::json::object o{{"c", "runs"},
                          {"f", run_filters_json(req)},
                          {"t", last.created_at},
                          {"i", last.id}};
    return sig::to_hex(boost::json::serialize(o));
}

std::optional<run_position> decode_runs_cursor(const run_list_request& req) {
    auto text = sig::from_hex(req.cursor);
    if (!text) {
        return std::nullopt;
    }
    boost::system::error_code ec;
    auto v = boost::json::parse(*text, ec);
    if (ec || !v.is_object()) {
        return std::nullopt;
    }
    const auto& o = v.get_object();
    const auto* c = o.if_contains("c");
    const auto* f = o.if_contains("f");
    const auto* t = o.if_contains("t");
    const auto* i = o.if_contains("i");
    if (!c || !f || !t || !i || !c->is_string() || c->get_string() != "runs" || !t->is_int64() ||
        !i->is_string() || *f != boost::json::value(run_filters_json(req))) {
        return std::nullopt;
    }
    return run_position{t->get_int64(), std::string(i->get_string())};
}

} // namespace

void bridge::count_ingest(const std::string& subscription_id, submit_status status) {
    impl_->count_ingest(subscription_id, status);
}

result<page<run_record>> bridge::list_runs(const std::string& tenant, const run_list_request& req) {
    auto& m = *impl_;
    run_query q;
    q.tenant = tenant;
    q.subscription_id = req.subscription_id;
    q.workflow_id = req.workflow_id;
    q.status = req.status;
    if (req.from) {
        q.created_from = *req.from;
    }
    if (req.to) {
        q.created_to = *req.to;
    }
    if (!req.cursor.empty()) {
        auto pos = decode_runs_cursor(req);
        if (!pos) {
            return make_error_code(errc::invalid_argument);
        }
        q.before = std::move(*pos);
    }
    const int limit = std::clamp(req.limit, 1, std::max(1, m.settings.dead_letter_max_page_size));
    q.limit = limit + 1; // one more tells whether there is a next page
    auto rows = m.st->list_runs(q);
    if (!rows) {
        return rows.error();
    }
    page<run_record> out;
    if (static_cast<int>(rows->size()) > limit) {
        rows->resize(static_cast<std::size_t>(limit));
        out.next_cursor = encode_runs_cursor(req, rows->back());
    }
    out.items = std::move(*rows);
    return out;
}

result<page<dead_letter_view>> bridge::list_dead_letters_with_replays(const std::string& tenant,
                                                                      const std::string& id,
                                                                      const page_request& req) {
    auto dls = list_dead_letters(tenant, id, req);
    if (!dls) {
        return dls.error();
    }
    std::vector<std::string> keys;
    for (const auto& d : dls->items) {
        if (d.reason == dead_letter_reason::retries_exhausted) {
            keys.push_back(replay_dedup_key(d.attempt_event_id));
        }
    }
    std::map<std::string, delivery> replays;
    if (!keys.empty()) {
        auto found = impl_->st->deliveries_by_dedup_key(id, keys);
        if (!found) {
            return found.error();
        }
        replays = std::move(*found);
    }
    page<dead_letter_view> out;
    out.next_cursor = std::move(dls->next_cursor);
    for (auto& d : dls->items) {
        dead_letter_view v;
        if (auto it = replays.find(replay_dedup_key(d.attempt_event_id)); it != replays.end()) {
            v.replay = it->second;
        }
        v.record = std::move(d);
        out.items.push_back(std::move(v));
    }
    return out;
}

} // namespace wopbridge
