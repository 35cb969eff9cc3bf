#pragma once
// The SQLite store's private declarations, shared by its role files: sqlite_store.cpp (open,
// threads, upkeep), sqlite_subscriptions.cpp, sqlite_intake.cpp, sqlite_deliveries.cpp,
// sqlite_attempts.cpp, sqlite_runs.cpp, sqlite_keys.cpp and sqlite_rows.cpp (row mapping).
#include "core/thread_annotations.hpp"
#include "store/sqlite/sqlite_connection.hpp"
#include "store/sqlite/sqlite_due_queries.hpp"
#include "store/sqlite/sqlite_migrations.hpp"
#include "store/sqlite/sqlite_outbound.hpp"
#include "store/sqlite/sqlite_replay_jobs.hpp"
#include "store/store.hpp"
#include "store/store_codec.hpp"
#include "store/store_rows.hpp"
#include "store/store_try.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <future>
#include <limits>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>

#include <sys/stat.h>

// The placeholders of WB_SUB_COLS (store_rows.hpp).
#define WB_SQLITE_SUB_PARAMS                                                                       \
    "?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, "  \
    "?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28"

namespace wopbridge::sqlite_detail {

using sqlite::collect_rows;
using sqlite::connection;
using sqlite::each_row;
using sqlite::optional_int64;
using sqlite::read_found_row;
using sqlite::statement;
namespace codec = store_codec;
namespace due_queries = sqlite::due_queries;

constexpr int max_page_limit = 1000;
constexpr std::string_view deliveries_cursor = "deliveries";
constexpr std::string_view dead_letters_cursor = "dead-letters";

int clamp_limit(int limit);
result<subscription> read_subscription(const statement& st);
void bind_subscription(statement& st, const subscription& s);
// Reads WB_DLV_COLS; the sort key (seq) is column 11.
result<delivery> read_delivery(const statement& st);
result<run_record> read_run(const statement& st);
// Reads: event_id, type, payload_json, timestamp, sequence, causation_id
run_event read_event(const statement& st, std::string run_id);
result<dead_letter> read_dead_letter(const statement& st);
// Runs a statement with RETURNING and yields the first column of its row.
result<std::int64_t> returning_int64(statement& st);
result<bool> subscription_exists(connection& c, const std::string& id);
// Event appends: the next sequence is computed in the INSERT itself, under the write transaction,
// so sequences are gap-free and start at 0.
result<std::int64_t> insert_run_event(connection& c, const std::string& run_id,
                                      std::string_view type, const std::string& payload,
                                      const std::string& causation_id, const std::string& event_id,
                                      millis at);
// The first events of a run created in this transaction, at sequences 0, 1, ... in one
// multi-row INSERT. `outbound`: false when no outbound webhook exists, so there is no outbox row
// to write.
struct new_run_event {
    std::string_view type;
    std::string_view payload;
    std::string_view causation_id;
    std::string event_id;
};
result<void> insert_new_run_log(connection& c, const std::string& run_id,
                                const std::vector<new_run_event>& events, millis at,
                                bool outbound);
result<std::int64_t> insert_subscription_event(connection& c, const std::string& subscription_id,
                                               std::string_view type, const std::string& payload,
                                               const std::string& causation_id,
                                               const std::string& event_id, millis at);
// Compare-and-set of the state plus its event on the subscription log.
result<void> apply_state_change(connection& c, const state_change& change,
                                const std::string& event_id, millis at,
                                const std::string& causation_id);

class sqlite_store final : public store {
  public:
    sqlite_store(std::unique_ptr<connection> writer, std::unique_ptr<connection> reader,
                 std::unique_ptr<connection> checkpointer, int max_batch, int checkpoint_pages,
                 std::chrono::microseconds commit_window);
    ~sqlite_store() override;

    // ---- subscriptions ----

    result<void> insert_subscription(const subscription& s) override;
    result<void> upsert_config_subscription(const subscription& s) override;

    // Served from memory while no write of this process has touched the row since it was read:
    // this store is the only writer of its file, and every write of a subscriptions row forgets it
    // (subscription_forget), so the cache is never staler than the database.
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
    result<void> record_verification_refusal(const verification_refusal& r) override;

    // ---- deliveries ----

    result<std::vector<delivery>> claim_due(millis now, int limit, millis lease_ms) override;

    // Active subscriptions with how many more attempts each may have in flight (maxConcurrency
    // minus its unexpired leases; INT_MAX without a bound). Inside the claim's write transaction.
    result<std::vector<std::pair<std::string, int>>> active_with_room(millis now)
        REQUIRES(write_mu_);
    result<std::string> delivery_content(const std::string& delivery_id) override;
    result<void> record_attempt(const attempt_record& rec) override;

