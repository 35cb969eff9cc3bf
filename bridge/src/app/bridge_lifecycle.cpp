// The bridge's life: impl construction and teardown, the host key check against the store, store
// health, run lifecycle callbacks, start/stop and the housekeeping thread.
#include "app/bridge_impl.hpp"
#include "core/thread_name.hpp"

namespace wopbridge {

using namespace bridge_detail;

void bridge::impl::notify_run_event(const run_event& e) {
    std::vector<std::function<void(const run_event&)>> copy;
    {
        wopbridge::lock_guard lock(observers_mutex);
        copy = observers;
    }
    for (const auto& f : copy) {
        f(e);
    }
}

bridge::impl::impl(bridge_settings s, std::unique_ptr<store> store_in,
                   std::unique_ptr<run_starter> starter_in, clock_source& clock_in,
                   random_source& random_in)
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
            wopbridge::lock_guard lock(mutex);
            reserved_runs.erase(rep.reserved_run_id);
        }
        if (!rep.run_id.empty()) {
            notify_run(rep.run_id);
        } else if (rep.outcome == attempt_outcome::dead_lettered) {
            notify_run(rep.reserved_run_id); // a poller waiting for this run: it never comes
        }
        {
            wopbridge::lock_guard lock(mutex);
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

bridge::impl::~impl() {
    stop_background();
    sched->stop();
    if (webhooks) {
        webhooks->stop();
    }
    engine->stop();
    starter->stop();
    starter->set_lifecycle_sink(nullptr);
}

void bridge::impl::note_store_failure(std::string_view operation,
                                      const boost::system::error_code& ec) {
    if (auto damage = st->damage(); !damage.empty()) {
        note_store_damaged(operation, damage);
        return;
    }
    if (!store_failing.exchange(true)) {
        log_line("error", "store.unavailable",
                 {{"operation", operation}, {"error", ec.message()}});
    }
}

void bridge::impl::note_store_damaged(std::string_view operation, const std::string& damage) {
    store_failing = true;
    if (!store_damage_logged.exchange(true)) {
        // Once: damage does not heal, and every later failure is the same damage.
        log_line("error", "store.damaged",
                 {{"operation", operation},
                  {"error", damage},
                  {"fix", "the database file is damaged: stop this node, check it with "
                          "`wopbridge check-store --config FILE` (integrity_check) and restore it "
                          "from a backup or salvage it (docs/guarantees/durable-intake.md); /readyz answers 503 "
                          "until then"}});
    }
}

void bridge::impl::note_store_recovered() {
    if (!st->damage().empty()) {
        return; // a write that avoided the damaged pages; the damage is still there
    }
    if (store_failing.exchange(false)) {
        log_line("info", "store.recovered", {});
    }
}

result<void> bridge::impl::ensure_host_key() {
    if (key_bound.load(std::memory_order_acquire)) {
        return {};
    }
    wopbridge::lock_guard lock(key_mutex);
    if (key_bound.load(std::memory_order_relaxed)) {
        return {};
    }
    if (key_refusal) {
        return make_error_code(key_refusal->code);
    }
    auto refuse = [&](errc code, std::string message) REQUIRES(key_mutex) -> result<void> {
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

void bridge::impl::on_run_finished(const std::string& run_id, bool succeeded,
                                   int exit_code) {
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

void bridge::impl::fail_interrupted_runs() {
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

void bridge::impl::stop_background() {
    jobs->stop();
    {
        wopbridge::lock_guard lock(jobs_mutex);
        jobs_stopping = true;
    }
    jobs_cv.notify_all();
    if (housekeeping.joinable()) {
        housekeeping.join();
    }
}

void bridge::impl::start_housekeeping() {
    {
        wopbridge::lock_guard lock(jobs_mutex);
        jobs_stopping = false;
    }
    housekeeping = std::thread([this] {
        name_this_thread("wb-housekeep");
        auto period = std::chrono::milliseconds(std::max<millis>(1000, settings.housekeeping_interval_ms));
        // A first pass at start: a node that was down past some expiries purges them now.
        for (;;) {
            if (auto n = st->purge_expired(now()); n && *n > 0) {
                metrics.increment("wopbridge_purged_rows_total", {}, *n);
            }
            std::vector<std::function<void(millis)>> tasks;
            {
                wopbridge::lock_guard lock(jobs_mutex);
                tasks = housekeeping_tasks;
            }
            for (const auto& task : tasks) {
                task(now());
            }
            wopbridge::unique_lock lock(jobs_mutex);
            auto stopping = [&]() REQUIRES(jobs_mutex) { return jobs_stopping; };
            if (lock.wait_for(jobs_cv, period, stopping)) {
                return;
            }
        }
    });
}

// ---- bridge ------------------------------------------------------------------------------------------

bridge::bridge(bridge_settings settings, std::unique_ptr<store> st, std::unique_ptr<run_starter> starter,
               clock_source& clock, random_source& random)
    : impl_(std::make_unique<impl>(std::move(settings), std::move(st), std::move(starter), clock,
                                   random)) {}

bridge::~bridge() { stop(); }

result<void, error_info> bridge::bind_host_key() {
    if (impl_->ensure_host_key()) {
        return {};
    }
    wopbridge::lock_guard lock(impl_->key_mutex);
    return impl_->key_refusal.value_or(
        error_info{errc::store_unavailable, "cannot read the store's host key check"});
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
        wopbridge::lock_guard lock(impl_->mutex);
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
        wopbridge::lock_guard lock(impl_->mutex);
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

void bridge::add_housekeeping_task(std::function<void(millis now)> task) {
    wopbridge::lock_guard lock(impl_->jobs_mutex);
    impl_->housekeeping_tasks.push_back(std::move(task));
}

result<int> bridge::purge_expired() {
    auto n = impl_->st->purge_expired(impl_->now());
    if (n && *n > 0) {
        impl_->metrics.increment("wopbridge_purged_rows_total", {}, *n);
    }
    return n;
}

} // namespace wopbridge
