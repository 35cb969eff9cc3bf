#pragma once
// The PostgreSQL store's private declarations, shared by its role files: postgres_store.cpp
// (open, threads, upkeep, cluster), postgres_subscriptions.cpp, postgres_intake.cpp,
// postgres_deliveries.cpp, postgres_attempts.cpp, postgres_runs.cpp, postgres_keys.cpp and
// postgres_rows.cpp (row mapping).
#include "core/thread_annotations.hpp"
#include "store/postgres/pg_connection.hpp"
#include "store/postgres/pg_migrations.hpp"
#include "store/postgres/pg_outbound.hpp"
#include "store/postgres/pg_replay_jobs.hpp"
#include "store/store.hpp"
#include "store/store_codec.hpp"
#include "store/store_rows.hpp"
#include "store/store_try.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <iterator>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <utility>

// The placeholders of WB_SUB_COLS (store_rows.hpp).
#define WB_PG_SUB_PARAMS                                                                           \
    "$1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, "  \
    "$21, $22, $23, $24, $25, $26, $27, $28"
// How many more claims subscription `s` has room for: $3 (the claim's limit) when unbounded, else
// its maxConcurrency minus its unexpired leases ($1 = now).
#define WB_CLAIM_ROOM                                                                              \
    "(CASE WHEN s.max_concurrency > 0 THEN GREATEST(0, s.max_concurrency - (SELECT COUNT(*) "      \
    "FROM deliveries f WHERE f.subscription_id = s.id AND f.status = 'in_flight' "                 \
    "AND f.lease_until > $1)) ELSE $3 END)"
#define WB_EVENT_COLS "event_id, type, payload_json, timestamp, sequence, causation_id"

namespace wopbridge::postgres_detail {

using postgres::connection;
using postgres::p;
using postgres::p_or_null;
using postgres::param;
using postgres::rows;
namespace codec = store_codec;

constexpr int max_page_limit = 1000;
constexpr std::string_view deliveries_cursor = "deliveries";
constexpr std::string_view dead_letters_cursor = "dead-letters";
constexpr int batch_replays = 3;       // deadlock / serialization retries of one intake batch
constexpr int transaction_retries = 3; // the same for other write transactions

int clamp_limit(int limit);
result<subscription> read_subscription(const rows& r, int i);
std::vector<param> subscription_params(const subscription& s);
// Reads WB_DLV_COLS; the sort key (seq) is column 11.
result<delivery> read_delivery(const rows& r, int i);
result<run_record> read_run(const rows& r, int i);
std::vector<run_event> read_events(const rows& r, const std::string& run_id);
result<dead_letter> read_dead_letter(const rows& r, int i);
result<bool> subscription_exists(connection& c, const std::string& id);
// Compare-and-set of the state plus its event on the subscription log, in one statement: the
// counter bump locks the subscription row, so the event sequence is gap-free across nodes.
result<void> apply_state_change(connection& c, const state_change& change,
                                const std::string& event_id, millis at,
                                const std::string& causation_id);
std::string make_node_id();

class postgres_store final : public store {
  public:
    postgres_store(std::unique_ptr<connection> writer,
                   std::vector<std::unique_ptr<connection>> pool,
                   std::unique_ptr<connection> listener, int max_batch);
    ~postgres_store() override;

    // ---- subscriptions ----

    result<void> insert_subscription(const subscription& s) override;
    result<void> upsert_config_subscription(const subscription& s) override;

    // Served from memory while the row is unchanged: every change of a subscriptions row, on any
    // node, is announced at its commit (migration 5's trigger, channel wopbridge_subscriptions)
    // and the listener thread forgets it. While the listener is not connected nothing is cached;
    // an entry is re-read after cache_ttl in any case. So a pause made through another node is
    // seen here within the notification's delivery (milliseconds), not just at the next read.
    result<subscription> get_subscription(const std::string& id) override;
    result<subscription> read_subscription_row(const std::string& id);
    result<std::vector<subscription>> list_subscriptions(const std::string& tenant) override;
    result<std::vector<subscription>> list_all_subscriptions() override;
    result<void> delete_subscription(const std::string& id) override;

    // ---- operator views: runs and replays ----