    // Queued to the writer with the intakes: the records share their group commit (one fsync).
    std::vector<result<void>> record_attempts(const std::vector<attempt_record>& recs) override;
    result<std::map<std::string, std::string>>
    delivery_contents(const std::vector<std::string>& delivery_ids) override;
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
    result<void> set_run_status(const std::string& run_id, run_status status, millis at) override;
    result<run_event> end_run(const std::string& run_id, const std::string& type,
                              const std::string& payload_json, const std::string& event_id,
                              run_status status, millis at) override;
    result<void> update_run_status(const std::string& run_id, run_status status, millis at)
        REQUIRES(write_mu_);
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
    result<int> release_all_claims() override;

    // One process serves this file (serve's lock): there is no cluster to beat in or leave.
    result<int> keep_node_alive(millis /*silent_ms*/) override;
    result<void> leave_cluster() override;
    result<void> probe_write() override;
    result<std::string> host_key_check() override;
    result<void> ping() override;
    store_stats stats() const override;
    std::string damage() const override;

    // ---- outbound webhooks (sqlite_outbound.cpp) ----

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

    // ---- bulk replay jobs (sqlite_replay_jobs.cpp) ----

    result<void> create_replay_job(const replay_job_record& job,
                                   const std::vector<std::string>& ids) override;
    result<replay_job_record> get_replay_job(const std::string& id) override;
    result<std::vector<replay_job_item>> unsettled_replay_job_items(const std::string& id) override;
    result<void> update_replay_job(const replay_job_update& u) override;
    result<std::vector<replay_job_record>> claim_replay_jobs(const std::string& owner, millis now,
                                                             millis lease_ms) override;
    result<int> release_replay_jobs(const std::string& owner) override;

  private:
    static constexpr std::size_t max_cached_subscriptions = 10000;
    void forget_subscription(const std::string& id) EXCLUDES(subs_mu_);

    // Forgets the row when the write is done, whatever its outcome (a rolled-back write changed
    // nothing, and forgetting costs one read).
    struct subscription_forget {
        sqlite_store& self;
        const std::string& id;
        ~subscription_forget() { self.forget_subscription(id); }
    };

    struct queued_intake {
        intake_request req;
        intake_callback done;
    };
    // A caller of record_attempts waits on `done` (so `recs` outlives the batch).
    struct queued_attempts {
        const std::vector<attempt_record>* recs;
        std::promise<std::vector<result<void>>>* done;
    };
    // A caller of claim_due waits on `done`.
    struct queued_claim {
        millis now;
        int limit;
        millis lease_ms;
        std::promise<result<std::vector<delivery>>>* done;
    };
    using queued_write = std::variant<queued_intake, queued_attempts, queued_claim>;
    struct write_outcome {
        result<intake_outcome> intake = make_error_code(errc::internal);
        std::vector<result<void>> attempts;
        result<std::vector<delivery>> claimed = make_error_code(errc::internal);
    };
    void rollback_if_open(connection& c);

    // One committed (fsynced) write transaction around `body`, serialized with every other write.
    // `body` runs holding write_mu_: write it `[&]() REQUIRES(write_mu_) { ... }`.
    template <class F> EXCLUDES(write_mu_) auto write_transaction(F&& body) -> decltype(body()) {
        wopbridge::lock_guard lock(write_mu_);
        return transaction_locked(body);
    }

    template <class F> REQUIRES(write_mu_) auto transaction_locked(F& body) -> decltype(body()) {
        if (damage_.seen()) {
            return errc::store_unavailable; // nothing more into a damaged file (damage())
        }
        if (auto r = writer_->exec("BEGIN IMMEDIATE"); !r) {
            rollback_if_open(*writer_);
            return r.error();
        }
        auto out = body();
        if (!out) {
            rollback_if_open(*writer_);
            return out;
        }
        if (auto r = writer_->exec("COMMIT"); !r) {
            rollback_if_open(*writer_);
            return r.error();
        }
        commits_.fetch_add(1);
        return out;
    }

    // A consistent snapshot for reads that take more than one statement; `body` runs holding
    // read_mu_ (`[&]() REQUIRES(read_mu_) { ... }`).
    template <class F> EXCLUDES(read_mu_) auto read_transaction(F&& body) -> decltype(body()) {
        wopbridge::lock_guard lock(read_mu_);
        if (auto r = reader_->exec("BEGIN"); !r) {
            return r.error();
        }
        auto out = body();
        reader_->exec("COMMIT");
        rollback_if_open(*reader_);
        return out;
    }

    result<std::vector<subscription>> collect_subscriptions(statement& st);
    static result<std::vector<run_event>> collect_events(statement& st, const std::string& run_id);
    result<void> insert_dead_letter(const std::string& subscription_id,
                                    const std::string& attempt_event_id, const delivery_attempt& a,
                                    dead_letter_reason reason,
                                    const std::optional<state_change>& change, millis at,
                                    millis expires_at, const std::string& delivery_id)
        REQUIRES(write_mu_);
    result<void> record_attempt_locked(const attempt_record& rec) REQUIRES(write_mu_);

    // Inside the batch transaction and its own savepoint.
    result<intake_outcome> intake_locked(const intake_request& req) REQUIRES(write_mu_);
    result<std::vector<delivery>> claim_locked(millis now, int limit, millis lease_ms)
        REQUIRES(write_mu_);

