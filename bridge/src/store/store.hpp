#pragma once
// The Store interface: every durable fact of the bridge goes through here. Backends live in
// store/<backend>/ and are the only code that sees SQL. Every mutating call is one transaction that is
// committed durably (fsync) before it returns or calls back; "committed" in these comments means that.
//
// Thread-safety: every method may be called from any thread.

#include "contract/types.hpp"
#include "core/error.hpp"

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wopbridge {

// store_meta rows that hold the data key wrapped under one host key: this prefix + the key check.
inline constexpr std::string_view data_key_wrap_prefix = "data_key_wrap:";

// ---- intake ---------------------------------------------------------------------------------------

struct intake_request {
    std::string subscription_id;
    std::string tenant;
    std::string dedup_key;        // host-opaque (or the seam's verbatim key); never inbound content
    bool dedup_enabled = true;
    std::string delivery_id;      // minted by the caller
    std::string run_id;           // reserved by the caller for the run this delivery starts
    millis received_at = 0;
    millis due_at = 0;
    bool hold = false;            // accept but do not deliver until the subscription is active again
    std::string content_json;     // the TriggerEvent JSON handed to the run; stored, never event-logged
    millis dedup_expires_at = 0;  // received_at + dedup retention
};

enum class intake_status { accepted, duplicate, held };

struct intake_outcome {
    intake_status status = intake_status::accepted;
    std::string delivery_id; // the new one, or the original one for a duplicate
    std::string run_id;      // the reserved run id (of the original delivery for a duplicate)
};

using intake_callback = std::function<void(result<intake_outcome>)>;

// ---- attempt recording ----------------------------------------------------------------------------

// The outcome of one delivery attempt, written in one transaction: the attempt event, the delivery
// row update, and (as applicable) the new run + run.started, the dead-letter row, the state change.
struct attempt_record {
    std::string delivery_id;
    std::string subscription_id;
    millis at = 0;
    delivery_attempt attempt;          // the trigger.delivery.attempted payload
    std::string attempt_event_id;      // pre-minted; becomes run.started.causationId when delivered

    // delivered:
    std::optional<run_record> run;              // the run to create (id = delivery.run_id)
    std::string run_started_event_id;
    std::string run_started_payload_json;       // the run.started payload
    std::vector<std::pair<std::string, std::string>> extra_run_events; // (type, payload) appended after
                                                                        // run.started (e.g. run.completed)
    // Event ids for extra_run_events, index for index. Entries missing here (or empty) get the
    // derived id "<run_started_event_id>.<n>" (n = 1-based index into extra_run_events).
    std::vector<std::string> extra_run_event_ids;
    // retrying:
    millis next_due_at = 0;
    std::string error; // content-free

    // Subscription bookkeeping done in the same transaction.
    int consecutive_failures = 0;
    millis next_probe_at = 0;
    std::optional<state_change> state_change_caused; // e.g. active -> failed, -> dead-lettered
    std::string state_change_event_id;
    millis dead_letter_expires_at = 0;               // when outcome is dead-lettered
};

// A dead letter written for a refused (unverified) inbound request: no delivery, no state change.
struct verification_refusal {
    std::string subscription_id;
    std::string dedup_key;
    std::string attempt_event_id;
    millis at = 0;
    millis expires_at = 0;
};

// ---- reads ----------------------------------------------------------------------------------------

struct page_request {
    int limit = 50;
    std::string cursor; // opaque, from a previous page; empty = first page
};

template <class T>
struct page {
    std::vector<T> items;
    std::string next_cursor; // empty on the last page
};

// Deliveries of one subscription by status, for the dashboard and the metrics gauges.
struct subscription_delivery_stats {
    std::string subscription_id;
    std::int64_t pending = 0;       // waiting (includes due and backing off)
    std::int64_t due = 0;           // of those, due at or before `now`
    std::int64_t in_flight = 0;
    std::int64_t held = 0;
    std::int64_t delivered = 0;
    std::int64_t dead_lettered = 0; // deliveries that ended dead-lettered
    std::int64_t dead_letters = 0;  // unexpired dead letters (verification refusals included)
};

// Counters of a store's own work, for tests and metrics.
struct store_stats {
    std::uint64_t commits = 0;         // write transactions committed (each one fsync)
    std::uint64_t intake_batches = 0;  // group-commit transactions of the intake writer
    std::uint64_t intake_requests = 0; // intake requests answered from those batches
    std::uint64_t round_trips = 0;     // statements sent to a database server (networked backends)
    // PostgreSQL: the subscription cache is in use (its change notifications are being received).
    bool subscription_cache_live = false;
};

// ---- outbound webhooks (webhooks.md; bridge/src/outbound/) ---------------------------------------

// A run-event webhook subscription. The secrets are sealed (core/secret_box); reads never carry them.
struct outbound_webhook {
    std::string id;
    std::string tenant;                 // the workspace whose runs it receives
    std::string url;
    std::vector<std::string> events;    // RunEventType values
    std::vector<std::string> tags;
    std::string sealed_secret;          // the host-generated v1 secret
    std::string sealed_standard_secret; // optional subscriber "whsec_" secret (Standard Webhooks)
    std::string secret_fingerprint;     // first 8 hex of sha256(secret)
    sub_state state = sub_state::active;
    int consecutive_failures = 0;
    millis breaker_open_until = 0;      // best-effort breaker: 0 = closed
    millis created_at = 0;
    millis updated_at = 0;
};

// One (webhook, run event) delivery of the outbox. Status: pending, in_flight, delivered, failed
// (best-effort, not retried), skipped (best-effort breaker open), dead_lettered.
struct outbound_delivery {
    std::string id;
    std::string webhook_id;
    std::string run_id;
    std::int64_t sequence = 0;
    std::string event_type;
    std::string status;
    int attempts = 0;
    millis due_at = 0;
    millis created_at = 0;
    std::string last_error; // content-free
};

struct outbound_state_change {
    std::string webhook_id;
    sub_state from = sub_state::active;
    sub_state to = sub_state::active;
    std::string reason; // kebab-case: retry-exhausted, failure-threshold
    millis at = 0;
};

// The outcome of one outbound attempt, written in one transaction.
struct outbound_attempt {
    std::string delivery_id;
    std::string webhook_id;
    millis at = 0;
    std::string status;       // delivered | pending (retry) | failed | skipped | dead_lettered
    bool counted_attempt = true; // false for a breaker skip (nothing was sent)
    bool failure = false;        // a failed send: counted in the 7-day failure window
    millis next_due_at = 0;      // status pending
    std::string error;           // content-free
    int consecutive_failures = 0;
    millis breaker_open_until = 0;
    std::optional<outbound_state_change> state_change;
    millis dead_letter_expires_at = 0; // status dead_lettered
};

struct outbound_dead_letter {
    std::string webhook_id;
    std::string delivery_id;
    std::string run_id;
    std::int64_t sequence = 0;
    std::string event_type;
    int attempts = 0;
    std::string reason; // retries_exhausted
    std::string last_error;
    millis dead_lettered_at = 0;
    millis expires_at = 0;
    std::optional<outbound_state_change> state_change;
};

// ---- bulk dead-letter replay jobs (SQLite migration 8, PostgreSQL migration 7) ------------------

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

// ---- operator views: the run listing (appended) ----------------------------------------------------

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

// ---- the interface --------------------------------------------------------------------------------

class store {
public:
    virtual ~store() = default;

    // Subscriptions.
    virtual result<void> insert_subscription(const subscription& s) = 0;          // already_exists
    virtual result<void> upsert_config_subscription(const subscription& s) = 0;   // keeps state + breaker
    virtual result<subscription> get_subscription(const std::string& id) = 0;     // not_found
    virtual result<std::vector<subscription>> list_subscriptions(const std::string& tenant) = 0;
    virtual result<std::vector<subscription>> list_all_subscriptions() = 0;
    virtual result<void> delete_subscription(const std::string& id) = 0;
    // Compare-and-set of the state: fails with conflict when the stored state != expected_from.
    // Appends the state change to the subscription's run-less event log in the same transaction.
    virtual result<void> change_state(const state_change& change, const std::string& event_id,
                                      millis at) = 0;

    // Intake: inserts the dedup row (a uniqueness constraint on (subscription_id, dedup_key)) and the
    // delivery row in one transaction. A repeat key within retention answers `duplicate` with the
    // original delivery's ids. Writes from many threads are grouped into one commit (one fsync).
    // The callback runs on a store thread after the commit; it must not block.
    virtual void intake(intake_request req, intake_callback done) = 0;
    // Synchronous convenience wrapper around intake().
    result<intake_outcome> intake_sync(intake_request req);

    virtual result<void> record_verification_refusal(const verification_refusal& r) = 0;

    // Deliveries. claim_due marks up to `limit` pending deliveries of `active` (or probing `failed`)
    // subscriptions due at or before `now` as in_flight with a lease until now + lease_ms, and returns
    // them. A lease that expires (the claimer died) makes the delivery claimable again.
    virtual result<std::vector<delivery>> claim_due(millis now, int limit, millis lease_ms) = 0;
    virtual result<std::string> delivery_content(const std::string& delivery_id) = 0;
    virtual result<void> record_attempt(const attempt_record& rec) = 0;
    // Several attempts at once: where the backend can, in one transaction (one fsync, shared with
    // intake's group commit on SQLite), each record in its own savepoint so one that fails (a
    // settled delivery: conflict) leaves the others; a commit that fails fails them all. One result
    // per record, in order. The default records them one by one through record_attempt.
    virtual std::vector<result<void>> record_attempts(const std::vector<attempt_record>& recs);
    // The contents of several deliveries by id; a missing one is absent from the map. The default
    // reads them one by one through delivery_content.
    virtual result<std::map<std::string, std::string>>
    delivery_contents(const std::vector<std::string>& delivery_ids);
    virtual result<std::optional<millis>> next_due_at() = 0; // earliest pending due time, if any
    virtual result<page<delivery>> list_deliveries(const std::string& subscription_id,
                                                   const page_request& req) = 0;
    virtual result<delivery> get_delivery(const std::string& delivery_id) = 0;
    // Held deliveries of a subscription become pending (due now), in arrival order.
    virtual result<int> release_held(const std::string& subscription_id, millis now) = 0;

    // Dead letters, newest first. A cursor minted for another subscription -> invalid_argument.
    virtual result<page<dead_letter>> list_dead_letters(const std::string& subscription_id,
                                                        const page_request& req, millis now) = 0;

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

    // Housekeeping: drops dedup rows, dead letters and finished replay jobs past their expiry.
    // Returns rows removed.
    virtual result<int> purge_expired(millis now) = 0;

    // The host keys a store opens with. A key is known by its check value (an HMAC of a fixed
    // label: it reveals nothing of the key); each allowed key keeps the store's data key wrapped
    // under it. bind_host_key_check binds a new store: the first check bound is kept, with its
    // wrap in the same transaction, and every later bind answers the kept one (two nodes starting
    // at once: one wins, the other compares). host_key_check reads it ("" = not bound). A store
    // bound before data keys existed has the check and no wraps.
    virtual result<std::string> bind_host_key_check(const std::string& check,
                                                    const std::string& wrapped_data_key) = 0;
    virtual result<std::string> host_key_check() = 0;
    // Whether anything sealed or keyed with a data key is stored (subscriptions, dedup rows,
    // outbound webhooks): an unbound store holding such rows is from before data keys.
    virtual result<bool> has_keyed_rows() = 0;
    // Wrapped data key by key check.
    virtual result<std::map<std::string, std::string>> data_key_wraps() = 0;
    // Allows one more key (rotation's first step, or a store bound before data keys): kept as is
    // when that key already has a wrap.
    virtual result<void> add_data_key_wrap(const std::string& check, const std::string& wrapped) = 0;
    // Rotation's last step: every wrap but `keep_check`'s is dropped and the binding names it, in
    // one transaction. Returns the wraps dropped; not_found when `keep_check` has none.
    virtual result<int> retire_data_key_wraps(const std::string& keep_check) = 0;

    // Cheap liveness probe for /readyz.
    virtual result<void> ping() = 0;
    // For a store only this process serves (SQLite, under serve's lock): the claims a previous
    // process left (deliveries and bulk replay jobs) are claimable now rather than when their
    // leases run out. Returns how many deliveries.
    // Backends shared by several nodes answer unsupported (another node's claims are live).
    virtual result<int> release_all_claims() { return make_error_code(errc::unsupported); }
    // Stores shared by several nodes (PostgreSQL): this node is alive (a beat every second or so),
    // and the deliveries claimed by a node silent for longer than `silent_ms`, by the database's
    // clock, are claimable now rather than when their leases run out. Returns how many were
    // freed. Single-node stores answer unsupported (serve's lock and release_all_claims cover
    // them).
    virtual result<int> keep_node_alive(millis /*silent_ms*/) {
        return make_error_code(errc::unsupported);
    }
    // This node stops: it is no longer listed and its unsettled claims are claimable at once.
    virtual result<void> leave_cluster() { return make_error_code(errc::unsupported); }
    // A small committed (fsynced) write, for /readyz after a failed commit: a full disk or a
    // read-only file fails it, so readiness returns only once writes work again.
    virtual result<void> probe_write() { return ping(); }

    // Counters since open (backends without counters report zeros).
    virtual store_stats stats() const { return {}; }

    // ---- outbound webhooks (appended; backends without them answer unsupported) ----
    // Backends that can, enqueue the outbox rows for every subscribed webhook in the same
    // transaction as the run event (append_run_event / record_attempt); enqueue_outbound does the
    // same explicitly and is idempotent on (webhook_id, run_id, sequence).
    virtual result<void> insert_outbound_webhook(const outbound_webhook&) {
        return make_error_code(errc::unsupported);
    }
    virtual result<outbound_webhook> get_outbound_webhook(const std::string&) {
        return make_error_code(errc::unsupported);
    }
    virtual result<std::vector<outbound_webhook>> list_outbound_webhooks(const std::string&) {
        return make_error_code(errc::unsupported);
    }
    virtual result<void> delete_outbound_webhook(const std::string&) {
        return make_error_code(errc::unsupported);
    }
    virtual result<int> enqueue_outbound(const std::string&, std::int64_t, millis) {
        return make_error_code(errc::unsupported);
    }
    // Claims up to `limit` due deliveries of active webhooks (pending and due, or in_flight with an
    // expired lease), at most `per_webhook_limit` in flight per webhook, leased until now + lease_ms.
    virtual result<std::vector<outbound_delivery>> claim_outbound_due(millis, int, int, millis) {
        return make_error_code(errc::unsupported);
    }
    virtual result<void> record_outbound_attempt(const outbound_attempt&) {
        return make_error_code(errc::unsupported);
    }
    // Failed sends of a webhook at or after `since` (the best-effort 7-day window).
    virtual result<int> count_outbound_failures(const std::string&, millis) {
        return make_error_code(errc::unsupported);
    }
    virtual result<std::optional<millis>> outbound_next_due_at() {
        return make_error_code(errc::unsupported);
    }
    virtual result<std::vector<outbound_delivery>> list_outbound_deliveries(const std::string&) {
        return make_error_code(errc::unsupported);
    }
    // Newest first; a cursor minted for another webhook -> invalid_argument.
    virtual result<page<outbound_dead_letter>> list_outbound_dead_letters(const std::string&,
                                                                          const page_request&,
                                                                          millis) {
        return make_error_code(errc::unsupported);
    }
    virtual result<std::vector<outbound_state_change>> list_outbound_state_changes(
        const std::string&) {
        return make_error_code(errc::unsupported);
    }

    // ---- bulk replay jobs (appended; backends without them answer unsupported) ----
    // The job (owned by job.owner until job.lease_until) and its selection, in one transaction.
    virtual result<void> create_replay_job(const replay_job_record&,
                                           const std::vector<std::string>& /*attempt_event_ids*/) {
        return make_error_code(errc::unsupported);
    }
    virtual result<replay_job_record> get_replay_job(const std::string&) { // not_found
        return make_error_code(errc::unsupported);
    }
    // The items of a job not settled yet (selected or replayed), by position.
    virtual result<std::vector<replay_job_item>> unsettled_replay_job_items(const std::string&) {
        return make_error_code(errc::unsupported);
    }
    virtual result<void> update_replay_job(const replay_job_update&) {
        return make_error_code(errc::unsupported);
    }
    // Running jobs whose lease ran out (their node died or let go): leased to `owner` until
    // now + lease_ms and returned. Across nodes each is taken by one.
    virtual result<std::vector<replay_job_record>> claim_replay_jobs(const std::string& /*owner*/,
                                                                     millis /*now*/,
                                                                     millis /*lease_ms*/) {
        return make_error_code(errc::unsupported);
    }
    // Lets go of the leases `owner` holds (a clean stop), so a restart or another node resumes
    // its jobs at once. Returns how many.
    virtual result<int> release_replay_jobs(const std::string& /*owner*/) {
        return make_error_code(errc::unsupported);
    }

    // ---- operator views (appended; backends without them answer unsupported) ----
    // Delivery counts per subscription (only subscriptions with deliveries or dead letters appear).
    // A read: metrics gauges and the dashboard overview call it on every scrape / refresh.
    virtual result<std::vector<subscription_delivery_stats>> delivery_stats(millis /*now*/) {
        return make_error_code(errc::unsupported);
    }

    // ---- operator views: runs and replays (appended; backends without them: unsupported) ----
    // Up to q.limit runs of q.tenant matching the filters, newest first. A run started by a
    // dead-letter replay has replay_of_attempt_event_id set (from its delivery's dedup key).
    virtual result<std::vector<run_record>> list_runs(const run_query& /*q*/) {
        return make_error_code(errc::unsupported);
    }
    // The deliveries of a subscription that hold these dedup keys (a dead letter's replay holds
    // "replay:<attemptEventId>"), by dedup key; keys without a delivery are absent.
    virtual result<std::map<std::string, delivery>>
    deliveries_by_dedup_key(const std::string& /*subscription_id*/,
                            const std::vector<std::string>& /*dedup_keys*/) {
        return make_error_code(errc::unsupported);
    }

    // ---- connector secrets sealed at rest (appended) ----
    // Compare-and-set of a subscription's connector_settings_json in one statement: false when the
    // stored value is not `expected` (changed meanwhile, by this node or another) or the
    // subscription is gone. Nothing else of the row changes.
    virtual result<bool> replace_connector_settings(const std::string& /*id*/,
                                                    const std::string& /*expected*/,
                                                    const std::string& /*replacement*/) {
        return result<bool>(boost::system::in_place_error, make_error_code(errc::unsupported));
    }
};

struct sqlite_options {
    std::string path;                 // file path; ":memory:" is refused (durability)
    int group_commit_max_batch = 256; // intake requests per transaction at most
    millis busy_timeout_ms = 5000;
    // Size cap in database pages (0 = none). Past it writes fail like on a full disk:
    // store_unavailable, nothing half-written. (Never below the current size.)
    std::int64_t max_page_count = 0;
    // WAL size (pages) past which the checkpointer copies it back and restarts it; the WAL stays
    // near this size under sustained load and is truncated after a second without commits.
    int checkpoint_pages = 4096;
    // A 0-byte file is a database that was lost (or a creation that never finished): refused as a
    // new store unless `init` says so (`serve --init`).
    bool init = false;
    // PRAGMA quick_check before serving: a damaged file is refused, not served.
    bool check_integrity = true;
};

// `path` may also be an SQLite URI ("file:/var/lib/x.db?mode=ro"). Fails with store_unavailable
// when the file cannot be opened or migrated, unsupported when its schema is newer than this build.
result<std::unique_ptr<store>> open_sqlite_store(const sqlite_options& opts);
// The same, with a human-readable reason (no secrets) in `why` on failure.
result<std::unique_ptr<store>> open_sqlite_store(const sqlite_options& opts, error_info& why);

// ---- PostgreSQL (several bridge nodes sharing one database) ------------------------------------

struct postgres_options {
    // libpq connection URI or key=value string ("postgresql://user@host:5432/db"). Holds a
    // password at most; never logged or echoed in errors.
    std::string url;
    int pool_size = 4; // connections for synchronous calls (plus the intake writer and the listener)
    int group_commit_max_batch = 256; // intake requests per transaction at most
    int connect_timeout_s = 5;        // applies to the first connect and to every reconnect
};

// Connects, applies pending migrations (once across nodes: under an advisory lock) and returns the
// store. store_unavailable when the server cannot be reached or migrated, unsupported when the
// schema is newer than this build. A lost connection later makes calls answer store_unavailable
// until a later call reconnects.
result<std::unique_ptr<store>> open_postgres_store(const postgres_options& opts, error_info& why);

} // namespace wopbridge