    result<std::vector<run_record>> list_runs(const run_query& q) override;
    result<std::map<std::string, delivery>>
    deliveries_by_dedup_key(const std::string& subscription_id,
                            const std::vector<std::string>& keys) override;
    result<bool> replace_connector_settings(const std::string& id, const std::string& expected,
                                            const std::string& replacement) override;
    result<void> change_state(const state_change& change, const std::string& event_id,
                              millis at) override;

    // ---- intake ----

    void intake(intake_request req, intake_callback done) override;
    result<void> record_verification_refusal(const verification_refusal& v) override;

    // ---- deliveries ----

    // Common case, one statement (autocommit): claim due deliveries of active subscriptions and
    // learn whether a failed subscription is due for a probe. Only then a second transaction
    // takes the probes. Rows another node is claiming right now are skipped, not waited for; the
    // quals are re-checked on the latest row version, so a row claimed and committed meanwhile is
    // never taken twice.
    result<std::vector<delivery>> claim_due(millis now, int limit, millis lease_ms) override;
    result<std::string> delivery_content(const std::string& delivery_id) override;

    // One round trip for a whole claimed batch.
    result<std::map<std::string, std::string>>
    delivery_contents(const std::vector<std::string>& delivery_ids) override;
    result<void> record_attempt(const attempt_record& rec) override;

    // ---- the subscription cache's invalidation ----

    static constexpr std::size_t max_cached_subscriptions = 10000;
    static constexpr auto cache_ttl = std::chrono::seconds(5);
    void forget_subscription(const std::string& id) EXCLUDES(subs_mu_);
    void set_listening(bool on) EXCLUDES(subs_mu_);

    // Forgets the row when this node's write is done, whatever its outcome (read-your-writes on
    // this node; the notification tells the others).
    struct subscription_forget {
        postgres_store& self;
        const std::string& id;
        ~subscription_forget() { self.forget_subscription(id); }
    };
    void listener_loop() EXCLUDES(listener_mu_, subs_mu_);

    // One transaction for the whole batch (BEGIN and COMMIT once, two statements a record). A
    // record that fails (a settlement another node made first) undoes the batch; then each record
    // is tried on its own, so the others still commit.
    std::vector<result<void>> record_attempts(const std::vector<attempt_record>& recs) override;
    result<std::vector<subscription_delivery_stats>> delivery_stats(millis now) override;
    result<std::vector<subscription_delivery_stats>> outstanding_work(millis now) override;
    result<std::optional<millis>> next_due_at() override;
    result<page<delivery>> list_deliveries(const std::string& subscription_id,
                                           const page_request& req) override;
    result<delivery> get_delivery(const std::string& delivery_id) override;
    result<int> release_held(const std::string& subscription_id, millis now) override;

    // ---- dead letters ----

    result<page<dead_letter>> list_dead_letters(const std::string& subscription_id,
                                                const page_request& req, millis now) override;

    // ---- runs ----

    result<run_record> get_run(const std::string& run_id) override;
    result<std::vector<run_event>>
    run_events_after(const std::string& run_id, std::int64_t after_sequence, int limit) override;
    result<run_event> append_run_event(const std::string& run_id, const std::string& type,
                                       const std::string& payload_json,
                                       const std::string& causation_id, const std::string& event_id,
                                       millis at) override;
    result<run_event> end_run(const std::string& run_id, const std::string& type,
                              const std::string& payload_json, const std::string& event_id,
                              run_status status, millis at) override;

    // The counter bump locks the run row until commit: appends from every node serialize per run,
    // and a failed insert rolls the counter back with it (no gaps). The outbox rows of the event
    // commit with it (transactional outbox); a terminal status ($7, NULL keeps it) too.
    result<run_event> append(const std::string& run_id, const std::string& type,
                             const std::string& payload_json, const std::string& causation_id,
                             const std::string& event_id, std::optional<run_status> status,
                             millis at);
    result<void> set_run_status(const std::string& run_id, run_status status, millis at) override;
    result<std::vector<run_record>> list_runs_with_status(run_status status) override;
    result<std::vector<run_event>> subscription_events(const std::string& subscription_id) override;

    // ---- housekeeping ----

