#pragma once
// The bridge: the one object that owns the contract. HTTP handlers, connector modules (through the
// plugin host) and the scheduler all go through it; none of them touches the store directly.
// No Asio/Beast here: asynchronous results come back through std::function callbacks, which run on a
// store or engine thread and must not block (the HTTP layer re-posts them onto its own executor).
// The HTTP layer sees it through the role interfaces of app/bridge_api.hpp, which it implements.

#include "app/bridge_api.hpp"
#include "core/clock.hpp"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace wopbridge {

class run_starter;
class delivery_engine;
class secret_box;

// ---- the bridge ------------------------------------------------------------------------------------

class bridge final : public bridge_api {
public:
    bridge(bridge_settings settings, std::unique_ptr<store> st, std::unique_ptr<run_starter> starter,
           clock_source& clock, random_source& random);
    ~bridge();
    bridge(const bridge&) = delete;
    bridge& operator=(const bridge&) = delete;

    // Starts the delivery engine and the scheduler threads; stop() drains them (in-flight attempts
    // finish and are recorded) and is idempotent.
    result<void> start();
    void stop();
    // Checks the host key against the one the store was sealed with (binding a new store to it);
    // start() and apply_config_subscriptions() do too. A refusal says why and the fix (conflict:
    // another key than the store's).
    result<void, error_info> bind_host_key();

    const bridge_settings& settings() const noexcept override;

    // Subscriptions from the config file: inserted or updated (state and breaker kept), and
    // config-origin subscriptions no longer in the file are deleted (state change reason source-removed).
    result<void> apply_config_subscriptions(const std::vector<subscription>& subs,
                                            const std::map<std::string, std::string>& secrets);

    // Management (tenant-scoped: another tenant's id is not_found).
    result<registration_result> register_subscription(const registration_request& req) override;
    result<std::vector<subscription>> list_subscriptions(const std::string& tenant) override;
    result<subscription_view> get_subscription(const std::string& tenant, const std::string& id) override;
    // pause / resume / operator re-activation of failed or dead-lettered.
    result<subscription> set_state(const std::string& tenant, const std::string& id, sub_state to) override;
    result<void> delete_subscription(const std::string& tenant, const std::string& id) override;
    result<page<delivery>> list_deliveries(const std::string& tenant, const std::string& id,
                                           const page_request& req) override;
    result<page<dead_letter>> list_dead_letters(const std::string& tenant, const std::string& id,
                                                const page_request& req) override;

    // Unauthenticated lookup for the ingest route (no tenant: the signature authenticates).
    result<subscription> find_subscription(const std::string& id) override;
    // Every tenant's subscriptions (the connector sync: what the loaded connectors must serve).
    result<std::vector<subscription>> all_subscriptions();

    // Intake. ingest_webhook verifies a Standard Webhooks request for a `source: webhook`
    // subscription and submits it. submit() is what connectors call after their own verification.
    void ingest_webhook(const std::string& subscription_id, const inbound_http_request& req,
                        submit_callback done) override;
    // The same for a subscription the caller has just read (find_subscription): no second read.
    void ingest_webhook(const subscription& sub, const inbound_http_request& req,
                        submit_callback done) override;
    void submit(const inbound_submission& s, submit_callback done);

    // Runs.
    result<run_record> get_run(const std::string& tenant, const std::string& run_id) override;
    result<poll_result> read_events(const std::string& tenant, const std::string& run_id,
                                    std::int64_t after_sequence, int limit = 1000) override;
    // Calls `notify` once, from any thread, when the run gets an event with sequence > after_sequence
    // (or immediately if it already has one). Returns a token for cancel_watch.
    std::uint64_t watch_run(const std::string& run_id, std::int64_t after_sequence,
                            std::function<void()> notify) override;
    void cancel_watch(std::uint64_t token) override;
    // Calls `notify` once, from the writing thread, at the next write on this node that touches
    // the tenant's subscriptions, deliveries, dead letters or runs (app/change_feed.hpp: a hint
    // for live views, never content). Returns a token for cancel_changes_watch.
    std::uint64_t watch_changes(const std::string& tenant, std::function<void()> notify) override;
    void cancel_changes_watch(std::uint64_t token) override;

    // Conformance seams (only when settings().test_seams).
    result<seam_deliver_result> seam_deliver(const seam_deliver_request& req) override;
    result<std::vector<run_event>> seam_events(const std::string& tenant, const std::string& run_id) override;
    result<void> seam_reset(const std::string& tenant) override;

    // Readiness: store reachable.
    result<void> ready() override;

