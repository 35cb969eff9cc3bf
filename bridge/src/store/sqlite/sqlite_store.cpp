// The SQLite store backend. One write connection (guarded by write_mu_) serves the intake writer
// thread and the synchronous mutators; one query_only read connection (guarded by read_mu_) serves
// the reads. WAL lets reads proceed while a batch commits.
#include "store/sqlite/sqlite_connection.hpp"
#include "store/sqlite/sqlite_due_queries.hpp"
#include "store/sqlite/sqlite_migrations.hpp"
#include "store/sqlite/sqlite_outbound.hpp"
#include "store/sqlite/sqlite_replay_jobs.hpp"
#include "store/store.hpp"
#include "store/store_codec.hpp"
#include "store/store_try.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <future>
#include <limits>
#include <mutex>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <variant>

#include <sys/stat.h>

// Column lists (statements are cached per connection by their SQL text).
#define WB_SUB_COLS                                                                                \
    "id, tenant, source, state, workflow_id, dedup_enabled, retry_max_attempts, retry_backoff, "   \
    "retry_base_delay_ms, retry_max_delay_ms, retry_jitter, breaker_failure_threshold, "           \
    "breaker_probe_interval_ms, verification, webhook_id, secret_fingerprint, sealed_secret, "     \
    "schedule_cron, schedule_time_zone, connector, connector_settings_json, origin, "              \
    "consecutive_failures, next_probe_at, created_at, updated_at, when_not_active, max_concurrency"
#define WB_SUB_PARAMS                                                                              \
    "?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, "  \
    "?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28"
#define WB_DLV_COLS                                                                                \
    "d.id, d.subscription_id, d.tenant, d.dedup_key, d.run_id, d.status, d.attempts, d.due_at, "   \
    "d.received_at, d.updated_at, d.last_error, d.seq"
#define WB_RUN_COLS                                                                                \
    "id, tenant, workflow_id, subscription_id, delivery_id, status, upstream_run_id, created_at, " \
    "updated_at"
#define WB_DL_COLS                                                                                 \
    "subscription_id, attempt_event_id, dedup_key, attempt, reason, state_change_source, "         \
    "state_change_from, state_change_to, state_change_reason, dead_lettered_at, expires_at, "      \
    "delivery_id, seq"