    result<int> purge_expired(millis now) override;
    result<std::string> bind_host_key_check(const std::string& check,
                                            const std::string& wrapped_data_key) override;
    result<bool> has_keyed_rows() override;
    result<std::map<std::string, std::string>> data_key_wraps() override;
    result<void> add_data_key_wrap(const std::string& check, const std::string& wrapped) override;
    result<int> retire_data_key_wraps(const std::string& keep_check) override;

    // Times by the database's clock, so nodes whose clocks disagree agree on who is silent.

    result<int> keep_node_alive(millis silent_ms) override;

    // Shared by several nodes: another node's claims are live (keep_node_alive frees the silent).
    result<int> release_all_claims() override;
    result<void> leave_cluster() override;
    result<void> probe_write() override;
    result<std::string> host_key_check() override;
    result<void> ping() override;
    // A server reports damage (XX001 data_corrupted, XX002 index_corrupted) per statement and
    // goes on serving what is intact: nothing sticky is kept here.
    std::string damage() const override { return {}; }

    // ---- bulk replay jobs (pg_replay_jobs.cpp) ----

    result<void> create_replay_job(const replay_job_record& job,
                                   const std::vector<std::string>& ids) override;
    result<replay_job_record> get_replay_job(const std::string& id) override;
    result<std::vector<replay_job_item>> unsettled_replay_job_items(const std::string& id) override;
    result<void> update_replay_job(const replay_job_update& u) override;
    result<std::vector<replay_job_record>> claim_replay_jobs(const std::string& owner, millis now,
                                                             millis lease_ms) override;
    result<int> release_replay_jobs(const std::string& owner) override;

    // ---- outbound webhooks (pg_outbound.cpp) ----

    result<void> insert_outbound_webhook(const outbound_webhook& w) override;
    result<outbound_webhook> get_outbound_webhook(const std::string& id) override;
    result<std::vector<outbound_webhook>> list_outbound_webhooks(const std::string& t) override;
    result<void> delete_outbound_webhook(const std::string& id) override;
    result<int> enqueue_outbound(const std::string& run_id, std::int64_t sequence,
                                 millis at) override;
    result<std::vector<outbound_delivery>>
    claim_outbound_due(millis now, int limit, int per_webhook_limit, millis lease_ms) override;
    result<void> record_outbound_attempt(const outbound_attempt& a) override;
    result<int> count_outbound_failures(const std::string& id, millis since) override;
    result<std::optional<millis>> outbound_next_due_at() override;
    result<std::vector<outbound_delivery>> list_outbound_deliveries(const std::string& id) override;
    result<page<outbound_dead_letter>>
    list_outbound_dead_letters(const std::string& id, const page_request& req, millis now) override;
    result<std::vector<outbound_state_change>>
    list_outbound_state_changes(const std::string& id) override;
    store_stats stats() const override;

  private:
    struct queued_intake {
        intake_request req;
        intake_callback done;
    };

    struct slot {
        std::unique_ptr<connection> conn;
        std::uint64_t epoch; // the reset epoch this connection was last (re)connected in
    };

    // Borrows a pooled connection for one call. After any node-visible connection failure the
    // epoch moves on, so every pooled connection reconnects before its next use instead of each
    // failing once on its own dead socket.
    template <class F>
    EXCLUDES(pool_mu_)
    auto with_connection(F&& body) -> decltype(body(std::declval<connection&>())) {
        std::size_t index = 0;
        {
            wopbridge::unique_lock lock(pool_mu_);
            lock.wait(pool_cv_, [&]() REQUIRES(pool_mu_) { return !free_.empty(); });
            index = free_.back();
            free_.pop_back();
        }
        struct give_back {
            postgres_store* self;
            std::size_t index;
            ~give_back() {
                {
                    wopbridge::lock_guard lock(self->pool_mu_);
                    self->free_.push_back(index);
                }
                self->pool_cv_.notify_one();
            }
        } guard{this, index};
        slot& s = slots_[index];
        const std::uint64_t epoch = reset_epoch_.load();
        const std::uint64_t before = s.conn->round_trips();
        auto fix = s.conn->ensure(s.epoch < epoch);
        if (!fix) {
            return errc::store_unavailable;
        }
        s.epoch = epoch;
        auto out = body(*s.conn);
        round_trips_.fetch_add(s.conn->round_trips() - before);
        if (!out && !s.conn->healthy()) {
            reset_epoch_.fetch_add(1);
        }
        return out;
    }