    // Replay of a dead letter (retries_exhausted only; verification failures: conflict): a new
    // delivery of the stored content whose run.started carries metadata.replayOf = attempt_event_id.
    result<replay_result> replay_dead_letter(const std::string& tenant, const std::string& subscription_id,
                                             const std::string& attempt_event_id) override;
    // Bulk replay on a background thread, at most `rate_per_second`; stops by itself after
    // `replay_failure_limit` consecutive replays dead-letter again. Returns the job id. The job is
    // stored: a stop or crash leaves it running, and the next start (or another node of a shared
    // store) resumes it at its first unsettled dead letter (app/replay_jobs.hpp).
    result<std::string> replay_dead_letters(const std::string& tenant, const std::string& subscription_id,
                                            const replay_range& range, double rate_per_second) override;
    result<replay_job_status> get_replay_job(const std::string& tenant, const std::string& job_id) override;

    // Housekeeping: drops expired dedup rows and dead letters now (also done periodically by start()).
    result<int> purge_expired();
    // Also run by the housekeeping timer (at start, then every housekeeping_interval_ms), with the
    // injected clock's now: e.g. serve's attachment retention. Must not block for long.
    void add_housekeeping_task(std::function<void(millis now)> task);

    // Prometheus text exposition of the bridge's metrics: every series.
    std::string metrics_text();
    // For a scrape: with no tenant, no series names a subscription (ids are ingest URLs; those
    // families are summed over the label); with one, only that tenant's subscriptions' series.
    std::string metrics_text(const std::optional<std::string>& tenant) override;

    // Deterministic driving (tests, with a fake clock): claims and completes every delivery due at
    // `now` in the calling thread. Returns the attempts recorded.
    int run_due(millis now);
    // False while delivery.maxPendingIntake submissions wait for their commit: queue-like
    // connectors stop reading and the SMTP source answers 452 until it is true again.
    bool has_intake_capacity() const noexcept;
    // The same for the scheduler: submits every schedule tick due at `now` (tests, tick seam).
    int run_schedules_due(millis now);

    // ---- appended: run-event observers and outbound webhooks ----
    // `observer` is called after the commit of every run event appended through the bridge (from
    // the appending thread; it must not block). Observers cannot be removed; add them before
    // start().
    void add_run_event_observer(std::function<void(const run_event&)> observer);
    // The outbound webhook dispatcher (webhooks.md), owned by the bridge and started/stopped with
    // it; null when the host key is unavailable.
    outbound::webhook_dispatcher* webhooks() noexcept override;

    // ---- appended: operator views ----
    // Every subscription of the tenant with its delivery counts and newest delivery.
    result<std::vector<subscription_overview>> overview(const std::string& tenant) override;
    // Extra Prometheus text appended to metrics_text() at each scrape (e.g. connector counters the
    // serve command collects from the connector host). Add before start().
    void add_metrics_source(std::function<std::string()> render);

    // ---- appended: operator views of runs and replays ----
    // Counts an inbound request answered before intake (the ingest route's unknown id) in
    // wopbridge_ingests_total, like every answer submit() gives.
    void count_ingest(const std::string& subscription_id, submit_status status) override;
    void count_rate_limited(const std::string& subscription_id, std::string_view limit,
                            std::string_view address) override;
    // The tenant's runs, newest first. A cursor minted for other filters (or garbage):
    // invalid_argument.
    result<page<run_record>> list_runs(const std::string& tenant, const run_list_request& req) override;
    // A page of dead letters (as list_dead_letters) with the state of each one's replay.
    result<page<dead_letter_view>> list_dead_letters_with_replays(const std::string& tenant,
                                                                  const std::string& id,
                                                                  const page_request& req) override;

    // ---- appended: connector secrets sealed at rest ----
    // Turns a connector subscription's settings into what the store keeps (the connector host's
    // seal_settings: the values its module marks secret sealed); an error refuses them.
    // register_subscription and apply_config_subscriptions call it before every write of connector
    // settings. Set it before start(); unset, settings are stored as given.
    using connector_settings_sealer = std::function<result<std::string>(
        const std::string& connector, const std::string& settings_json)>;
    void set_connector_settings_sealer(connector_settings_sealer sealer);
    // The store's data key once bind_host_key() or start() opened it (null when the host key file
    // is unusable): what connector settings are sealed with and open with.
    const secret_box* data_key_box() const noexcept;
    // Replaces a subscription's stored connector settings if they are still `expected` (false when
    // they changed meanwhile, or the subscription is gone): the sealing of rows stored in clear.
    result<bool> replace_connector_settings(const std::string& id, const std::string& expected,
                                            const std::string& replacement);

    struct impl;

private:
    std::string metrics_text_for(const std::optional<std::string>* scoped);

    std::unique_ptr<impl> impl_;
};

} // namespace wopbridge