    // Group commit: everything queued (intakes, attempt records and claims, up to max_batch_
    // rows) goes into one transaction, each unit in its own savepoint; one COMMIT (one fsync,
    // none for a batch of claims alone), then every answer.
    void writer_loop() EXCLUDES(queue_mu_, write_mu_);
    static std::size_t rows_of(const queued_write& w);
    // Queues one unit for the writer (moved from only when queued); false when stopping.
    bool enqueue_write(queued_write& w) EXCLUDES(queue_mu_);

    // One unit of the batch in its own savepoint: kept when `body` succeeds, undone when it fails.
    template <class F> REQUIRES(write_mu_) auto in_savepoint(F&& body) -> decltype(body()) {
        connection& c = *writer_;
        if (!c.in_transaction()) {
            // An I/O error rolled the whole transaction back under us.
            return make_error_code(errc::store_unavailable);
        }
        if (auto r = c.exec("SAVEPOINT unit"); !r) {
            return r.error();
        }
        auto out = body();
        if (out) {
            if (auto r = c.exec("RELEASE unit"); !r) {
                return r.error();
            }
        } else if (c.in_transaction()) {
            c.exec("ROLLBACK TO unit");
            c.exec("RELEASE unit");
        }
        return out;
    }

    void run_batch(const std::vector<queued_write>& batch, std::vector<write_outcome>& results)
        EXCLUDES(write_mu_);
    // Every unit of the batch into the open transaction; without savepoints it stops at the
    // first unit that fails and answers false (the caller rolls back and runs it again with).
    bool run_units(const std::vector<queued_write>& batch, std::vector<write_outcome>& results,
                   bool savepoints) REQUIRES(write_mu_);

    // ---- checkpoints, off the writer's commit ----
    // The writer's WAL hook replaces SQLite's autocheckpoint (which would copy pages back into the
    // database inside a commit, on the hot path): it only records the WAL's size. The checkpointer
    // thread, on its own connection, copies pages back PASSIVE-ly once the WAL passes
    // checkpoint_pages (without blocking the writer), then RESTARTs the WAL holding the write mutex
    // (the writer waits while what the passive pass left is copied) so the WAL does not grow under
    // sustained load; after a second without commits it TRUNCATEs the WAL file to zero bytes.
    static int on_wal_commit(void* self, sqlite3*, const char*, int pages);
    void wal_committed(int pages) EXCLUDES(ckpt_mu_);
    void checkpointer_loop() EXCLUDES(ckpt_mu_, write_mu_);
    // Before the connections: they report into it until they are closed.
    sqlite::damage_watch damage_;
    std::unique_ptr<connection> writer_ PT_GUARDED_BY(write_mu_);
    wopbridge::mutex write_mu_;
    std::unique_ptr<connection> reader_ PT_GUARDED_BY(read_mu_);
    wopbridge::mutex read_mu_;
    std::unique_ptr<connection> checkpointer_; // the checkpointer thread's own

    wopbridge::mutex subs_mu_;
    std::unordered_map<std::string, subscription> subs_cache_ GUARDED_BY(subs_mu_);
    std::uint64_t subs_generation_ GUARDED_BY(subs_mu_) = 0;
    // Subscriptions whose row the batch's attempts changed (run_batch forgets them once it has
    // committed or rolled back).
    std::unordered_set<std::string> changed_subscriptions_ GUARDED_BY(write_mu_);

    wopbridge::mutex queue_mu_;
    std::condition_variable queue_cv_;
    std::deque<queued_write> queue_ GUARDED_BY(queue_mu_);
    std::size_t queued_rows_ GUARDED_BY(queue_mu_) = 0;
    bool stopping_ GUARDED_BY(queue_mu_) = false;
    // The writer waits out a commit window: wake it only when full.
    bool writer_in_window_ GUARDED_BY(queue_mu_) = false;
    const int max_batch_;
    const std::chrono::microseconds commit_window_;
    std::chrono::steady_clock::time_point last_batch_end_{}; // the writer thread's own
    std::atomic<bool> outbound_possible_{true}; // an outbound webhook exists (or may)
    std::atomic<std::uint64_t> commits_{0};
    std::atomic<std::uint64_t> intake_batches_{0};
    std::atomic<std::uint64_t> intake_requests_{0};

    const int checkpoint_pages_;
    wopbridge::mutex ckpt_mu_;
    std::condition_variable ckpt_cv_;
    int wal_pages_ GUARDED_BY(ckpt_mu_) = 0;
    bool wal_file_used_ GUARDED_BY(ckpt_mu_) = false; // the -wal file has bytes TRUNCATE frees
    std::chrono::steady_clock::time_point
        last_commit_ GUARDED_BY(ckpt_mu_) = std::chrono::steady_clock::now();
    bool ckpt_stopping_ GUARDED_BY(ckpt_mu_) = false;
    std::atomic<std::uint64_t> checkpoints_{0};

    std::thread thread_; // last: started once everything above exists
    std::thread ckpt_thread_;
};

} // namespace wopbridge::sqlite_detail