    // Reads are repeatable: one that finds its connection dead (the server restarted while this
    // node was idle) reconnects and runs again once, so a recovered server answers at once.
    template <class F> auto read(F&& body) -> decltype(body(std::declval<connection&>())) {
        return with_connection([&](connection& c) -> decltype(body(c)) {
            auto out = body(c);
            if (!out && !c.healthy() && c.ensure(true)) {
                out = body(c);
            }
            return out;
        });
    }

    // A single-statement write: autocommit, so one round trip and one durable commit.
    // One autocommitted statement. A deadlock or serialization failure (SQLSTATE class 40, e.g.
    // a subscription DELETE cascading into deliveries a settlement holds) rolled that statement
    // back whole, so it simply runs again.
    template <class F> auto write(F&& body) -> decltype(body(std::declval<connection&>())) {
        return with_connection([&](connection& c) -> decltype(body(c)) {
            for (int attempt = 1;; ++attempt) {
                auto out = body(c);
                if (!out && c.healthy() && !c.in_transaction() &&
                    c.last_sqlstate().rfind("40", 0) == 0 && attempt < transaction_retries) {
                    continue;
                }
                if (out) {
                    commits_.fetch_add(1);
                }
                return out;
            }
        });
    }

    // A multi-statement write transaction.
    template <class F> auto transaction(F&& body) -> decltype(body(std::declval<connection&>())) {
        return with_connection([&](connection& c) -> decltype(body(c)) {
            // Bodies must be repeatable: a deadlock (e.g. a probe claim and a settlement on
            // another node taking subscription and delivery rows in opposite order) or a
            // serialization failure undid everything, and the body simply runs again.
            for (int attempt = 1;; ++attempt) {
                if (auto r = begin(c); !r) {
                    return r.error();
                }
                auto out = body(c);
                if (!out) {
                    const std::string state = c.last_sqlstate();
                    if (c.healthy()) {
                        (void)c.run("ROLLBACK");
                    }
                    if (c.healthy() && state.rfind("40", 0) == 0 && attempt < transaction_retries) {
                        continue;
                    }
                    return out;
                }
                if (auto r = c.run("COMMIT"); !r) {
                    // Unknown outcome when the connection died during COMMIT: the caller retries
                    // and the lease / dedup rules make the retry safe.
                    if (c.healthy() && c.in_transaction()) {
                        (void)c.run("ROLLBACK");
                    }
                    return r.error();
                }
                commits_.fetch_add(1);
                return out;
            }
        });
    }

    // Nothing has happened before BEGIN: on a connection found dead it is safe to reconnect and
    // begin again once.
    static result<void> begin(connection& c);
    result<std::vector<subscription>> collect_subscriptions(const rows& r);
    struct claimed {
        std::int64_t seq;
        std::int64_t token;
        delivery d;
    };

    // Rows of WB_DLV_COLS + lease_token [+ probe flag]; a row of NULLs carries only the flag.
    static result<void> read_claimed(const rows& r, std::vector<claimed>& out, bool* probe_due);

    // Claims this node never settles (its engine dropped them) would pile up: past a bound, entries
    // whose lease has run out are dropped. Such a delivery then settles under the backend-neutral
    // rule only (never twice), which is what a restarted node gets too.
    void remember_leases(const std::vector<claimed>& got, millis now, millis lease_until);

    // Half-open probes, inside a transaction: locking the failed subscription rows first makes
    // "no probe in flight" a question only one node asks at a time per subscription; the next
    // statement (a fresh snapshot) then sees any probe the previous lock holder committed.
    static result<void> claim_probes(connection& c, millis now, int limit, millis lease_ms,
                                     const std::string& node, std::vector<claimed>& out);
    // Every record delivered, without a state change: the whole batch in two statements
    // (postgres_settle_batch.cpp). Any record the per-record path would refuse fails it all.
    static bool settles_as_batch(const std::vector<attempt_record>& recs);
    result<void> record_delivered_batch(connection& c, const std::vector<attempt_record>& recs,
                                        const std::vector<std::optional<std::int64_t>>& tokens,
                                        std::vector<bool>& changed);
    // subscription_changed: whether the attempt rewrote the subscription's row (its cached copy
    // is then stale).
    result<void> record_attempt_locked(connection& c, const attempt_record& rec,
                                       std::optional<std::int64_t> token,
                                       bool& subscription_changed);