namespace wopbridge {
namespace {

using sqlite::connection;
using sqlite::statement;
namespace codec = store_codec;
namespace due_queries = sqlite::due_queries;

constexpr int max_page_limit = 1000;
constexpr std::string_view deliveries_cursor = "deliveries";
constexpr std::string_view dead_letters_cursor = "dead-letters";

int clamp_limit(int limit) {
    return std::clamp(limit, 1, max_page_limit);
}

errc to_errc(const boost::system::error_code& ec) {
    if (ec.category() == bridge_category()) {
        return static_cast<errc>(ec.value());
    }
    return errc::internal;
}

template <class Enum> result<Enum> parsed(std::optional<Enum> value) {
    if (!value) {
        return errc::internal; // a spelling this build does not know: corrupt or newer writer
    }
    return *value;
}

result<subscription> read_subscription(const statement& st) {
    subscription s;
    s.id = st.text(0);
    s.tenant = st.text(1);
    auto source = parsed(codec::source_from(st.text(2)));
    auto state = parsed(codec::state_from(st.text(3)));
    auto backoff = parsed(codec::backoff_from(st.text(7)));
    auto verification = parsed(codec::verification_from(st.text(13)));
    auto origin = parsed(codec::origin_from(st.text(21)));
    if (!source || !state || !backoff || !verification || !origin) {
        return errc::internal;
    }
    s.source = *source;
    s.state = *state;
    s.workflow_id = st.text(4);
    s.dedup_enabled = st.int64(5) != 0;
    s.retry.max_attempts = st.integer(6);
    s.retry.backoff = *backoff;
    s.retry.base_delay_ms = st.int64(8);
    s.retry.max_delay_ms = st.int64(9);
    s.retry.jitter = st.int64(10) != 0;
    s.breaker.failure_threshold = st.integer(11);
    s.breaker.probe_interval_ms = st.int64(12);
    s.verification = *verification;
    s.webhook_id = st.text(14);
    s.secret_fingerprint = st.text(15);
    s.sealed_secret = st.text(16);
    if (!st.is_null(17)) {
        s.schedule = schedule_spec{st.text(17), st.text(18)};
    }
    s.connector = st.text(19);
    s.connector_settings_json = st.text(20);
    s.origin = *origin;
    s.consecutive_failures = st.integer(22);
    s.next_probe_at = st.int64(23);
    s.created_at = st.int64(24);
    s.updated_at = st.int64(25);
    s.hold_when_not_active = st.text(26) == "hold";
    s.max_concurrency = st.integer(27);
    return s;
}

void bind_subscription(statement& st, const subscription& s) {
    st.bind(1, s.id)
        .bind(2, s.tenant)
        .bind(3, codec::name_of(s.source))
        .bind(4, codec::name_of(s.state))
        .bind(5, s.workflow_id)
        .bind(6, s.dedup_enabled)
        .bind(7, s.retry.max_attempts)
        .bind(8, codec::name_of(s.retry.backoff))
        .bind(9, s.retry.base_delay_ms)
        .bind(10, s.retry.max_delay_ms)
        .bind(11, s.retry.jitter)
        .bind(12, s.breaker.failure_threshold)
        .bind(13, s.breaker.probe_interval_ms)
        .bind(14, codec::name_of(s.verification))
        .bind(15, s.webhook_id)
        .bind(16, s.secret_fingerprint)
        .bind(17, s.sealed_secret);
    if (s.schedule) {
        st.bind(18, s.schedule->cron).bind(19, s.schedule->time_zone);
    } else {
        st.bind_null(18).bind_null(19);
    }
    st.bind(20, s.connector)
        .bind(21, s.connector_settings_json)
        .bind(22, codec::name_of(s.origin))
        .bind(23, s.consecutive_failures)
        .bind(24, s.next_probe_at)
        .bind(25, s.created_at)
        .bind(26, s.updated_at)
        .bind(27, std::string(s.hold_when_not_active ? "hold" : "refuse"))
        .bind(28, s.max_concurrency);
}

// Reads WB_DLV_COLS; the sort key (seq) is column 11.
result<delivery> read_delivery(const statement& st) {
    delivery d;
    d.id = st.text(0);
    d.subscription_id = st.text(1);
    d.tenant = st.text(2);
    d.dedup_key = st.text(3);
    d.run_id = st.text(4);
    auto status = parsed(codec::delivery_status_from(st.text(5)));
    if (!status) {
        return status.error();
    }
    d.status = *status;
    d.attempts = st.integer(6);
    d.due_at = st.int64(7);
    d.received_at = st.int64(8);
    d.updated_at = st.int64(9);
    d.last_error = st.text(10);
    return d;
}

result<run_record> read_run(const statement& st) {
    run_record r;
    r.id = st.text(0);
    r.tenant = st.text(1);
    r.workflow_id = st.text(2);
    r.subscription_id = st.text(3);
    r.delivery_id = st.text(4);
    auto status = parsed(codec::run_status_from(st.text(5)));
    if (!status) {
        return status.error();
    }
    r.status = *status;
    r.upstream_run_id = st.text(6);
    r.created_at = st.int64(7);
    r.updated_at = st.int64(8);
    return r;
}

// Reads: event_id, type, payload_json, timestamp, sequence, causation_id
run_event read_event(const statement& st, std::string run_id) {
    run_event e;
    e.event_id = st.text(0);
    e.run_id = std::move(run_id);
    e.type = st.text(1);
    e.payload_json = st.text(2);
    e.timestamp = st.int64(3);
    e.sequence = st.int64(4);
    e.causation_id = st.text(5);
    return e;
}

result<dead_letter> read_dead_letter(const statement& st) {
    dead_letter d;
    d.subscription_id = st.text(0);
    d.attempt_event_id = st.text(1);
    d.attempt.subscription_id = d.subscription_id;
    d.attempt.dedup_key = st.text(2);
    d.attempt.attempt = st.integer(3);
    d.attempt.outcome = attempt_outcome::dead_lettered;
    auto reason = parsed(codec::dead_letter_reason_from(st.text(4)));
    if (!reason) {
        return reason.error();
    }
    d.reason = *reason;
    if (!st.is_null(5)) {
        auto source = parsed(codec::source_from(st.text(5)));
        auto from = parsed(codec::state_from(st.text(6)));
        auto to = parsed(codec::state_from(st.text(7)));
        auto why = parsed(codec::reason_from(st.text(8)));
        if (!source || !from || !to || !why) {
            return errc::internal;
        }
        d.caused_state_change = state_change{d.subscription_id, *source, *from, *to, *why};
    }
    d.dead_lettered_at = st.int64(9);
    d.expires_at = st.int64(10);
    d.delivery_id = st.text(11);
    return d;
}

// Runs a statement with RETURNING and yields the first column of its row.
result<std::int64_t> returning_int64(statement& st) {
    auto row = st.step();
    if (!row) {
        return row.error();
    }
    if (!*row) {
        return errc::internal;
    }
    std::int64_t value = st.int64(0);
    WB_TRY(st.run());
    return value;
}

result<bool> subscription_exists(connection& c, const std::string& id) {
    auto st = c.prepare("SELECT 1 FROM subscriptions WHERE id = ?1");
    st.bind(1, id);
    return st.step();
}

// Event appends: the next sequence is computed in the INSERT itself, under the write transaction,
// so sequences are gap-free and start at 0.
result<std::int64_t> insert_run_event(connection& c, const std::string& run_id,
                                      std::string_view type, const std::string& payload,
                                      const std::string& causation_id, const std::string& event_id,
                                      millis at) {
    auto st = c.prepare(
        "INSERT INTO run_events (run_id, sequence, event_id, type, payload_json, timestamp, "
        "causation_id) SELECT ?1, COALESCE(MAX(sequence) + 1, 0), ?2, ?3, ?4, ?5, ?6 "
        "FROM run_events WHERE run_id = ?1 RETURNING sequence");
    st.bind(1, run_id).bind(2, event_id).bind(3, type).bind(4, payload).bind(5, at);
    st.bind_or_null(6, causation_id);
    auto sequence = returning_int64(st);
    if (!sequence) {
        return sequence;
    }
    // Transactional outbox: the run event and its outbound webhook deliveries commit together.
    WB_TRY(sqlite::outbound::enqueue(c, run_id, *sequence, at));
    return sequence;
}

// The event at a known `sequence` of a run created in this transaction. `outbound`: false when
// no outbound webhook exists, so there is no outbox row to write.
result<void> insert_new_run_event(connection& c, const std::string& run_id, std::int64_t sequence,
                                  std::string_view type, const std::string& payload,
                                  const std::string& causation_id, const std::string& event_id,
                                  millis at, bool outbound) {
    auto st = c.prepare("INSERT INTO run_events (run_id, sequence, event_id, type, payload_json, "
                        "timestamp, causation_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
    st.bind(1, run_id).bind(2, sequence).bind(3, event_id).bind(4, type).bind(5, payload);
    st.bind(6, at).bind_or_null(7, causation_id);
    WB_TRY(st.run());
    if (outbound) {
        WB_TRY(sqlite::outbound::enqueue(c, run_id, sequence, at));
    }
    return {};
}

result<std::int64_t> insert_subscription_event(connection& c, const std::string& subscription_id,
                                               std::string_view type, const std::string& payload,
                                               const std::string& causation_id,
                                               const std::string& event_id, millis at) {
    auto st = c.prepare(
        "INSERT INTO subscription_events (subscription_id, sequence, event_id, type, "
        "payload_json, timestamp, causation_id) SELECT ?1, COALESCE(MAX(sequence) + 1, 0), ?2, "
        "?3, ?4, ?5, ?6 FROM subscription_events WHERE subscription_id = ?1 RETURNING sequence");
    st.bind(1, subscription_id).bind(2, event_id).bind(3, type).bind(4, payload).bind(5, at);
    st.bind_or_null(6, causation_id);
    return returning_int64(st);
}

// Compare-and-set of the state plus its event on the subscription log.
result<void> apply_state_change(connection& c, const state_change& change,
                                const std::string& event_id, millis at,
                                const std::string& causation_id) {
    auto st = c.prepare("UPDATE subscriptions SET state = ?1, updated_at = ?2 "
                        "WHERE id = ?3 AND state = ?4");
    st.bind(1, codec::name_of(change.to))
        .bind(2, at)
        .bind(3, change.subscription_id)
        .bind(4, codec::name_of(change.from));
    WB_TRY(st.run());
    if (c.changes() == 0) {
        auto exists = subscription_exists(c, change.subscription_id);
        if (!exists) {
            return exists.error();
        }
        return *exists ? errc::conflict : errc::not_found;
    }
    WB_TRY(insert_subscription_event(c, change.subscription_id, codec::event_state_changed,
                                     codec::state_change_payload_json(change), causation_id,
                                     event_id, at));
    return {};
}

class sqlite_store final : public store {
  public:
    sqlite_store(std::unique_ptr<connection> writer, std::unique_ptr<connection> reader,
                 std::unique_ptr<connection> checkpointer, int max_batch, int checkpoint_pages)
        : writer_(std::move(writer)), reader_(std::move(reader)),
          checkpointer_(std::move(checkpointer)), max_batch_(std::max(1, max_batch)),
          checkpoint_pages_(std::max(1, checkpoint_pages)) {
        {
            auto st = writer_->prepare("SELECT EXISTS (SELECT 1 FROM outbound_webhooks)");
            auto row = st.step();
            outbound_possible_.store(!row || !*row || st.int64(0) != 0);
        }
        sqlite3_wal_hook(writer_->handle(), &sqlite_store::on_wal_commit, this);
        thread_ = std::thread([this] { writer_loop(); });
        ckpt_thread_ = std::thread([this] { checkpointer_loop(); });
    }

    ~sqlite_store() override {
        {
            std::lock_guard lock(queue_mu_);
            stopping_ = true;
        }
        queue_cv_.notify_all();
        thread_.join(); // the loop drains the queue first: every callback gets its answer
        {
            std::lock_guard lock(ckpt_mu_);
            ckpt_stopping_ = true;
        }
        ckpt_cv_.notify_all();
        ckpt_thread_.join();
        sqlite3_wal_hook(writer_->handle(), nullptr, nullptr);
    }

    // ---- subscriptions ----

    result<void> insert_subscription(const subscription& s) override {
        const subscription_forget forget{*this, s.id};
        return write_transaction([&]() -> result<void> {
            auto st = writer_->prepare("INSERT INTO subscriptions (" WB_SUB_COLS
                                       ") VALUES (" WB_SUB_PARAMS ")");
            bind_subscription(st, s);
            return st.run();
        });
    }

    result<void> upsert_config_subscription(const subscription& s) override {
        const subscription_forget forget{*this, s.id};
        return write_transaction([&]() -> result<void> {
            auto st = writer_->prepare(
                "INSERT INTO subscriptions (" WB_SUB_COLS ") VALUES (" WB_SUB_PARAMS ") "
                "ON CONFLICT (id) DO UPDATE SET tenant = excluded.tenant, "
                "source = excluded.source, workflow_id = excluded.workflow_id, "
                "dedup_enabled = excluded.dedup_enabled, "
                "retry_max_attempts = excluded.retry_max_attempts, "
                "retry_backoff = excluded.retry_backoff, "
                "retry_base_delay_ms = excluded.retry_base_delay_ms, "
                "retry_max_delay_ms = excluded.retry_max_delay_ms, "
                "retry_jitter = excluded.retry_jitter, "
                "breaker_failure_threshold = excluded.breaker_failure_threshold, "
                "breaker_probe_interval_ms = excluded.breaker_probe_interval_ms, "
                "verification = excluded.verification, webhook_id = excluded.webhook_id, "
                "secret_fingerprint = excluded.secret_fingerprint, "
                "sealed_secret = excluded.sealed_secret, "
                "schedule_cron = excluded.schedule_cron, "
                "schedule_time_zone = excluded.schedule_time_zone, "
                "connector = excluded.connector, "
                "connector_settings_json = excluded.connector_settings_json, "
                "origin = excluded.origin, updated_at = excluded.updated_at, "
                "when_not_active = excluded.when_not_active, "
                "max_concurrency = excluded.max_concurrency");
            bind_subscription(st, s);
            return st.run();
        });
    }

    // Served from memory while no write of this process has touched the row since it was read:
    // this store is the only writer of its file, and every write of a subscriptions row forgets it
    // (subscription_forget), so the cache is never staler than the database.
    result<subscription> get_subscription(const std::string& id) override {
        std::uint64_t generation = 0;
        {
            std::lock_guard lock(subs_mu_);
            if (auto it = subs_cache_.find(id); it != subs_cache_.end()) {
                return it->second;
            }
            generation = subs_generation_;
        }
        auto found = read_subscription_row(id);
        if (found) {
            std::lock_guard lock(subs_mu_);
            // A write that ran while we read may have changed the row: keep nothing then.
            if (subs_generation_ == generation) {
                if (subs_cache_.size() >= max_cached_subscriptions) {
                    subs_cache_.clear();
                }
                subs_cache_.emplace(id, *found);
            }
        }
        return found;
    }

    result<subscription> read_subscription_row(const std::string& id) {
        return read_transaction([&]() -> result<subscription> {
            auto st = reader_->prepare("SELECT " WB_SUB_COLS " FROM subscriptions WHERE id = ?1");
            st.bind(1, id);
            auto row = st.step();
            if (!row) {
                return row.error();
            }
            if (!*row) {
                return errc::not_found;
            }
            return read_subscription(st);
        });
    }

    result<std::vector<subscription>> list_subscriptions(const std::string& tenant) override {
        return read_transaction([&]() -> result<std::vector<subscription>> {
            auto st = reader_->prepare("SELECT " WB_SUB_COLS
                                       " FROM subscriptions WHERE tenant = ?1 ORDER BY id");
            st.bind(1, tenant);
            return collect_subscriptions(st);
        });
    }

    result<std::vector<subscription>> list_all_subscriptions() override {
        return read_transaction([&]() -> result<std::vector<subscription>> {
            auto st = reader_->prepare("SELECT " WB_SUB_COLS " FROM subscriptions ORDER BY id");
            return collect_subscriptions(st);
        });
    }

    result<void> delete_subscription(const std::string& id) override {
        const subscription_forget forget{*this, id};
        return write_transaction([&]() -> result<void> {
            auto st = writer_->prepare("DELETE FROM subscriptions WHERE id = ?1");
            st.bind(1, id);
            WB_TRY(st.run());
            if (writer_->changes() == 0) {
                return errc::not_found;
            }
            return {};
        });
    }

    // ---- operator views: runs and replays ----

    result<std::vector<run_record>> list_runs(const run_query& q) override {
        const millis before_t =
            q.before ? q.before->created_at : std::numeric_limits<std::int64_t>::max();
        // Owned strings: an empty std::string_view() would bind NULL, and NULL = '' is not true.
        const std::string status(q.status ? codec::name_of(*q.status) : std::string_view());
        const std::string before_id = q.before ? q.before->id : std::string();
        return read_transaction([&]() -> result<std::vector<run_record>> {
            // The join reads the delivery's dedup key: a replay's is "replay:<attemptEventId>".
            auto st = reader_->prepare(
                "SELECT r.id, r.tenant, r.workflow_id, r.subscription_id, r.delivery_id, r.status, "
                "r.upstream_run_id, r.created_at, r.updated_at, COALESCE(d.dedup_key, '') "
                "FROM runs r LEFT JOIN deliveries d ON d.id = r.delivery_id "
                "WHERE r.tenant = ?1 AND (?2 = '' OR r.subscription_id = ?2) "
                "AND (?3 = '' OR r.workflow_id = ?3) AND (?4 = '' OR r.status = ?4) "
                "AND r.created_at >= ?5 AND r.created_at <= ?6 "
                "AND (r.created_at < ?7 OR (r.created_at = ?7 AND r.id < ?8)) "
                "ORDER BY r.created_at DESC, r.id DESC LIMIT ?9");
            st.bind(1, q.tenant)
                .bind(2, q.subscription_id)
                .bind(3, q.workflow_id)
                .bind(4, status)
                .bind(5, q.created_from)
                .bind(6, q.created_to)
                .bind(7, before_t)
                .bind(8, before_id)
                .bind(9, std::max(1, q.limit));
            std::vector<run_record> out;
            for (;;) {
                auto row = st.step();
                if (!row) {
                    return row.error();
                }
                if (!*row) {
                    break;
                }
                auto r = read_run(st);
                if (!r) {
                    return r.error();
                }
                r->replay_of_attempt_event_id = codec::replay_of_dedup_key(st.text(9));
                out.push_back(std::move(*r));
            }
            return out;
        });
    }

    result<std::map<std::string, delivery>>
    deliveries_by_dedup_key(const std::string& subscription_id,
                            const std::vector<std::string>& keys) override {
        return read_transaction([&]() -> result<std::map<std::string, delivery>> {
            std::map<std::string, delivery> out;
            for (const auto& key : keys) {
                auto st = reader_->prepare("SELECT " WB_DLV_COLS " FROM dedup x "
                                           "JOIN deliveries d ON d.id = x.delivery_id "
                                           "WHERE x.subscription_id = ?1 AND x.dedup_key = ?2");
                st.bind(1, subscription_id).bind(2, key);
                auto row = st.step();
                if (!row) {
                    return row.error();
                }
                if (*row) {
                    auto d = read_delivery(st);
                    if (!d) {
                        return d.error();
                    }
                    out.emplace(key, std::move(*d));
                }
            }
            return out;
        });
    }

    result<bool> replace_connector_settings(const std::string& id, const std::string& expected,
                                            const std::string& replacement) override {
        const subscription_forget forget{*this, id};
        bool replaced = false;
        auto r = write_transaction([&]() -> result<void> {
            auto st = writer_->prepare("UPDATE subscriptions SET connector_settings_json = ?3 "
                                       "WHERE id = ?1 AND connector_settings_json = ?2");
            st.bind(1, id).bind(2, expected).bind(3, replacement);
            WB_TRY(st.run());
            replaced = writer_->changes() == 1;
            return {};
        });
        if (!r) {
            return result<bool>(boost::system::in_place_error, r.error());
        }
        return replaced;
    }

    result<void> change_state(const state_change& change, const std::string& event_id,
                              millis at) override {
        const subscription_forget forget{*this, change.subscription_id};
        return write_transaction([&]() -> result<void> {
            return apply_state_change(*writer_, change, event_id, at, {});
        });
    }

    // ---- intake ----

    void intake(intake_request req, intake_callback done) override {
        {
            std::unique_lock lock(queue_mu_);
            if (!stopping_) {
                queue_.push_back(queued_intake{std::move(req), std::move(done)});
                ++queued_rows_;
                lock.unlock();
                queue_cv_.notify_one();
                return;
            }
        }
        if (done) {
            done(errc::shutting_down);
        }
    }

    result<void> record_verification_refusal(const verification_refusal& r) override {
        return write_transaction([&]() -> result<void> {
            delivery_attempt a;
            a.subscription_id = r.subscription_id;
            a.dedup_key = r.dedup_key;
            a.attempt = 1;
            a.outcome = attempt_outcome::dead_lettered;
            WB_TRY(insert_subscription_event(
                *writer_, r.subscription_id, codec::event_delivery_attempted,
                codec::attempt_payload_json(a), {}, r.attempt_event_id, r.at));
            return insert_dead_letter(r.subscription_id, r.attempt_event_id, a,
                                      dead_letter_reason::verification_failed, std::nullopt, r.at,
                                      r.expires_at, {});
        });
    }

    // ---- deliveries ----

    result<std::vector<delivery>> claim_due(millis now, int limit, millis lease_ms) override {
        if (limit <= 0) {
            return std::vector<delivery>{};
        }
        // A claim needs no fsync of its own: if it is lost, the delivery is simply pending again
        // (nothing started without a later, fsynced record_attempt, and a WAL fsync covers every
        // frame before it).
        return write_transaction_unsynced([&]() -> result<std::vector<delivery>> {
            struct candidate {
                std::int64_t seq;
                delivery d;
                std::int64_t turn = 1; // the delivery's rank within its subscription
            };
            std::vector<candidate> picked;
            // Reads up to `n` rows of `sql` (?1 subscription, ?2 now, ?3 n) into `into`.
            auto collect = [&](const char* sql, const std::string& subscription, int n,
                               std::vector<candidate>& into) -> result<void> {
                auto st = writer_->prepare(sql);
                st.bind(1, subscription).bind(2, now).bind(3, n);
                for (;;) {
                    auto row = st.step();
                    if (!row) {
                        return row.error();
                    }
                    if (!*row) {
                        return {};
                    }
                    auto d = read_delivery(st);
                    if (!d) {
                        return d.error();
                    }
                    into.push_back({st.int64(11), std::move(*d)});
                }
            };
            auto subscriptions = [&](const char* sql) -> result<std::vector<std::string>> {
                std::vector<std::string> ids;
                auto st = writer_->prepare(sql);
                st.bind(1, now);
                for (;;) {
                    auto row = st.step();
                    if (!row) {
                        return row.error();
                    }
                    if (!*row) {
                        return ids;
                    }
                    ids.push_back(st.text(0));
                }
            };
            // Per subscription through the (subscription_id, status, due_at, seq) index: at most
            // `limit` rows each, so a backlog costs a seek, not a scan and a sort.
            auto active = active_with_room(now);
            if (!active) {
                return active.error();
            }
            // Round-robin across subscriptions (each one's oldest due delivery first, then each
            // one's second, ...), in due order within a subscription: a subscription with a large
            // due backlog (an always-failing workflow retrying) cannot take every slot ahead of the
            // others' fresh deliveries.
            for (const auto& [id, room] : *active) {
                const int n = std::min(limit, room);
                if (n <= 0) {
                    continue; // maxConcurrency attempts already in flight
                }
                std::vector<candidate> own;
                WB_TRY(collect(due_queries::due_pending_of_subscription, id, n, own));
                WB_TRY(collect(due_queries::expired_leases_of_subscription, id, n, own));
                std::sort(own.begin(), own.end(), [](const candidate& a, const candidate& b) {
                    return std::tie(a.d.due_at, a.seq) < std::tie(b.d.due_at, b.seq);
                });
                if (own.size() > static_cast<std::size_t>(n)) {
                    own.resize(static_cast<std::size_t>(n));
                }
                std::int64_t turn = 0;
                for (auto& c : own) {
                    c.turn = ++turn;
                    picked.push_back(std::move(c));
                }
            }
            // Half-open probes: one delivery per failed subscription whose probe time has come
            // and which has no unexpired probe in flight.
            auto probing = subscriptions(due_queries::probe_due_subscriptions);
            if (!probing) {
                return probing.error();
            }
            for (const auto& id : *probing) {
                std::vector<candidate> first;
                WB_TRY(collect(due_queries::due_pending_of_subscription, id, 1, first));
                WB_TRY(collect(due_queries::expired_leases_of_subscription, id, 1, first));
                if (first.empty()) {
                    continue;
                }
                auto best = std::min_element(
                    first.begin(), first.end(), [](const candidate& a, const candidate& b) {
                        return std::tie(a.d.due_at, a.seq) < std::tie(b.d.due_at, b.seq);
                    });
                picked.push_back(std::move(*best));
            }
            std::sort(picked.begin(), picked.end(), [](const candidate& a, const candidate& b) {
                return std::tie(a.turn, a.d.due_at, a.seq) < std::tie(b.turn, b.d.due_at, b.seq);
            });
            if (picked.size() > static_cast<std::size_t>(limit)) {
                picked.resize(static_cast<std::size_t>(limit));
            }
            std::vector<delivery> out;
            out.reserve(picked.size());
            for (auto& c : picked) {
                auto st = writer_->prepare("UPDATE deliveries SET status = 'in_flight', "
                                           "lease_until = ?2, updated_at = ?3 WHERE seq = ?1");
                st.bind(1, c.seq).bind(2, now + lease_ms).bind(3, now);
                WB_TRY(st.run());
                c.d.status = delivery_status::in_flight;
                c.d.updated_at = now;
                out.push_back(std::move(c.d));
            }
            return out;
        });
    }

    // Active subscriptions with how many more attempts each may have in flight (maxConcurrency
    // minus its unexpired leases; INT_MAX without a bound). Inside the claim's write transaction.
    result<std::vector<std::pair<std::string, int>>> active_with_room(millis now) {
        std::vector<std::pair<std::string, int>> out;
        auto st = writer_->prepare(due_queries::active_subscriptions);
        st.bind(1, now);
        for (;;) {
            auto row = st.step();
            if (!row) {
                return row.error();
            }
            if (!*row) {
                return out;
            }
            const auto cap = st.int64(1);
            const int room = cap <= 0 ? std::numeric_limits<int>::max()
                                      : static_cast<int>(std::max<std::int64_t>(0, cap - st.int64(2)));
            out.emplace_back(st.text(0), room);
        }
    }

    result<std::string> delivery_content(const std::string& delivery_id) override {
        return read_transaction([&]() -> result<std::string> {
            auto st = reader_->prepare(
                "SELECT content_json FROM delivery_contents WHERE delivery_id = ?1");
            st.bind(1, delivery_id);
            auto row = st.step();
            if (!row) {
                return row.error();
            }
            if (!*row) {
                return errc::not_found;
            }
            return st.text(0);
        });
    }

    result<void> record_attempt(const attempt_record& rec) override {
        auto out = record_attempts({rec});
        return out.front();
    }

    // Queued to the writer with the intakes: the records share their group commit (one fsync).
    std::vector<result<void>> record_attempts(const std::vector<attempt_record>& recs) override {
        if (recs.empty()) {
            return {};
        }
        std::promise<std::vector<result<void>>> promise;
        auto future = promise.get_future();
        {
            std::unique_lock lock(queue_mu_);
            if (stopping_) {
                return std::vector<result<void>>(recs.size(), make_error_code(errc::shutting_down));
            }
            queue_.push_back(queued_attempts{&recs, &promise});
            queued_rows_ += recs.size();
        }
        queue_cv_.notify_one();
        return future.get();
    }

    result<std::map<std::string, std::string>>
    delivery_contents(const std::vector<std::string>& delivery_ids) override {
        return read_transaction([&]() -> result<std::map<std::string, std::string>> {
            std::map<std::string, std::string> out;
            for (const auto& id : delivery_ids) {
                auto one = reader_->prepare(
                    "SELECT content_json FROM delivery_contents WHERE delivery_id = ?1");
                one.bind(1, id);
                auto row = one.step();
                if (!row) {
                    return row.error();
                }
                if (*row) {
                    out.emplace(id, one.text(0));
                }
            }
            return out;
        });
    }

    result<std::vector<subscription_delivery_stats>> delivery_stats(millis now) override {
        return read_transaction([&]() -> result<std::vector<subscription_delivery_stats>> {
            auto st = reader_->prepare(
                "SELECT subscription_id, "
                "SUM(status = 'pending'), SUM(status = 'pending' AND due_at <= ?1), "
                "SUM(status = 'in_flight'), SUM(status = 'held'), SUM(status = 'delivered'), "
                "SUM(status = 'dead_lettered'), 0 FROM deliveries GROUP BY subscription_id "
                "UNION ALL SELECT subscription_id, 0, 0, 0, 0, 0, 0, COUNT(*) FROM dead_letters "
                "WHERE expires_at > ?1 GROUP BY subscription_id ORDER BY 1");
            st.bind(1, static_cast<std::int64_t>(now));
            std::vector<subscription_delivery_stats> out;
            for (;;) {
                auto row = st.step();
                if (!row) {
                    return row.error();
                }
                if (!*row) {
                    break;
                }
                auto id = st.text(0);
                if (out.empty() || out.back().subscription_id != id) {
                    out.emplace_back().subscription_id = std::move(id);
                }
                auto& s = out.back();
                s.pending += st.int64(1);
                s.due += st.int64(2);
                s.in_flight += st.int64(3);
                s.held += st.int64(4);
                s.delivered += st.int64(5);
                s.dead_lettered += st.int64(6);
                s.dead_letters += st.int64(7);
            }
            return out;
        });
    }

    result<std::optional<millis>> next_due_at() override {
        return read_transaction([&]() -> result<std::optional<millis>> {
            auto st = reader_->prepare(due_queries::next_due_at);
            auto row = st.step();
            if (!row) {
                return row.error();
            }
            if (!*row || st.is_null(0)) {
                return std::optional<millis>{};
            }
            return std::optional<millis>{st.int64(0)};
        });
    }

    result<page<delivery>> list_deliveries(const std::string& subscription_id,
                                           const page_request& req) override {
        std::int64_t before = std::numeric_limits<std::int64_t>::max();
        if (!req.cursor.empty()) {
            auto key = codec::decode_cursor(req.cursor, deliveries_cursor, subscription_id);
            if (!key) {
                return errc::invalid_argument;
            }
            before = *key;
        }
        const int limit = clamp_limit(req.limit);
        return read_transaction([&]() -> result<page<delivery>> {
            auto exists = subscription_exists(*reader_, subscription_id);
            if (!exists) {
                return exists.error();
            }
            if (!*exists) {
                return errc::not_found;
            }
            auto st = reader_->prepare("SELECT " WB_DLV_COLS " FROM deliveries d "
                                       "WHERE d.subscription_id = ?1 AND d.seq < ?2 "
                                       "ORDER BY d.seq DESC LIMIT ?3");
            st.bind(1, subscription_id).bind(2, before).bind(3, limit + 1);
            page<delivery> out;
            std::int64_t last_key = 0;
            for (;;) {
                auto row = st.step();
                if (!row) {
                    return row.error();
                }
                if (!*row) {
                    break;
                }
                if (out.items.size() == static_cast<std::size_t>(limit)) {
                    out.next_cursor =
                        codec::encode_cursor(deliveries_cursor, subscription_id, last_key);
                    break;
                }
                auto d = read_delivery(st);
                if (!d) {
                    return d.error();
                }
                last_key = st.int64(11);
                out.items.push_back(std::move(*d));
            }
            return out;
        });
    }

    result<delivery> get_delivery(const std::string& delivery_id) override {
        return read_transaction([&]() -> result<delivery> {
            auto st = reader_->prepare("SELECT " WB_DLV_COLS " FROM deliveries d WHERE d.id = ?1");
            st.bind(1, delivery_id);
            auto row = st.step();
            if (!row) {
                return row.error();
            }
            if (!*row) {
                return errc::not_found;
            }
            return read_delivery(st);
        });
    }

    result<int> release_held(const std::string& subscription_id, millis now) override {
        return write_transaction([&]() -> result<int> {
            auto exists = subscription_exists(*writer_, subscription_id);
            if (!exists) {
                return exists.error();
            }
            if (!*exists) {
                return errc::not_found;
            }
            // All become due at the same instant; claim order then falls back to arrival (seq).
            auto st = writer_->prepare("UPDATE deliveries SET status = 'pending', due_at = ?2, "
                                       "updated_at = ?2 WHERE subscription_id = ?1 "
                                       "AND status = 'held'");
            st.bind(1, subscription_id).bind(2, now);
            WB_TRY(st.run());
            return static_cast<int>(writer_->changes());
        });
    }

    // ---- dead letters ----

    result<page<dead_letter>> list_dead_letters(const std::string& subscription_id,
                                                const page_request& req, millis now) override {
        std::int64_t before = std::numeric_limits<std::int64_t>::max();
        if (!req.cursor.empty()) {
            auto key = codec::decode_cursor(req.cursor, dead_letters_cursor, subscription_id);
            if (!key) {
                return errc::invalid_argument;
            }
            before = *key;
        }
        const int limit = clamp_limit(req.limit);
        return read_transaction([&]() -> result<page<dead_letter>> {
            auto exists = subscription_exists(*reader_, subscription_id);
            if (!exists) {
                return exists.error();
            }
            if (!*exists) {
                return errc::not_found;
            }
            auto st = reader_->prepare("SELECT " WB_DL_COLS " FROM dead_letters "
                                       "WHERE subscription_id = ?1 AND seq < ?2 "
                                       "AND expires_at > ?3 ORDER BY seq DESC LIMIT ?4");
            st.bind(1, subscription_id).bind(2, before).bind(3, now).bind(4, limit + 1);
            page<dead_letter> out;
            std::int64_t last_key = 0;
            for (;;) {
                auto row = st.step();
                if (!row) {
                    return row.error();
                }
                if (!*row) {
                    break;
                }
                if (out.items.size() == static_cast<std::size_t>(limit)) {
                    out.next_cursor =
                        codec::encode_cursor(dead_letters_cursor, subscription_id, last_key);
                    break;
                }
                auto d = read_dead_letter(st);
                if (!d) {
                    return d.error();
                }
                last_key = st.int64(12);
                out.items.push_back(std::move(*d));
            }
            return out;
        });
    }

    // ---- runs ----

    result<run_record> get_run(const std::string& run_id) override {
        return read_transaction([&]() -> result<run_record> {
            auto st = reader_->prepare("SELECT " WB_RUN_COLS " FROM runs WHERE id = ?1");
            st.bind(1, run_id);
            auto row = st.step();
            if (!row) {
                return row.error();
            }
            if (!*row) {
                return errc::not_found;
            }
            return read_run(st);
        });
    }

    result<std::vector<run_event>>
    run_events_after(const std::string& run_id, std::int64_t after_sequence, int limit) override {
        const int n = limit <= 0 ? max_page_limit : clamp_limit(limit);
        return read_transaction([&]() -> result<std::vector<run_event>> {
            auto exists = reader_->prepare("SELECT 1 FROM runs WHERE id = ?1");
            exists.bind(1, run_id);
            auto found = exists.step();
            if (!found) {
                return found.error();
            }
            if (!*found) {
                return errc::not_found;
            }
            auto st = reader_->prepare(
                "SELECT event_id, type, payload_json, timestamp, sequence, causation_id "
                "FROM run_events WHERE run_id = ?1 AND sequence > ?2 ORDER BY sequence LIMIT ?3");
            st.bind(1, run_id).bind(2, after_sequence).bind(3, n);
            return collect_events(st, run_id);
        });
    }

    result<run_event> append_run_event(const std::string& run_id, const std::string& type,
                                       const std::string& payload_json,
                                       const std::string& causation_id, const std::string& event_id,
                                       millis at) override {
        return write_transaction([&]() -> result<run_event> {
            auto seq =
                insert_run_event(*writer_, run_id, type, payload_json, causation_id, event_id, at);
            if (!seq) {
                return seq.error();
            }
            return run_event{event_id, run_id, type, payload_json, at, *seq, causation_id};
        });
    }

    result<void> set_run_status(const std::string& run_id, run_status status, millis at) override {
        return write_transaction([&]() -> result<void> { return update_run_status(run_id, status, at); });
    }

    result<run_event> end_run(const std::string& run_id, const std::string& type,
                              const std::string& payload_json, const std::string& event_id,
                              run_status status, millis at) override {
        return write_transaction([&]() -> result<run_event> {
            WB_TRY(update_run_status(run_id, status, at));
            auto seq = insert_run_event(*writer_, run_id, type, payload_json, "", event_id, at);
            if (!seq) {
                return seq.error();
            }
            return run_event{event_id, run_id, type, payload_json, at, *seq, ""};
        });
    }

    result<void> update_run_status(const std::string& run_id, run_status status, millis at) {
        auto st = writer_->prepare("UPDATE runs SET status = ?2, updated_at = ?3 WHERE id = ?1");
        st.bind(1, run_id).bind(2, codec::name_of(status)).bind(3, at);
        WB_TRY(st.run());
        if (writer_->changes() == 0) {
            return errc::not_found;
        }
        return {};
    }

    result<std::vector<run_record>> list_runs_with_status(run_status status) override {
        return read_transaction([&]() -> result<std::vector<run_record>> {
            auto st = reader_->prepare("SELECT " WB_RUN_COLS
                                       " FROM runs WHERE status = ?1 ORDER BY created_at, id");
            st.bind(1, codec::name_of(status));
            std::vector<run_record> out;
            for (;;) {
                auto row = st.step();
                if (!row) {
                    return row.error();
                }
                if (!*row) {
                    return out;
                }
                auto r = read_run(st);
                if (!r) {
                    return r.error();
                }
                out.push_back(std::move(*r));
            }
        });
    }

    result<std::vector<run_event>>
    subscription_events(const std::string& subscription_id) override {
        return read_transaction([&]() -> result<std::vector<run_event>> {
            auto exists = subscription_exists(*reader_, subscription_id);
            if (!exists) {
                return exists.error();
            }
            if (!*exists) {
                return errc::not_found;
            }
            auto st = reader_->prepare(
                "SELECT event_id, type, payload_json, timestamp, sequence, causation_id "
                "FROM subscription_events WHERE subscription_id = ?1 ORDER BY sequence");
            st.bind(1, subscription_id);
            return collect_events(st, {});
        });
    }

    // ---- housekeeping ----

    result<int> purge_expired(millis now) override {
        return write_transaction([&]() -> result<int> {
            auto dedup = writer_->prepare("DELETE FROM dedup WHERE expires_at < ?1");
            dedup.bind(1, now);
            WB_TRY(dedup.run());
            auto removed = writer_->changes();
            // A refused signature's run-less attempt event goes with its dead letter: forged posts
            // must not leave a row behind for ever (their retention is the short one).
            auto refused = writer_->prepare(
                "DELETE FROM subscription_events WHERE event_id IN (SELECT attempt_event_id FROM "
                "dead_letters WHERE expires_at <= ?1 AND reason = 'verification_failed')");
            refused.bind(1, now);
            WB_TRY(refused.run());
            removed += writer_->changes();
            auto dead = writer_->prepare("DELETE FROM dead_letters WHERE expires_at <= ?1");
            dead.bind(1, now);
            WB_TRY(dead.run());
            removed += writer_->changes();
            auto jobs = sqlite::replay_jobs::purge_finished(*writer_, now);
            if (!jobs) {
                return jobs.error();
            }
            return static_cast<int>(removed) + *jobs;
        });
    }

    result<std::string> bind_host_key_check(const std::string& check,
                                            const std::string& wrapped_data_key) override {
        return write_transaction([&]() -> result<std::string> {
            auto ins = writer_->prepare(
                "INSERT INTO store_meta (name, value) VALUES ('host_key_check', ?1) "
                "ON CONFLICT (name) DO NOTHING");
            ins.bind(1, check);
            WB_TRY(ins.run());
            if (writer_->changes() > 0) {
                auto wrap = writer_->prepare(
                    "INSERT INTO store_meta (name, value) VALUES (?1, ?2) "
                    "ON CONFLICT (name) DO NOTHING");
                wrap.bind(1, std::string(data_key_wrap_prefix) + check);
                wrap.bind(2, wrapped_data_key);
                WB_TRY(wrap.run());
            }
            auto st = writer_->prepare("SELECT value FROM store_meta WHERE name = 'host_key_check'");
            auto row = st.step();
            if (!row) {
                return row.error();
            }
            return *row ? st.text(0) : std::string();
        });
    }

    result<bool> has_keyed_rows() override {
        auto any = read_transaction([&]() -> result<std::int64_t> {
            auto st = reader_->prepare("SELECT EXISTS (SELECT 1 FROM subscriptions) OR "
                                       "EXISTS (SELECT 1 FROM dedup) OR "
                                       "EXISTS (SELECT 1 FROM outbound_webhooks)");
            auto row = st.step();
            if (!row) {
                return row.error();
            }
            return *row ? st.int64(0) : 0;
        });
        if (!any) {
            return result<bool>(boost::system::in_place_error, any.error());
        }
        return *any != 0;
    }


    result<std::map<std::string, std::string>> data_key_wraps() override {
        return read_transaction([&]() -> result<std::map<std::string, std::string>> {
            auto st = reader_->prepare(
                "SELECT name, value FROM store_meta WHERE substr(name, 1, ?1) = ?2");
            st.bind(1, static_cast<std::int64_t>(data_key_wrap_prefix.size()));
            st.bind(2, std::string(data_key_wrap_prefix));
            std::map<std::string, std::string> out;
            for (;;) {
                auto row = st.step();
                if (!row) {
                    return row.error();
                }
                if (!*row) {
                    return out;
                }
                out.emplace(st.text(0).substr(data_key_wrap_prefix.size()), st.text(1));
            }
        });
    }

    result<void> add_data_key_wrap(const std::string& check, const std::string& wrapped) override {
        return write_transaction([&]() -> result<void> {
            auto ins = writer_->prepare("INSERT INTO store_meta (name, value) VALUES (?1, ?2) "
                                        "ON CONFLICT (name) DO NOTHING");
            ins.bind(1, std::string(data_key_wrap_prefix) + check);
            ins.bind(2, wrapped);
            WB_TRY(ins.run());
            return {};
        });
    }

    result<int> retire_data_key_wraps(const std::string& keep_check) override {
        return write_transaction([&]() -> result<int> {
            const std::string keep = std::string(data_key_wrap_prefix) + keep_check;
            auto has = writer_->prepare("SELECT 1 FROM store_meta WHERE name = ?1");
            has.bind(1, keep);
            auto row = has.step();
            if (!row) {
                return row.error();
            }
            if (!*row) {
                return make_error_code(errc::not_found);
            }
            auto drop = writer_->prepare(
                "DELETE FROM store_meta WHERE substr(name, 1, ?1) = ?2 AND name <> ?3");
            drop.bind(1, static_cast<std::int64_t>(data_key_wrap_prefix.size()));
            drop.bind(2, std::string(data_key_wrap_prefix));
            drop.bind(3, keep);
            WB_TRY(drop.run());
            const auto dropped = static_cast<int>(writer_->changes());
            auto bind = writer_->prepare(
                "INSERT OR REPLACE INTO store_meta (name, value) VALUES ('host_key_check', ?1)");
            bind.bind(1, keep_check);
            WB_TRY(bind.run());
            return dropped;
        });
    }

    result<int> release_all_claims() override {
        return write_transaction([&]() -> result<int> {
            auto st = writer_->prepare(
                "UPDATE deliveries SET lease_until = 0 WHERE status = 'in_flight' AND lease_until > 0");
            WB_TRY(st.run());
            const auto deliveries = static_cast<int>(writer_->changes());
            WB_TRY(sqlite::replay_jobs::release(*writer_, ""));
            return deliveries;
        });
    }

    // One process serves this file (serve's lock): there is no cluster to beat in or leave.
    result<int> keep_node_alive(millis /*silent_ms*/) override {
        return make_error_code(errc::unsupported);
    }
    result<void> leave_cluster() override { return make_error_code(errc::unsupported); }

    result<void> probe_write() override {
        return write_transaction([&]() -> result<void> {
            // Row written and removed: the pages still go through the WAL and its fsync.
            auto put = writer_->prepare(
                "INSERT OR REPLACE INTO store_meta (name, value) VALUES ('write_probe', ?1)");
            put.bind(1, std::string(512, 'p'));
            WB_TRY(put.run());
            auto drop = writer_->prepare("DELETE FROM store_meta WHERE name = 'write_probe'");
            WB_TRY(drop.run());
            return {};
        });
    }

    result<std::string> host_key_check() override {
        return read_transaction([&]() -> result<std::string> {
            auto st = reader_->prepare("SELECT value FROM store_meta WHERE name = 'host_key_check'");
            auto row = st.step();
            if (!row) {
                return row.error();
            }
            return *row ? st.text(0) : std::string();
        });
    }

    result<void> ping() override {
        {
            std::lock_guard lock(write_mu_);
            if (sqlite3_db_readonly(writer_->handle(), "main") != 0) {
                return errc::store_unavailable;
            }
        }
        return read_transaction([&]() -> result<void> {
            auto st = reader_->prepare("SELECT 1");
            auto row = st.step();
            if (!row) {
                return row.error();
            }
            return {};
        });
    }

    store_stats stats() const override {
        return {commits_.load(), intake_batches_.load(), intake_requests_.load()};
    }

    // ---- outbound webhooks (sqlite_outbound.cpp) ----

    result<void> insert_outbound_webhook(const outbound_webhook& w) override {
        outbound_possible_.store(true); // before the commit: no run event may miss its outbox
        return write_transaction([&] { return sqlite::outbound::insert_webhook(*writer_, w); });
    }
    result<outbound_webhook> get_outbound_webhook(const std::string& id) override {
        return read_transaction([&] { return sqlite::outbound::get_webhook(*reader_, id); });
    }
    result<std::vector<outbound_webhook>> list_outbound_webhooks(const std::string& t) override {
        return read_transaction([&] { return sqlite::outbound::list_webhooks(*reader_, t); });
    }
    result<void> delete_outbound_webhook(const std::string& id) override {
        return write_transaction([&] { return sqlite::outbound::delete_webhook(*writer_, id); });
    }
    result<int> enqueue_outbound(const std::string& run_id, std::int64_t sequence,
                                 millis at) override {
        return write_transaction(
            [&] { return sqlite::outbound::enqueue(*writer_, run_id, sequence, at); });
    }
    result<std::vector<outbound_delivery>> claim_outbound_due(millis now, int limit,
                                                              int per_webhook_limit,
                                                              millis lease_ms) override {
        return write_transaction([&] {
            return sqlite::outbound::claim_due(*writer_, now, limit, per_webhook_limit, lease_ms);
        });
    }
    result<void> record_outbound_attempt(const outbound_attempt& a) override {
        return write_transaction([&] { return sqlite::outbound::record_attempt(*writer_, a); });
    }
    result<int> count_outbound_failures(const std::string& id, millis since) override {
        return read_transaction(
            [&] { return sqlite::outbound::count_failures(*reader_, id, since); });
    }
    result<std::optional<millis>> outbound_next_due_at() override {
        return read_transaction([&] { return sqlite::outbound::next_due_at(*reader_); });
    }
    result<std::vector<outbound_delivery>> list_outbound_deliveries(
        const std::string& id) override {
        return read_transaction([&] { return sqlite::outbound::list_deliveries(*reader_, id); });
    }
    result<page<outbound_dead_letter>> list_outbound_dead_letters(const std::string& id,
                                                                  const page_request& req,
                                                                  millis now) override {
        return read_transaction(
            [&] { return sqlite::outbound::list_dead_letters(*reader_, id, req, now); });
    }
    result<std::vector<outbound_state_change>> list_outbound_state_changes(
        const std::string& id) override {
        return read_transaction(
            [&] { return sqlite::outbound::list_state_changes(*reader_, id); });
    }

    // ---- bulk replay jobs (sqlite_replay_jobs.cpp) ----

    result<void> create_replay_job(const replay_job_record& job,
                                   const std::vector<std::string>& ids) override {
        return write_transaction([&] { return sqlite::replay_jobs::create(*writer_, job, ids); });
    }
    result<replay_job_record> get_replay_job(const std::string& id) override {
        return read_transaction([&] { return sqlite::replay_jobs::get(*reader_, id); });
    }
    result<std::vector<replay_job_item>> unsettled_replay_job_items(const std::string& id) override {
        return read_transaction([&] { return sqlite::replay_jobs::unsettled_items(*reader_, id); });
    }
    result<void> update_replay_job(const replay_job_update& u) override {
        return write_transaction([&] { return sqlite::replay_jobs::update(*writer_, u); });
    }
    result<std::vector<replay_job_record>> claim_replay_jobs(const std::string& owner, millis now,
                                                             millis lease_ms) override {
        return write_transaction(
            [&] { return sqlite::replay_jobs::claim(*writer_, owner, now, lease_ms); });
    }
    result<int> release_replay_jobs(const std::string& owner) override {
        if (owner.empty()) {
            return make_error_code(errc::invalid_argument); // "" would release every node's
        }
        return write_transaction([&] { return sqlite::replay_jobs::release(*writer_, owner); });
    }

  private:
    static constexpr std::size_t max_cached_subscriptions = 10000;

    void forget_subscription(const std::string& id) {
        std::lock_guard lock(subs_mu_);
        ++subs_generation_;
        subs_cache_.erase(id);
    }

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
    using queued_write = std::variant<queued_intake, queued_attempts>;
    struct write_outcome {
        result<intake_outcome> intake = make_error_code(errc::internal);
        std::vector<result<void>> attempts;
    };

    void rollback_if_open(connection& c) {
        if (c.in_transaction()) {
            c.exec("ROLLBACK");
        }
    }

    // One committed (fsynced) write transaction around `body`, serialized with every other write.
    template <class F> auto write_transaction(F&& body) -> decltype(body()) {
        std::lock_guard lock(write_mu_);
        return transaction_locked(body);
    }

    // The same without an fsync at its COMMIT (synchronous=NORMAL for this one transaction):
    // only for writes whose loss at a crash is harmless (claims: a lost lease leaves the delivery
    // pending). The next fsynced commit makes it durable along with everything before it.
    template <class F> auto write_transaction_unsynced(F&& body) -> decltype(body()) {
        std::lock_guard lock(write_mu_);
        if (auto r = writer_->exec("PRAGMA synchronous=NORMAL"); !r) {
            return r.error();
        }
        auto out = transaction_locked(body);
        if (auto r = writer_->exec("PRAGMA synchronous=FULL"); !r && out) {
            return r.error();
        }
        return out;
    }

    template <class F> auto transaction_locked(F& body) -> decltype(body()) {
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

    // A consistent snapshot for reads that take more than one statement.
    template <class F> auto read_transaction(F&& body) -> decltype(body()) {
        std::lock_guard lock(read_mu_);
        if (auto r = reader_->exec("BEGIN"); !r) {
            return r.error();
        }
        auto out = body();
        reader_->exec("COMMIT");
        rollback_if_open(*reader_);
        return out;
    }

    result<std::vector<subscription>> collect_subscriptions(statement& st) {
        std::vector<subscription> out;
        for (;;) {
            auto row = st.step();
            if (!row) {
                return row.error();
            }
            if (!*row) {
                return out;
            }
            auto s = read_subscription(st);
            if (!s) {
                return s.error();
            }
            out.push_back(std::move(*s));
        }
    }

    static result<std::vector<run_event>> collect_events(statement& st, const std::string& run_id) {
        std::vector<run_event> out;
        for (;;) {
            auto row = st.step();
            if (!row) {
                return row.error();
            }
            if (!*row) {
                return out;
            }
            out.push_back(read_event(st, run_id));
        }
    }

    result<void> insert_dead_letter(const std::string& subscription_id,
                                    const std::string& attempt_event_id, const delivery_attempt& a,
                                    dead_letter_reason reason,
                                    const std::optional<state_change>& change, millis at,
                                    millis expires_at, const std::string& delivery_id) {
        auto st = writer_->prepare(
            "INSERT INTO dead_letters (subscription_id, attempt_event_id, dedup_key, attempt, "
            "reason, state_change_source, state_change_from, state_change_to, "
            "state_change_reason, dead_lettered_at, expires_at, delivery_id) "
            "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)");
        st.bind(1, subscription_id)
            .bind(2, attempt_event_id)
            .bind(3, a.dedup_key)
            .bind(4, a.attempt)
            .bind(5, codec::name_of(reason));
        if (change) {
            st.bind(6, codec::name_of(change->source))
                .bind(7, codec::name_of(change->from))
                .bind(8, codec::name_of(change->to))
                .bind(9, codec::name_of(change->reason));
        } else {
            st.bind_null(6).bind_null(7).bind_null(8).bind_null(9);
        }
        st.bind(10, at).bind(11, expires_at).bind(12, delivery_id);
        return st.run();
    }

    result<void> record_attempt_locked(const attempt_record& rec) {
        connection& c = *writer_;
        std::string reserved_run_id;
        {
            auto st =
                c.prepare("SELECT status, subscription_id, run_id FROM deliveries WHERE id = ?1");
            st.bind(1, rec.delivery_id);
            auto row = st.step();
            if (!row) {
                return row.error();
            }
            if (!*row) {
                return errc::not_found;
            }
            auto status = codec::delivery_status_from(st.text(0));
            if (st.text(1) != rec.subscription_id) {
                return errc::invalid_argument;
            }
            // A settled delivery is never settled twice (e.g. by a claimer whose lease expired).
            if (!status || *status == delivery_status::delivered ||
                *status == delivery_status::dead_lettered) {
                return errc::conflict;
            }
            reserved_run_id = st.text(2);
        }

        delivery_attempt attempt = rec.attempt;
        attempt.subscription_id = rec.subscription_id;
        if (attempt.outcome == attempt_outcome::delivered) {
            if (attempt.run_id.empty()) {
                attempt.run_id = rec.run->id;
            }
        } else {
            attempt.run_id.clear();
        }
        const std::string payload = codec::attempt_payload_json(attempt);

        switch (attempt.outcome) {
        case attempt_outcome::delivered: {
            const run_record& run = *rec.run;
            auto ins = c.prepare("INSERT INTO runs (" WB_RUN_COLS
                                 ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
            ins.bind(1, run.id)
                .bind(2, run.tenant)
                .bind(3, run.workflow_id)
                .bind(4, run.subscription_id)
                .bind(5, run.delivery_id)
                .bind(6, codec::name_of(run.status))
                .bind(7, run.upstream_run_id)
                .bind(8, run.created_at)
                .bind(9, run.updated_at);
            WB_TRY(ins.run());
            // A new run's log is empty: its sequences are known (0, 1, ...), no MAX() lookup.
            std::int64_t next_sequence = 0;
            const bool outbound = outbound_possible_.load();
            WB_TRY(insert_new_run_event(c, run.id, next_sequence++,
                                        codec::event_delivery_attempted, payload, {},
                                        rec.attempt_event_id, rec.at, outbound));
            WB_TRY(insert_new_run_event(c, run.id, next_sequence++, codec::event_run_started,
                                        rec.run_started_payload_json, rec.attempt_event_id,
                                        rec.run_started_event_id, rec.at, outbound));
            for (std::size_t i = 0; i < rec.extra_run_events.size(); ++i) {
                std::string id =
                    i < rec.extra_run_event_ids.size() ? rec.extra_run_event_ids[i] : std::string{};
                if (id.empty()) {
                    id = rec.run_started_event_id + "." + std::to_string(i + 1);
                }
                const auto& [type, extra_payload] = rec.extra_run_events[i];
                WB_TRY(insert_new_run_event(c, run.id, next_sequence++, type, extra_payload, {},
                                            id, rec.at, outbound));
            }
            auto upd = c.prepare("UPDATE deliveries SET status = 'delivered', attempts = ?2, "
                                 "lease_until = 0, updated_at = ?3, last_error = '', "
                                 "run_id = ?4 WHERE id = ?1");
            upd.bind(1, rec.delivery_id).bind(2, attempt.attempt).bind(3, rec.at).bind(4, run.id);
            WB_TRY(upd.run());
            if (run.id != reserved_run_id) {
                auto dd = c.prepare("UPDATE dedup SET run_id = ?1 "
                                    "WHERE subscription_id = ?2 AND delivery_id = ?3");
                dd.bind(1, run.id).bind(2, rec.subscription_id).bind(3, rec.delivery_id);
                WB_TRY(dd.run());
            }
            break;
        }
        case attempt_outcome::retrying: {
            WB_TRY(insert_subscription_event(c, rec.subscription_id,
                                             codec::event_delivery_attempted, payload, {},
                                             rec.attempt_event_id, rec.at));
            auto upd = c.prepare("UPDATE deliveries SET status = 'pending', due_at = ?2, "
                                 "attempts = ?3, last_error = ?4, lease_until = 0, "
                                 "updated_at = ?5 WHERE id = ?1");
            upd.bind(1, rec.delivery_id)
                .bind(2, rec.next_due_at)
                .bind(3, attempt.attempt)
                .bind(4, rec.error)
                .bind(5, rec.at);
            WB_TRY(upd.run());
            break;
        }
        case attempt_outcome::dead_lettered: {
            WB_TRY(insert_subscription_event(c, rec.subscription_id,
                                             codec::event_delivery_attempted, payload, {},
                                             rec.attempt_event_id, rec.at));
            auto upd = c.prepare("UPDATE deliveries SET status = 'dead_lettered', "
                                 "attempts = ?2, last_error = ?3, lease_until = 0, "
                                 "updated_at = ?4 WHERE id = ?1");
            upd.bind(1, rec.delivery_id)
                .bind(2, attempt.attempt)
                .bind(3, rec.error)
                .bind(4, rec.at);
            WB_TRY(upd.run());
            WB_TRY(insert_dead_letter(rec.subscription_id, rec.attempt_event_id, attempt,
                                      dead_letter_reason::retries_exhausted,
                                      rec.state_change_caused, rec.at, rec.dead_letter_expires_at,
                                      rec.delivery_id));
            break;
        }
        }

        // Written only when it changes (a run of deliveries leaves it at 0, 0). The subscription
        // exists: its delivery row does (deleting a subscription cascades to its deliveries).
        auto sub = c.prepare("UPDATE subscriptions SET consecutive_failures = ?2, "
                             "next_probe_at = ?3 WHERE id = ?1 AND "
                             "(consecutive_failures <> ?2 OR next_probe_at <> ?3)");
        sub.bind(1, rec.subscription_id)
            .bind(2, rec.consecutive_failures)
            .bind(3, rec.next_probe_at);
        WB_TRY(sub.run());
        if (rec.state_change_caused) {
            WB_TRY(apply_state_change(c, *rec.state_change_caused, rec.state_change_event_id,
                                      rec.at, rec.attempt_event_id));
        }
        return {};
    }

    // Inside the batch transaction and its own savepoint.
    result<intake_outcome> intake_locked(const intake_request& req) {
        connection& c = *writer_;
        // No existence check first: the foreign keys of dedup and deliveries refuse an unknown
        // subscription (SQLITE_CONSTRAINT_FOREIGNKEY -> not_found) in the same statements.
        if (req.dedup_enabled) {
            // The uniqueness constraint is the dedup check: no check-then-insert. An expired row
            // (retention over) is taken over by the new delivery.
            auto ins = c.prepare(
                "INSERT INTO dedup (subscription_id, dedup_key, delivery_id, run_id, expires_at) "
                "VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (subscription_id, dedup_key) DO UPDATE "
                "SET delivery_id = excluded.delivery_id, run_id = excluded.run_id, "
                "expires_at = excluded.expires_at WHERE dedup.expires_at < ?6 RETURNING 1");
            ins.bind(1, req.subscription_id)
                .bind(2, req.dedup_key)
                .bind(3, req.delivery_id)
                .bind(4, req.run_id)
                .bind(5, req.dedup_expires_at)
                .bind(6, req.received_at);
            auto row = ins.step();
            if (!row) {
                return row.error();
            }
            bool claimed = *row;
            WB_TRY(ins.run());
            if (!claimed) {
                auto orig = c.prepare("SELECT delivery_id, run_id FROM dedup "
                                      "WHERE subscription_id = ?1 AND dedup_key = ?2");
                orig.bind(1, req.subscription_id).bind(2, req.dedup_key);
                auto found = orig.step();
                if (!found) {
                    return found.error();
                }
                if (!*found) {
                    return errc::internal;
                }
                return intake_outcome{intake_status::duplicate, orig.text(0), orig.text(1)};
            }
        }
        auto dlv = c.prepare(
            "INSERT INTO deliveries (id, subscription_id, tenant, dedup_key, run_id, status, "
            "attempts, due_at, lease_until, received_at, updated_at, last_error) "
            "VALUES (?1, ?2, ?3, ?4, ?5, ?6, 0, ?7, 0, ?8, ?8, '')");
        dlv.bind(1, req.delivery_id)
            .bind(2, req.subscription_id)
            .bind(3, req.tenant)
            .bind(4, req.dedup_key)
            .bind(5, req.run_id)
            .bind(6, codec::name_of(req.hold ? delivery_status::held : delivery_status::pending))
            .bind(7, req.due_at)
            .bind(8, req.received_at);
        WB_TRY(dlv.run());
        auto content =
            c.prepare("INSERT INTO delivery_contents (delivery_id, content_json) VALUES (?1, ?2)");
        content.bind(1, req.delivery_id).bind(2, req.content_json);
        WB_TRY(content.run());
        return intake_outcome{req.hold ? intake_status::held : intake_status::accepted,
                              req.delivery_id, req.run_id};
    }

    // Group commit: everything queued (intakes and attempt records, up to max_batch_ rows) goes
    // into one transaction, each intake and each attempt record in its own savepoint; one COMMIT
    // (one fsync), then every answer.
    void writer_loop() {
        std::vector<queued_write> batch;
        std::vector<write_outcome> results;
        for (;;) {
            batch.clear();
            {
                std::unique_lock lock(queue_mu_);
                queue_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
                if (queue_.empty()) {
                    return; // stopping, and drained
                }
                std::size_t rows = 0;
                while (!queue_.empty() &&
                       (batch.empty() || rows < static_cast<std::size_t>(max_batch_))) {
                    rows += rows_of(queue_.front());
                    batch.push_back(std::move(queue_.front()));
                    queue_.pop_front();
                }
                queued_rows_ -= rows;
            }
            results.clear();
            run_batch(batch, results);
            for (std::size_t i = 0; i < batch.size(); ++i) {
                if (auto* in = std::get_if<queued_intake>(&batch[i])) {
                    intake_requests_.fetch_add(1);
                    if (!in->done) {
                        continue;
                    }
                    try {
                        in->done(std::move(results[i].intake));
                    } catch (...) {
                        // A throwing callback must not take the writer (and every later intake)
                        // down.
                    }
                } else {
                    std::get<queued_attempts>(batch[i]).done->set_value(
                        std::move(results[i].attempts));
                }
            }
        }
    }

    static std::size_t rows_of(const queued_write& w) {
        if (const auto* a = std::get_if<queued_attempts>(&w)) {
            return std::max<std::size_t>(1, a->recs->size());
        }
        return 1;
    }

    // One unit of the batch in its own savepoint: kept when `body` succeeds, undone when it fails.
    template <class F> auto in_savepoint(F&& body) -> decltype(body()) {
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

    void run_batch(const std::vector<queued_write>& batch, std::vector<write_outcome>& results) {
        std::lock_guard lock(write_mu_);
        connection& c = *writer_;
        results.resize(batch.size());
        boost::system::error_code failed;
        if (auto r = c.exec("BEGIN IMMEDIATE"); !r) {
            rollback_if_open(c);
            failed = r.error();
        } else {
            for (std::size_t i = 0; i < batch.size(); ++i) {
                if (const auto* in = std::get_if<queued_intake>(&batch[i])) {
                    results[i].intake = in_savepoint([&] { return intake_locked(in->req); });
                    continue;
                }
                const auto& recs = *std::get<queued_attempts>(batch[i]).recs;
                results[i].attempts.reserve(recs.size());
                for (const auto& rec : recs) {
                    results[i].attempts.push_back(in_savepoint([&]() -> result<void> {
                        if (rec.attempt.outcome == attempt_outcome::delivered && !rec.run) {
                            return errc::invalid_argument;
                        }
                        return record_attempt_locked(rec);
                    }));
                }
            }
            if (!c.in_transaction()) {
                failed = errc::store_unavailable;
            } else if (auto r = c.exec("COMMIT"); !r) {
                failed = r.error();
                rollback_if_open(c);
            }
        }
        for (const auto& w : batch) {
            if (const auto* a = std::get_if<queued_attempts>(&w)) {
                for (const auto& rec : *a->recs) {
                    forget_subscription(rec.subscription_id);
                }
            }
        }
        if (failed) {
            // Nothing of this batch is durable: no request may be told it was accepted.
            for (std::size_t i = 0; i < batch.size(); ++i) {
                if (std::holds_alternative<queued_intake>(batch[i])) {
                    results[i].intake = failed;
                } else {
                    const auto n = std::get<queued_attempts>(batch[i]).recs->size();
                    results[i].attempts.assign(n, failed);
                }
            }
            return;
        }
        commits_.fetch_add(1);
        if (std::any_of(batch.begin(), batch.end(), [](const queued_write& w) {
                return std::holds_alternative<queued_intake>(w);
            })) {
            intake_batches_.fetch_add(1);
        }
    }

    // ---- checkpoints, off the writer's commit ----
    // The writer's WAL hook replaces SQLite's autocheckpoint (which would copy pages back into the
    // database inside a commit, on the hot path): it only records the WAL's size. The checkpointer
    // thread, on its own connection, copies pages back PASSIVE-ly once the WAL passes
    // checkpoint_pages (without blocking the writer), then RESTARTs the WAL holding the write mutex
    // (the writer waits while what the passive pass left is copied) so the WAL does not grow under
    // sustained load; after a second without commits it TRUNCATEs the WAL file to zero bytes.
    static int on_wal_commit(void* self, sqlite3*, const char*, int pages) {
        static_cast<sqlite_store*>(self)->wal_committed(pages);
        return SQLITE_OK;
    }

    void wal_committed(int pages) {
        bool wake = false;
        {
            std::lock_guard lock(ckpt_mu_);
            wal_pages_ = pages;
            wal_file_used_ = true;
            last_commit_ = std::chrono::steady_clock::now();
            wake = pages >= checkpoint_pages_;
        }
        if (wake) {
            ckpt_cv_.notify_one();
        }
    }

    void checkpointer_loop() {
        using namespace std::chrono_literals;
        std::unique_lock lock(ckpt_mu_);
        for (;;) {
            ckpt_cv_.wait_for(lock, 1s,
                              [&] { return ckpt_stopping_ || wal_pages_ >= checkpoint_pages_; });
            if (ckpt_stopping_) {
                return;
            }
            const bool large = wal_pages_ >= checkpoint_pages_;
            const bool idle = wal_file_used_ &&
                              std::chrono::steady_clock::now() - last_commit_ >= 1s;
            if (!large && !idle) {
                continue;
            }
            lock.unlock();
            sqlite3* db = checkpointer_->handle();
            int rc = SQLITE_OK;
            if (large) {
                rc = sqlite3_wal_checkpoint_v2(db, "main", SQLITE_CHECKPOINT_PASSIVE, nullptr,
                                               nullptr);
            }
            if (rc == SQLITE_OK) {
                // Holding the store's write mutex, the RESTART (or TRUNCATE) never waits on the
                // writer's busy handler (which a busy writer would starve); it only finishes what
                // the passive pass left, so the writer waits briefly.
                std::lock_guard write_lock(write_mu_);
                rc = sqlite3_wal_checkpoint_v2(
                    db, "main", large ? SQLITE_CHECKPOINT_RESTART : SQLITE_CHECKPOINT_TRUNCATE,
                    nullptr, nullptr);
            }
            lock.lock();
            if (rc == SQLITE_OK) {
                checkpoints_.fetch_add(1);
                wal_pages_ = 0;
                wal_file_used_ = large; // a restarted WAL keeps its file size until truncated
            } else {
                // Busy or an I/O error (a full disk): try again at the next commit or idle tick.
                ckpt_cv_.wait_for(lock, 100ms, [&] { return ckpt_stopping_; });
            }
        }
    }

    std::unique_ptr<connection> writer_;
    std::mutex write_mu_;
    std::unique_ptr<connection> reader_;
    std::mutex read_mu_;
    std::unique_ptr<connection> checkpointer_;

    std::mutex subs_mu_;
    std::unordered_map<std::string, subscription> subs_cache_;
    std::uint64_t subs_generation_ = 0;

    std::mutex queue_mu_;
    std::condition_variable queue_cv_;
    std::deque<queued_write> queue_;
    std::size_t queued_rows_ = 0;
    bool stopping_ = false;
    const int max_batch_;

    std::atomic<bool> outbound_possible_{true}; // an outbound webhook exists (or may)
    std::atomic<std::uint64_t> commits_{0};
    std::atomic<std::uint64_t> intake_batches_{0};
    std::atomic<std::uint64_t> intake_requests_{0};

    const int checkpoint_pages_;
    std::mutex ckpt_mu_;
    std::condition_variable ckpt_cv_;
    int wal_pages_ = 0;
    bool wal_file_used_ = false; // the -wal file has bytes a TRUNCATE would free
    std::chrono::steady_clock::time_point last_commit_ = std::chrono::steady_clock::now();
    bool ckpt_stopping_ = false;
    std::atomic<std::uint64_t> checkpoints_{0};

    std::thread thread_;      // last: started once everything above exists
    std::thread ckpt_thread_;
};

bool is_memory_database(const std::string& path) {
    return path == ":memory:" || path.rfind("file::memory:", 0) == 0 ||
           (path.rfind("file:", 0) == 0 && path.find("mode=memory") != std::string::npos);
}

} // namespace

namespace {

// "" when PRAGMA quick_check says ok; else its first finding (or why it could not run).
std::string quick_check(sqlite::connection& c) {
    auto st = c.prepare("PRAGMA quick_check(1)");
    auto row = st.step();
    if (!row) {
        const std::string err = c.last_error();
        return err.empty() ? "cannot be read" : err;
    }
    if (!*row) {
        return "no answer";
    }
    std::string first = st.text(0);
    return first == "ok" ? "" : first.substr(0, 200);
}

} // namespace

result<std::unique_ptr<store>> open_sqlite_store(const sqlite_options& opts, error_info& why) {
    if (opts.path.empty() || is_memory_database(opts.path)) {
        why = {errc::invalid_argument, "an in-memory SQLite database is not durable; give a file"};
        return errc::invalid_argument;
    }
    struct stat st{};
    if (!opts.init && ::stat(opts.path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0) {
        why = {errc::invalid_argument,
               opts.path + " is empty (0 bytes): the database that was here is gone, or its "
                           "creation never finished. Restore it from a backup; to start a new, "
                           "empty store in it, run serve once with --init"};
        return errc::invalid_argument;
    }
    std::string reason;
    auto writer = sqlite::connection::open(opts.path, true, opts.busy_timeout_ms, reason);
    if (!writer) {
        why = {to_errc(writer.error()), reason};
        return writer.error();
    }
    if (opts.check_integrity) {
        if (auto damage = quick_check(**writer); !damage.empty()) {
            why = {errc::store_unavailable,
                   opts.path + " is damaged (quick_check: " + damage +
                       "). It is not served: restore it from a backup (or salvage rows with "
                       "`sqlite3 " + opts.path + " .recover`)"};
            return errc::store_unavailable;
        }
    }
    if (auto r = sqlite::migrate(**writer, reason); !r) {
        why = {to_errc(r.error()), reason};
        return r.error();
    }
    if (opts.max_page_count > 0) {
        // PRAGMA takes no parameters; the value is a number we format ourselves.
        std::string pragma = "PRAGMA max_page_count=" + std::to_string(opts.max_page_count);
        if (sqlite3_exec((*writer)->handle(), pragma.c_str(), nullptr, nullptr, nullptr) !=
            SQLITE_OK) {
            why = {errc::store_unavailable, "cannot set max_page_count"};
            return errc::store_unavailable;
        }
    }
    auto reader = sqlite::connection::open(opts.path, false, opts.busy_timeout_ms, reason);
    if (!reader) {
        why = {to_errc(reader.error()), reason};
        return reader.error();
    }
    if (auto r = (*reader)->exec("PRAGMA query_only=1"); !r) {
        why = {to_errc(r.error()), "cannot configure the read connection"};
        return r.error();
    }
    auto checkpointer = sqlite::connection::open(opts.path, false, opts.busy_timeout_ms, reason);
    if (!checkpointer) {
        why = {to_errc(checkpointer.error()), reason};
        return checkpointer.error();
    }
    return std::unique_ptr<store>(std::make_unique<sqlite_store>(
        std::move(*writer), std::move(*reader), std::move(*checkpointer),
        opts.group_commit_max_batch, opts.checkpoint_pages));
}

result<std::unique_ptr<store>> open_sqlite_store(const sqlite_options& opts) {
    error_info ignored;
    return open_sqlite_store(opts, ignored);
}

} // namespace wopbridge