    // One request inside the batch transaction. The dedup primary key is the dedup check: the
    // INSERT either takes the key (or an expired row's place) and the delivery follows in the same
    // statement, or it returns nothing and the original row is read by a second statement, whose
    // fresh snapshot sees a row another node committed while we waited on the key.
    static result<intake_outcome> intake_one(connection& c, const intake_request& req);
    // The first request of each distinct dedup key in one statement (unnest arrays): the ids of
    // the deliveries it accepted. The rest (duplicates, keys a live row holds, dedup off) go
    // through intake_one, which answers each exactly; per request the server spent more time
    // starting statements than writing rows.
    static result<std::vector<std::string>> intake_many(connection& c,
                                                        const std::vector<const intake_request*>& reqs);

    // Group commit: everything queued (up to max_batch_) goes into one transaction; one COMMIT
    // (one WAL flush, synchronous_commit = on), then every callback.
    void writer_loop() EXCLUDES(queue_mu_);

    // A request that fails aborts the PostgreSQL transaction. Instead of a SAVEPOINT per request
    // (a subtransaction each: past 64 per transaction every other session's snapshots overflow
    // into pg_subtrans, and each costs a round trip), the batch is rolled back and replayed
    // without the failed request, whose error is final. Failures are rare (ingest checks the
    // subscription first), so the common batch is BEGIN + one intake_many + COMMIT.
    // Requests run in (subscription, key) order so two nodes' batches take dedup keys in the same
    // order and cannot deadlock on each other.
    void run_batch(const std::vector<queued_intake>& batch,
                   std::vector<result<intake_outcome>>& results);
    void note_failure(connection& c);
    std::unique_ptr<connection> writer_; // used only by the writer thread
    std::uint64_t writer_epoch_ = 0;
    std::unique_ptr<connection> listener_; // used only by the listener thread

    struct cached_subscription {
        subscription value;
        std::chrono::steady_clock::time_point read_at;
    };
    mutable wopbridge::mutex subs_mu_;
    std::unordered_map<std::string, cached_subscription> subs_cache_ GUARDED_BY(subs_mu_);
    std::uint64_t subs_generation_ GUARDED_BY(subs_mu_) = 0;
    // Nothing is cached while notifications could be missed.
    bool subs_listening_ GUARDED_BY(subs_mu_) = false;
    wopbridge::mutex listener_mu_;
    std::condition_variable listener_cv_;
    bool listener_stopping_ GUARDED_BY(listener_mu_) = false;

    // Fixed once open; a slot is used only by the call that took its index from free_.
    std::vector<slot> slots_;
    std::vector<std::size_t> free_ GUARDED_BY(pool_mu_);
    wopbridge::mutex pool_mu_;
    std::condition_variable pool_cv_;
    std::atomic<std::uint64_t> reset_epoch_{0};

    // Lease tokens of this node's committed claims, by delivery id.
    // This node, as its claims and its beats name it: fresh per open, so a restarted process is
    // a new node and the old one's claims are freed once it is seen silent.
    const std::string node_id_ = make_node_id();
    wopbridge::mutex lease_mu_;
    struct lease {
        std::int64_t token;
        millis until;
    };
    static constexpr std::size_t max_remembered_leases = 100000;
    std::unordered_map<std::string, lease> leases_ GUARDED_BY(lease_mu_);

    wopbridge::mutex queue_mu_;
    std::condition_variable queue_cv_;
    std::deque<queued_intake> queue_ GUARDED_BY(queue_mu_);
    bool stopping_ GUARDED_BY(queue_mu_) = false;
    const int max_batch_;

    std::atomic<std::uint64_t> commits_{0};
    std::atomic<std::uint64_t> intake_batches_{0};
    std::atomic<std::uint64_t> intake_requests_{0};
    std::atomic<std::uint64_t> round_trips_{0};

    std::thread thread_; // last: started once everything above exists
    std::thread listener_thread_;
};

} // namespace wopbridge::postgres_detail
