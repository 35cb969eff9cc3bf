// The PostgreSQL store backend: several bridge nodes share one database. Per node: one intake
// writer connection (group commit) and a small pool for everything else. Across nodes, correctness
// rests on the database alone: the dedup primary key, row locks (claims use FOR UPDATE SKIP
// LOCKED), per-run / per-subscription event counters, and lease tokens. Nothing is cached.
#include "store/postgres/pg_connection.hpp"
#include "store/postgres/pg_migrations.hpp"
#include "store/postgres/pg_outbound.hpp"
#include "store/postgres/pg_replay_jobs.hpp"
#include "store/store.hpp"
#include "store/store_codec.hpp"
#include "store/store_try.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <iterator>
#include <limits>
#include <map>
#include <chrono>
#include <mutex>
#include <numeric>
#include <random>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <utility>


#define WB_SUB_COLS                                                                                \
    "id, tenant, source, state, workflow_id, dedup_enabled, retry_max_attempts, retry_backoff, "   \
    "retry_base_delay_ms, retry_max_delay_ms, retry_jitter, breaker_failure_threshold, "           \
    "breaker_probe_interval_ms, verification, webhook_id, secret_fingerprint, sealed_secret, "     \
    "schedule_cron, schedule_time_zone, connector, connector_settings_json, origin, "              \
    "consecutive_failures, next_probe_at, created_at, updated_at, when_not_active, "               \
    "max_concurrency"
#define WB_SUB_PARAMS                                                                              \
    "$1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, "  \
    "$21, $22, $23, $24, $25, $26, $27, $28"
// How many more claims subscription `s` has room for: $3 (the claim's limit) when unbounded, else
// its maxConcurrency minus its unexpired leases ($1 = now).
#define WB_CLAIM_ROOM                                                                              \
    "(CASE WHEN s.max_concurrency > 0 THEN GREATEST(0, s.max_concurrency - (SELECT COUNT(*) "     \
    "FROM deliveries f WHERE f.subscription_id = s.id AND f.status = 'in_flight' "                 \
    "AND f.lease_until > $1)) ELSE $3 END)"
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
#define WB_EVENT_COLS "event_id, type, payload_json, timestamp, sequence, causation_id"

namespace wopbridge {
namespace {

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

int clamp_limit(int limit) {
    return std::clamp(limit, 1, max_page_limit);
}

template <class Enum> result<Enum> parsed(std::optional<Enum> value) {
    if (!value) {
        return errc::internal;
    }
    return *value;
}

result<subscription> read_subscription(const rows& r, int i) {
    subscription s;
    s.id = r.text(i, 0);
    s.tenant = r.text(i, 1);
    auto source = parsed(codec::source_from(r.text(i, 2)));
    auto state = parsed(codec::state_from(r.text(i, 3)));
    auto backoff = parsed(codec::backoff_from(r.text(i, 7)));
    auto verification = parsed(codec::verification_from(r.text(i, 13)));
    auto origin = parsed(codec::origin_from(r.text(i, 21)));
    if (!source || !state || !backoff || !verification || !origin) {
        return errc::internal;
    }
    s.source = *source;
    s.state = *state;
    s.workflow_id = r.text(i, 4);
    s.dedup_enabled = r.int64(i, 5) != 0;
    s.retry.max_attempts = r.integer(i, 6);
    s.retry.backoff = *backoff;
    s.retry.base_delay_ms = r.int64(i, 8);
    s.retry.max_delay_ms = r.int64(i, 9);
    s.retry.jitter = r.int64(i, 10) != 0;
    s.breaker.failure_threshold = r.integer(i, 11);
    s.breaker.probe_interval_ms = r.int64(i, 12);
    s.verification = *verification;
    s.webhook_id = r.text(i, 14);
    s.secret_fingerprint = r.text(i, 15);
    s.sealed_secret = r.text(i, 16);
    if (!r.is_null(i, 17)) {
        s.schedule = schedule_spec{r.text(i, 17), r.text(i, 18)};
    }
    s.connector = r.text(i, 19);
    s.connector_settings_json = r.text(i, 20);
    s.origin = *origin;
    s.consecutive_failures = r.integer(i, 22);
    s.next_probe_at = r.int64(i, 23);
    s.created_at = r.int64(i, 24);
    s.updated_at = r.int64(i, 25);
    s.hold_when_not_active = r.text(i, 26) == "hold";
    s.max_concurrency = r.integer(i, 27);
    return s;
}

std::vector<param> subscription_params(const subscription& s) {
    return {p(s.id),
            p(s.tenant),
            p(codec::name_of(s.source)),
            p(codec::name_of(s.state)),
            p(s.workflow_id),
            p(s.dedup_enabled),
            p(s.retry.max_attempts),
            p(codec::name_of(s.retry.backoff)),
            p(s.retry.base_delay_ms),
            p(s.retry.max_delay_ms),
            p(s.retry.jitter),
            p(s.breaker.failure_threshold),
            p(s.breaker.probe_interval_ms),
            p(codec::name_of(s.verification)),
            p(s.webhook_id),
            p(s.secret_fingerprint),
            p(s.sealed_secret),
            s.schedule ? p(s.schedule->cron) : param{},
            s.schedule ? p(s.schedule->time_zone) : param{},
            p(s.connector),
            p(s.connector_settings_json),
            p(codec::name_of(s.origin)),
            p(s.consecutive_failures),
            p(s.next_probe_at),
            p(s.created_at),
            p(s.updated_at),
            p(s.hold_when_not_active ? "hold" : "refuse"),
            p(s.max_concurrency)};
}

// Reads WB_DLV_COLS; the sort key (seq) is column 11.
result<delivery> read_delivery(const rows& r, int i) {
    delivery d;
    d.id = r.text(i, 0);
    d.subscription_id = r.text(i, 1);
    d.tenant = r.text(i, 2);
    d.dedup_key = r.text(i, 3);
    d.run_id = r.text(i, 4);
    auto status = parsed(codec::delivery_status_from(r.text(i, 5)));
    if (!status) {
        return status.error();
    }
    d.status = *status;
    d.attempts = r.integer(i, 6);
    d.due_at = r.int64(i, 7);
    d.received_at = r.int64(i, 8);
    d.updated_at = r.int64(i, 9);
    d.last_error = r.text(i, 10);
    return d;
}

result<run_record> read_run(const rows& r, int i) {
    run_record out;
    out.id = r.text(i, 0);
    out.tenant = r.text(i, 1);
    out.workflow_id = r.text(i, 2);
    out.subscription_id = r.text(i, 3);
    out.delivery_id = r.text(i, 4);
    auto status = parsed(codec::run_status_from(r.text(i, 5)));
    if (!status) {
        return status.error();
    }
    out.status = *status;
    out.upstream_run_id = r.text(i, 6);
    out.created_at = r.int64(i, 7);
    out.updated_at = r.int64(i, 8);
    return out;
}

std::vector<run_event> read_events(const rows& r, const std::string& run_id) {
    std::vector<run_event> out;
    out.reserve(static_cast<std::size_t>(r.size()));
    for (int i = 0; i < r.size(); ++i) {
        run_event e;
        e.event_id = r.text(i, 0);
        e.run_id = run_id;
        e.type = r.text(i, 1);
        e.payload_json = r.text(i, 2);
        e.timestamp = r.int64(i, 3);
        e.sequence = r.int64(i, 4);
        e.causation_id = r.is_null(i, 5) ? std::string{} : r.text(i, 5);
        out.push_back(std::move(e));
    }
    return out;
}

result<dead_letter> read_dead_letter(const rows& r, int i) {
    dead_letter d;
    d.subscription_id = r.text(i, 0);
    d.attempt_event_id = r.text(i, 1);
    d.attempt.subscription_id = d.subscription_id;
    d.attempt.dedup_key = r.text(i, 2);
    d.attempt.attempt = r.integer(i, 3);
    d.attempt.outcome = attempt_outcome::dead_lettered;
    auto reason = parsed(codec::dead_letter_reason_from(r.text(i, 4)));
    if (!reason) {
        return reason.error();
    }
    d.reason = *reason;
    if (!r.is_null(i, 5)) {
        auto source = parsed(codec::source_from(r.text(i, 5)));
        auto from = parsed(codec::state_from(r.text(i, 6)));
        auto to = parsed(codec::state_from(r.text(i, 7)));
        auto why = parsed(codec::reason_from(r.text(i, 8)));
        if (!source || !from || !to || !why) {
            return errc::internal;
        }
        d.caused_state_change = state_change{d.subscription_id, *source, *from, *to, *why};
    }
    d.dead_lettered_at = r.int64(i, 9);
    d.expires_at = r.int64(i, 10);
    d.delivery_id = r.text(i, 11);
    return d;
}

result<bool> subscription_exists(connection& c, const std::string& id) {
    auto r = c.exec("SELECT 1 FROM subscriptions WHERE id = $1", {p(id)});
    if (!r) {
        return result<bool>(boost::system::in_place_error, r.error());
    }
    return !r->empty();
}

// Compare-and-set of the state plus its event on the subscription log, in one statement: the
// counter bump locks the subscription row, so the event sequence is gap-free across nodes.
result<void> apply_state_change(connection& c, const state_change& change,
                                const std::string& event_id, millis at,
                                const std::string& causation_id) {
    auto r = c.exec("WITH u AS (UPDATE subscriptions SET state = $1, updated_at = $2, "
                    "next_event_seq = next_event_seq + 1 WHERE id = $3 AND state = $4 "
                    "RETURNING next_event_seq - 1 AS seq) "
                    "INSERT INTO subscription_events (subscription_id, sequence, event_id, type, "
                    "payload_json, timestamp, causation_id) "
                    "SELECT $3, seq, $5, $6, $7, $2, $8 FROM u RETURNING sequence",
                    {p(codec::name_of(change.to)), p(at), p(change.subscription_id),
                     p(codec::name_of(change.from)), p(event_id), p(codec::event_state_changed),
                     p(codec::state_change_payload_json(change)), p_or_null(causation_id)});
    if (!r) {
        return r.error();
    }
    if (r->empty()) {
        auto exists = subscription_exists(c, change.subscription_id);
        if (!exists) {
            return exists.error();
        }
        return *exists ? errc::conflict : errc::not_found;
    }
    return {};
}

std::string make_node_id() {
    std::random_device rd;
    char buf[24];
    std::snprintf(buf, sizeof buf, "node_%08x%08x", rd(), rd());
    return buf;
}

class postgres_store final : public store {
  public:
    postgres_store(std::unique_ptr<connection> writer,
                   std::vector<std::unique_ptr<connection>> pool,
                   std::unique_ptr<connection> listener, int max_batch)
        : writer_(std::move(writer)), listener_(std::move(listener)),
          max_batch_(std::max(1, max_batch)) {
        for (auto& c : pool) {
            slots_.push_back(slot{std::move(c), 0});
        }
        for (std::size_t i = 0; i < slots_.size(); ++i) {
            free_.push_back(i);
        }
        thread_ = std::thread([this] { writer_loop(); });
        listener_thread_ = std::thread([this] { listener_loop(); });
    }

    ~postgres_store() override {
        {
            std::lock_guard lock(listener_mu_);
            listener_stopping_ = true;
        }
        listener_cv_.notify_all();
        listener_thread_.join(); // at most one notification wait (250 ms) away
        {
            std::lock_guard lock(queue_mu_);
            stopping_ = true;
        }
        queue_cv_.notify_all();
        thread_.join(); // the loop drains the queue first: every callback gets its answer
    }

    // ---- subscriptions ----

    result<void> insert_subscription(const subscription& s) override {
        const subscription_forget forget{*this, s.id};
        return write([&](connection& c) -> result<void> {
            return c.run("INSERT INTO subscriptions (" WB_SUB_COLS ") VALUES (" WB_SUB_PARAMS ")",
                         subscription_params(s));
        });
    }

    result<void> upsert_config_subscription(const subscription& s) override {
        const subscription_forget forget{*this, s.id};
        return write([&](connection& c) -> result<void> {
            return c.run("INSERT INTO subscriptions (" WB_SUB_COLS ") VALUES (" WB_SUB_PARAMS ") "
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
                         "max_concurrency = excluded.max_concurrency",
                         subscription_params(s));
        });
    }

    // Served from memory while the row is unchanged: every change of a subscriptions row, on any
    // node, is announced at its commit (migration 5's trigger, channel wopbridge_subscriptions)
    // and the listener thread forgets it. While the listener is not connected nothing is cached;
    // an entry is re-read after cache_ttl in any case. So a pause made through another node is
    // seen here within the notification's delivery (milliseconds), not just at the next read.
    result<subscription> get_subscription(const std::string& id) override {
        std::uint64_t generation = 0;
        const auto now = std::chrono::steady_clock::now();
        {
            std::lock_guard lock(subs_mu_);
            if (subs_listening_) {
                if (auto it = subs_cache_.find(id);
                    it != subs_cache_.end() && now - it->second.read_at < cache_ttl) {
                    return it->second.value;
                }
            }
            generation = subs_generation_;
        }
        auto found = read_subscription_row(id);
        if (found) {
            std::lock_guard lock(subs_mu_);
            if (subs_listening_ && subs_generation_ == generation) {
                if (subs_cache_.size() >= max_cached_subscriptions) {
                    subs_cache_.clear();
                }
                subs_cache_[id] = cached_subscription{*found, now};
            }
        }
        return found;
    }

    result<subscription> read_subscription_row(const std::string& id) {
        return read([&](connection& c) -> result<subscription> {
            auto r = c.exec("SELECT " WB_SUB_COLS " FROM subscriptions WHERE id = $1", {p(id)});
            if (!r) {
                return r.error();
            }
            if (r->empty()) {
                return errc::not_found;
            }
            return read_subscription(*r, 0);
        });
    }

    result<std::vector<subscription>> list_subscriptions(const std::string& tenant) override {
        return read([&](connection& c) -> result<std::vector<subscription>> {
            auto r =
                c.exec("SELECT " WB_SUB_COLS " FROM subscriptions WHERE tenant = $1 ORDER BY id",
                       {p(tenant)});
            if (!r) {
                return r.error();
            }
            return collect_subscriptions(*r);
        });
    }

    result<std::vector<subscription>> list_all_subscriptions() override {
        return read([&](connection& c) -> result<std::vector<subscription>> {
            auto r = c.exec("SELECT " WB_SUB_COLS " FROM subscriptions ORDER BY id", {});
            if (!r) {
                return r.error();
            }
            return collect_subscriptions(*r);
        });
    }

    result<void> delete_subscription(const std::string& id) override {
        const subscription_forget forget{*this, id};
        return write([&](connection& c) -> result<void> {
            auto r = c.exec("DELETE FROM subscriptions WHERE id = $1", {p(id)});
            if (!r) {
                return r.error();
            }
            if (r->affected() == 0) {
                return errc::not_found;
            }
            return {};
        });
    }

    // ---- operator views: runs and replays ----

    result<std::vector<run_record>> list_runs(const run_query& q) override {
        const std::int64_t before_t =
            q.before ? q.before->created_at : std::numeric_limits<std::int64_t>::max();
        return read([&](connection& c) -> result<std::vector<run_record>> {
            // The join reads the delivery's dedup key: a replay's is "replay:<attemptEventId>".
            auto r = c.exec(
                "SELECT r.id, r.tenant, r.workflow_id, r.subscription_id, r.delivery_id, r.status, "
                "r.upstream_run_id, r.created_at, r.updated_at, COALESCE(d.dedup_key, '') "
                "FROM runs r LEFT JOIN deliveries d ON d.id = r.delivery_id "
                "WHERE r.tenant = $1 AND ($2::text = '' OR r.subscription_id = $2::text) "
                "AND ($3::text = '' OR r.workflow_id = $3::text) "
                "AND ($4::text = '' OR r.status = $4::text) "
                "AND r.created_at >= $5::bigint AND r.created_at <= $6::bigint "
                "AND (r.created_at < $7::bigint OR (r.created_at = $7::bigint AND r.id < $8::text)) "
                "ORDER BY r.created_at DESC, r.id DESC LIMIT $9::bigint",
                {p(q.tenant), p(q.subscription_id), p(q.workflow_id),
                 p(q.status ? codec::name_of(*q.status) : std::string_view()),
                 p(static_cast<std::int64_t>(q.created_from)),
                 p(static_cast<std::int64_t>(q.created_to)), p(before_t),
                 p(q.before ? std::string_view(q.before->id) : std::string_view()),
                 p(std::max(1, q.limit))});
            if (!r) {
                return r.error();
            }
            std::vector<run_record> out;
            for (int i = 0; i < r->size(); ++i) {
                auto run = read_run(*r, i);
                if (!run) {
                    return run.error();
                }
                run->replay_of_attempt_event_id = codec::replay_of_dedup_key(r->text(i, 9));
                out.push_back(std::move(*run));
            }
            return out;
        });
    }

    result<std::map<std::string, delivery>>
    deliveries_by_dedup_key(const std::string& subscription_id,
                            const std::vector<std::string>& keys) override {
        return read([&](connection& c) -> result<std::map<std::string, delivery>> {
            std::map<std::string, delivery> out;
            if (keys.empty()) {
                return out;
            }
            // One round trip for the page: the keys as a text array.
            std::string array = "{";
            for (std::size_t i = 0; i < keys.size(); ++i) {
                array += i ? ",\"" : "\"";
                for (char ch : keys[i]) {
                    if (ch == '"' || ch == '\\') {
                        array += '\\';
                    }
                    array += ch;
                }
                array += '"';
            }
            array += '}';
            auto r = c.exec("SELECT " WB_DLV_COLS " FROM dedup x "
                            "JOIN deliveries d ON d.id = x.delivery_id "
                            "WHERE x.subscription_id = $1 AND x.dedup_key = ANY($2::text[])",
                            {p(subscription_id), p(array)});
            if (!r) {
                return r.error();
            }
            for (int i = 0; i < r->size(); ++i) {
                auto d = read_delivery(*r, i);
                if (!d) {
                    return d.error();
                }
                auto key = d->dedup_key;
                out.emplace(std::move(key), std::move(*d));
            }
            return out;
        });
    }

    result<bool> replace_connector_settings(const std::string& id, const std::string& expected,
                                            const std::string& replacement) override {
        const subscription_forget forget{*this, id};
        bool replaced = false;
        auto r = write([&](connection& c) -> result<void> {
            auto q = c.exec("UPDATE subscriptions SET connector_settings_json = $3 "
                            "WHERE id = $1 AND connector_settings_json = $2",
                            {p(id), p(expected), p(replacement)});
            if (!q) {
                return q.error();
            }
            replaced = q->affected() == 1;
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
        return write([&](connection& c) -> result<void> {
            return apply_state_change(c, change, event_id, at, {});
        });
    }

    // ---- intake ----

    void intake(intake_request req, intake_callback done) override {
        {
            std::unique_lock lock(queue_mu_);
            if (!stopping_) {
                queue_.push_back(queued_intake{std::move(req), std::move(done)});
                lock.unlock();
                queue_cv_.notify_one();
                return;
            }
        }
        if (done) {
            done(errc::shutting_down);
        }
    }

    result<void> record_verification_refusal(const verification_refusal& v) override {
        delivery_attempt a;
        a.subscription_id = v.subscription_id;
        a.dedup_key = v.dedup_key;
        a.attempt = 1;
        a.outcome = attempt_outcome::dead_lettered;
        return write([&](connection& c) -> result<void> {
            auto r = c.exec(
                "WITH s AS (UPDATE subscriptions SET next_event_seq = next_event_seq + 1 "
                "WHERE id = $1 RETURNING next_event_seq - 1 AS seq), "
                "e AS (INSERT INTO subscription_events (subscription_id, sequence, event_id, "
                "type, payload_json, timestamp) SELECT $1, seq, $2, $3, $4, $5 FROM s) "
                "INSERT INTO dead_letters (subscription_id, attempt_event_id, dedup_key, "
                "attempt, reason, dead_lettered_at, expires_at, delivery_id) "
                "SELECT $1, $2, $6, 1, $7, $5, $8, '' FROM s RETURNING 1",
                {p(v.subscription_id), p(v.attempt_event_id), p(codec::event_delivery_attempted),
                 p(codec::attempt_payload_json(a)), p(v.at), p(v.dedup_key),
                 p(codec::name_of(dead_letter_reason::verification_failed)), p(v.expires_at)});
            if (!r) {
                return r.error();
            }
            if (r->empty()) {
                return errc::not_found;
            }
            return {};
        });
    }

    // ---- deliveries ----

    // Common case, one statement (autocommit): claim due deliveries of active subscriptions and
    // learn whether a failed subscription is due for a probe. Only then a second transaction
    // takes the probes. Rows another node is claiming right now are skipped, not waited for; the
    // quals are re-checked on the latest row version, so a row claimed and committed meanwhile is
    // never taken twice.
    result<std::vector<delivery>> claim_due(millis now, int limit, millis lease_ms) override {
        if (limit <= 0) {
            return std::vector<delivery>{};
        }
        std::vector<claimed> got;
        bool probe_due = false;
        // Repeatable: if a dead connection hid a committed claim, those rows stay leased until
        // their lease runs out and are claimed again then (a delay, never a double claim).
        auto first = read([&](connection& c) -> result<void> {
            got.clear();
            probe_due = false;
            auto r =
                c.exec("WITH c AS (UPDATE deliveries d SET status = 'in_flight', lease_until = $2, "
                       "updated_at = $1, lease_token = nextval('lease_tokens'), claimed_by = $4 "
                       // Per active subscription, its first $3 due rows in index order (a
                       // seek, not a pass over the backlog), plus expired leases (few), taken
                       // in turns: every subscription's oldest due row, then every one's
                       // second, ... So a subscription with a large due backlog (an
                       // always-failing workflow retrying) cannot take every slot ahead of
                       // the others' fresh deliveries. (Window functions cannot share a
                       // query level with FOR UPDATE, hence the extra layer.)
                       // maxConcurrency: a subscription takes at most `room` rows, its bound
                       // minus its unexpired leases on every node (pending and expired-lease
                       // rows alike), ranked k within it.
                       "WHERE d.seq = ANY(ARRAY(SELECT c.seq FROM (SELECT u.*, row_number() "
                       "OVER (PARTITION BY u.sub ORDER BY u.due_at, u.seq) AS k FROM ("
                       "SELECT y.seq, y.due_at, y.turn, s.id AS sub, " WB_CLAIM_ROOM " AS room "
                       "FROM subscriptions s CROSS JOIN LATERAL ("
                       "SELECT l.seq, l.due_at, row_number() OVER (ORDER BY l.due_at, l.seq) "
                       "AS turn FROM (SELECT x.seq, x.due_at FROM deliveries x "
                       "WHERE x.subscription_id = s.id AND x.status = 'pending' "
                       "AND x.due_at <= $1 ORDER BY x.due_at, x.seq "
                       "LIMIT LEAST($3, " WB_CLAIM_ROOM ") "
                       "FOR UPDATE OF x SKIP LOCKED) l) y WHERE s.state = 'active' "
                       "UNION ALL SELECT z.seq, z.due_at, row_number() OVER ("
                       "PARTITION BY z.subscription_id ORDER BY z.due_at, z.seq), z.sub, z.room "
                       "FROM (SELECT x.seq, x.due_at, x.subscription_id, s.id AS sub, "
                       WB_CLAIM_ROOM " AS room "
                       "FROM deliveries x JOIN subscriptions s ON s.id = x.subscription_id "
                       "WHERE s.state = 'active' AND x.status = 'in_flight' "
                       "AND x.lease_until <= $1 FOR UPDATE OF x SKIP LOCKED) z) u) c "
                       "WHERE c.k <= c.room ORDER BY c.turn, c.due_at, c.seq LIMIT $3)) "
                       "RETURNING " WB_DLV_COLS ", d.lease_token) "
                       "SELECT c.*, f.probe FROM (SELECT EXISTS (SELECT 1 FROM subscriptions "
                       "WHERE state = 'failed' AND next_probe_at <= $1) AS probe) f "
                       "LEFT JOIN c ON true",
                       {p(now), p(now + lease_ms), p(limit), p(node_id_)});
            if (!r) {
                return r.error();
            }
            return read_claimed(*r, got, &probe_due);
        });
        if (!first) {
            return first.error();
        }
        commits_.fetch_add(1);
        remember_leases(got, now, now + lease_ms);
        if (probe_due && got.size() < static_cast<std::size_t>(limit)) {
            std::vector<claimed> probes;
            auto second = transaction([&](connection& c) -> result<void> {
                probes.clear();
                return claim_probes(c, now, limit - static_cast<int>(got.size()), lease_ms,
                                    node_id_, probes);
            });
            // The first claims are committed and ours whatever happens to the probes.
            if (second) {
                remember_leases(probes, now, now + lease_ms);
                std::move(probes.begin(), probes.end(), std::back_inserter(got));
            } else if (got.empty()) {
                return second.error();
            }
        }
        std::sort(got.begin(), got.end(), [](const claimed& a, const claimed& b) {
            return std::tie(a.d.due_at, a.seq) < std::tie(b.d.due_at, b.seq);
        });
        std::vector<delivery> out;
        out.reserve(got.size());
        for (auto& g : got) {
            out.push_back(std::move(g.d));
        }
        return out;
    }

    result<std::string> delivery_content(const std::string& delivery_id) override {
        return read([&](connection& c) -> result<std::string> {
            auto r = c.exec("SELECT content_json FROM delivery_contents WHERE delivery_id = $1",
                            {p(delivery_id)});
            if (!r) {
                return r.error();
            }
            if (r->empty()) {
                return errc::not_found;
            }
            return r->text(0, 0);
        });
    }

    // One round trip for a whole claimed batch.
    result<std::map<std::string, std::string>>
    delivery_contents(const std::vector<std::string>& delivery_ids) override {
        return read([&](connection& c) -> result<std::map<std::string, std::string>> {
            auto r = c.exec("SELECT delivery_id, content_json FROM delivery_contents "
                            "WHERE delivery_id = ANY($1::text[])",
                            {postgres::text_array(delivery_ids)});
            if (!r) {
                return r.error();
            }
            std::map<std::string, std::string> out;
            for (int i = 0; i < r->size(); ++i) {
                out.emplace(r->text(i, 0), r->text(i, 1));
            }
            return out;
        });
    }

    result<void> record_attempt(const attempt_record& rec) override {
        if (rec.attempt.outcome == attempt_outcome::delivered && !rec.run) {
            return errc::invalid_argument;
        }
        std::optional<std::int64_t> token;
        {
            std::lock_guard lock(lease_mu_);
            if (auto it = leases_.find(rec.delivery_id); it != leases_.end()) {
                token = it->second.token;
            }
        }
        const subscription_forget forget{*this, rec.subscription_id};
        auto out = transaction(
            [&](connection& c) -> result<void> { return record_attempt_locked(c, rec, token); });
        if (out || out.error() == errc::conflict || out.error() == errc::not_found) {
            std::lock_guard lock(lease_mu_);
            leases_.erase(rec.delivery_id);
        }
        return out;
    }

    // ---- the subscription cache's invalidation ----

    static constexpr std::size_t max_cached_subscriptions = 10000;
    static constexpr auto cache_ttl = std::chrono::seconds(5);

    void forget_subscription(const std::string& id) {
        std::lock_guard lock(subs_mu_);
        ++subs_generation_;
        subs_cache_.erase(id);
    }

    void set_listening(bool on) {
        std::lock_guard lock(subs_mu_);
        ++subs_generation_;
        subs_cache_.clear();
        subs_listening_ = on;
    }

    // Forgets the row when this node's write is done, whatever its outcome (read-your-writes on
    // this node; the notification tells the others).
    struct subscription_forget {
        postgres_store& self;
        const std::string& id;
        ~subscription_forget() { self.forget_subscription(id); }
    };

    void listener_loop() {
        bool listening = false;
        for (;;) {
            {
                std::unique_lock lock(listener_mu_);
                if (listener_stopping_) {
                    return;
                }
                if (!listening) {
                    // Reconnect (and LISTEN again) at most once a second after a failure.
                    listener_cv_.wait_for(lock, std::chrono::seconds(1),
                                          [&] { return listener_stopping_; });
                    if (listener_stopping_) {
                        return;
                    }
                }
            }
            if (!listening) {
                if (listener_->ensure(!listener_->healthy()) &&
                    listener_->run("LISTEN wopbridge_subscriptions")) {
                    listening = true;
                    set_listening(true); // empty: anything cached before may have been missed
                }
                continue;
            }
            auto ids = listener_->wait_for_notifications(250);
            if (!ids) {
                listening = false;
                set_listening(false); // notifications may be lost from here on: cache nothing
                continue;
            }
            for (const auto& id : *ids) {
                forget_subscription(id);
            }
        }
    }

    // One transaction for the whole batch (BEGIN and COMMIT once, two statements a record). A
    // record that fails (a settlement another node made first) undoes the batch; then each record
    // is tried on its own, so the others still commit.
    std::vector<result<void>> record_attempts(const std::vector<attempt_record>& recs) override {
        if (recs.size() <= 1) {
            return store::record_attempts(recs);
        }
        std::vector<std::optional<std::int64_t>> tokens(recs.size());
        {
            std::lock_guard lock(lease_mu_);
            for (std::size_t i = 0; i < recs.size(); ++i) {
                if (auto it = leases_.find(recs[i].delivery_id); it != leases_.end()) {
                    tokens[i] = it->second.token;
                }
            }
        }
        struct forget_all_of_batch {
            postgres_store& self;
            const std::vector<attempt_record>& recs;
            ~forget_all_of_batch() {
                for (const auto& rec : recs) {
                    self.forget_subscription(rec.subscription_id);
                }
            }
        } forget{*this, recs};
        auto all = transaction([&](connection& c) -> result<void> {
            for (std::size_t i = 0; i < recs.size(); ++i) {
                if (recs[i].attempt.outcome == attempt_outcome::delivered && !recs[i].run) {
                    return errc::invalid_argument;
                }
                WB_TRY(record_attempt_locked(c, recs[i], tokens[i]));
            }
            return {};
        });
        if (all) {
            std::lock_guard lock(lease_mu_);
            for (const auto& rec : recs) {
                leases_.erase(rec.delivery_id);
            }
            return std::vector<result<void>>(recs.size());
        }
        if (all.error() == errc::store_unavailable) {
            return std::vector<result<void>>(recs.size(), all.error());
        }
        return store::record_attempts(recs);
    }

    result<std::vector<subscription_delivery_stats>> delivery_stats(millis now) override {
        return read([&](connection& c) -> result<std::vector<subscription_delivery_stats>> {
            auto r = c.exec(
                "SELECT subscription_id, "
                "COUNT(*) FILTER (WHERE status = 'pending'), "
                "COUNT(*) FILTER (WHERE status = 'pending' AND due_at <= $1), "
                "COUNT(*) FILTER (WHERE status = 'in_flight'), "
                "COUNT(*) FILTER (WHERE status = 'held'), "
                "COUNT(*) FILTER (WHERE status = 'delivered'), "
                "COUNT(*) FILTER (WHERE status = 'dead_lettered'), 0::bigint "
                "FROM deliveries GROUP BY subscription_id "
                "UNION ALL SELECT subscription_id, 0, 0, 0, 0, 0, 0, COUNT(*) FROM dead_letters "
                "WHERE expires_at > $1 GROUP BY subscription_id ORDER BY 1",
                {p(static_cast<std::int64_t>(now))});
            if (!r) {
                return r.error();
            }
            std::vector<subscription_delivery_stats> out;
            for (int i = 0; i < r->size(); ++i) {
                auto id = r->text(i, 0);
                if (out.empty() || out.back().subscription_id != id) {
                    out.emplace_back().subscription_id = std::move(id);
                }
                auto& s = out.back();
                s.pending += r->int64(i, 1);
                s.due += r->int64(i, 2);
                s.in_flight += r->int64(i, 3);
                s.held += r->int64(i, 4);
                s.delivered += r->int64(i, 5);
                s.dead_lettered += r->int64(i, 6);
                s.dead_letters += r->int64(i, 7);
            }
            return out;
        });
    }

    result<std::optional<millis>> next_due_at() override {
        return read([&](connection& c) -> result<std::optional<millis>> {
            auto r = c.exec(
                // Per subscription (its first pending row, one index seek each), never a pass
                // over the whole pending backlog; in-flight rows are few (at most what was claimed).
                "SELECT MIN(t) FROM ("
                "SELECT CASE WHEN s.state = 'failed' THEN GREATEST(p.due_at, s.next_probe_at) "
                "ELSE p.due_at END AS t FROM subscriptions s "
                "CROSS JOIN LATERAL (SELECT d.due_at FROM deliveries d "
                "WHERE d.subscription_id = s.id AND d.status = 'pending' "
                "ORDER BY d.due_at LIMIT 1) p "
                "WHERE s.state = 'active' OR (s.state = 'failed' AND "
                "NOT EXISTS (SELECT 1 FROM deliveries x WHERE x.subscription_id = s.id "
                "AND x.status = 'in_flight')) "
                "UNION ALL SELECT d.lease_until AS t FROM deliveries d "
                "JOIN subscriptions s ON s.id = d.subscription_id "
                "WHERE d.status = 'in_flight' AND s.state IN ('active', 'failed')) AS due",
                {});
            if (!r) {
                return r.error();
            }
            if (r->empty() || r->is_null(0, 0)) {
                return std::optional<millis>{};
            }
            return std::optional<millis>{r->int64(0, 0)};
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
        return read([&](connection& c) -> result<page<delivery>> {
            auto exists = subscription_exists(c, subscription_id);
            if (!exists) {
                return exists.error();
            }
            if (!*exists) {
                return errc::not_found;
            }
            auto r = c.exec("SELECT " WB_DLV_COLS " FROM deliveries d "
                            "WHERE d.subscription_id = $1 AND d.seq < $2 "
                            "ORDER BY d.seq DESC LIMIT $3",
                            {p(subscription_id), p(before), p(limit + 1)});
            if (!r) {
                return r.error();
            }
            page<delivery> out;
            for (int i = 0; i < r->size(); ++i) {
                if (i == limit) {
                    out.next_cursor = codec::encode_cursor(deliveries_cursor, subscription_id,
                                                           r->int64(i - 1, 11));
                    break;
                }
                auto d = read_delivery(*r, i);
                if (!d) {
                    return d.error();
                }
                out.items.push_back(std::move(*d));
            }
            return out;
        });
    }

    result<delivery> get_delivery(const std::string& delivery_id) override {
        return read([&](connection& c) -> result<delivery> {
            auto r = c.exec("SELECT " WB_DLV_COLS " FROM deliveries d WHERE d.id = $1",
                            {p(delivery_id)});
            if (!r) {
                return r.error();
            }
            if (r->empty()) {
                return errc::not_found;
            }
            return read_delivery(*r, 0);
        });
    }

    result<int> release_held(const std::string& subscription_id, millis now) override {
        return write([&](connection& c) -> result<int> {
            // All become due at the same instant; claim order then falls back to arrival (seq).
            auto r = c.exec("WITH s AS (SELECT 1 FROM subscriptions WHERE id = $1), "
                            "u AS (UPDATE deliveries SET status = 'pending', due_at = $2, "
                            "updated_at = $2 WHERE subscription_id = $1 AND status = 'held' "
                            "RETURNING 1) "
                            "SELECT (SELECT COUNT(*) FROM s), (SELECT COUNT(*) FROM u)",
                            {p(subscription_id), p(now)});
            if (!r) {
                return r.error();
            }
            if (r->int64(0, 0) == 0) {
                return errc::not_found;
            }
            return static_cast<int>(r->int64(0, 1));
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
        return read([&](connection& c) -> result<page<dead_letter>> {
            auto exists = subscription_exists(c, subscription_id);
            if (!exists) {
                return exists.error();
            }
            if (!*exists) {
                return errc::not_found;
            }
            auto r = c.exec("SELECT " WB_DL_COLS " FROM dead_letters "
                            "WHERE subscription_id = $1 AND seq < $2 "
                            "AND expires_at > $3 ORDER BY seq DESC LIMIT $4",
                            {p(subscription_id), p(before), p(now), p(limit + 1)});
            if (!r) {
                return r.error();
            }
            page<dead_letter> out;
            for (int i = 0; i < r->size(); ++i) {
                if (i == limit) {
                    out.next_cursor = codec::encode_cursor(dead_letters_cursor, subscription_id,
                                                           r->int64(i - 1, 12));
                    break;
                }
                auto d = read_dead_letter(*r, i);
                if (!d) {
                    return d.error();
                }
                out.items.push_back(std::move(*d));
            }
            return out;
        });
    }

    // ---- runs ----

    result<run_record> get_run(const std::string& run_id) override {
        return read([&](connection& c) -> result<run_record> {
            auto r = c.exec("SELECT " WB_RUN_COLS " FROM runs WHERE id = $1", {p(run_id)});
            if (!r) {
                return r.error();
            }
            if (r->empty()) {
                return errc::not_found;
            }
            return read_run(*r, 0);
        });
    }

    result<std::vector<run_event>>
    run_events_after(const std::string& run_id, std::int64_t after_sequence, int limit) override {
        const int n = limit <= 0 ? max_page_limit : clamp_limit(limit);
        return read([&](connection& c) -> result<std::vector<run_event>> {
            auto found = c.exec("SELECT 1 FROM runs WHERE id = $1", {p(run_id)});
            if (!found) {
                return found.error();
            }
            if (found->empty()) {
                return errc::not_found;
            }
            auto r = c.exec("SELECT " WB_EVENT_COLS " FROM run_events WHERE run_id = $1 "
                            "AND sequence > $2 ORDER BY sequence LIMIT $3",
                            {p(run_id), p(after_sequence), p(n)});
            if (!r) {
                return r.error();
            }
            return read_events(*r, run_id);
        });
    }

    result<run_event> append_run_event(const std::string& run_id, const std::string& type,
                                       const std::string& payload_json,
                                       const std::string& causation_id, const std::string& event_id,
                                       millis at) override {
        return append(run_id, type, payload_json, causation_id, event_id, std::nullopt, at);
    }

    result<run_event> end_run(const std::string& run_id, const std::string& type,
                              const std::string& payload_json, const std::string& event_id,
                              run_status status, millis at) override {
        return append(run_id, type, payload_json, "", event_id, status, at);
    }

    // The counter bump locks the run row until commit: appends from every node serialize per run,
    // and a failed insert rolls the counter back with it (no gaps). The outbox rows of the event
    // commit with it (transactional outbox); a terminal status ($7, NULL keeps it) too.
    result<run_event> append(const std::string& run_id, const std::string& type,
                             const std::string& payload_json, const std::string& causation_id,
                             const std::string& event_id, std::optional<run_status> status,
                             millis at) {
        return write([&](connection& c) -> result<run_event> {
            static const std::string append_sql =
                "WITH r AS (UPDATE runs SET next_event_seq = next_event_seq + 1, "
                "status = COALESCE($7::text, status), "
                "updated_at = CASE WHEN $7::text IS NULL THEN updated_at ELSE $5::bigint END "
                "WHERE id = $1 RETURNING next_event_seq - 1 AS seq, tenant), "
                "ins AS (INSERT INTO run_events (run_id, sequence, event_id, type, "
                "payload_json, timestamp, causation_id) "
                "SELECT $1, seq, $2, $3, $4, $5, $6 FROM r RETURNING run_id, sequence, type), "
                "o AS (" +
                postgres::outbound::enqueue_cte("ins", "(SELECT tenant FROM r)", "$5") +
                ") SELECT sequence FROM ins";
            const std::string status_name = status ? std::string(codec::name_of(*status)) : "";
            auto r = c.exec(append_sql.c_str(),
                            {p(run_id), p(event_id), p(type), p(payload_json), p(at),
                             p_or_null(causation_id), p_or_null(status_name)});
            if (!r) {
                return r.error();
            }
            if (r->empty()) {
                return errc::not_found;
            }
            return run_event{event_id, run_id,         type,        payload_json,
                             at,       r->int64(0, 0), causation_id};
        });
    }

    result<void> set_run_status(const std::string& run_id, run_status status, millis at) override {
        return write([&](connection& c) -> result<void> {
            auto r = c.exec("UPDATE runs SET status = $2, updated_at = $3 WHERE id = $1",
                            {p(run_id), p(codec::name_of(status)), p(at)});
            if (!r) {
                return r.error();
            }
            if (r->affected() == 0) {
                return errc::not_found;
            }
            return {};
        });
    }

    result<std::vector<run_record>> list_runs_with_status(run_status status) override {
        return read([&](connection& c) -> result<std::vector<run_record>> {
            auto r =
                c.exec("SELECT " WB_RUN_COLS " FROM runs WHERE status = $1 ORDER BY created_at, id",
                       {p(codec::name_of(status))});
            if (!r) {
                return r.error();
            }
            std::vector<run_record> out;
            for (int i = 0; i < r->size(); ++i) {
                auto run = read_run(*r, i);
                if (!run) {
                    return run.error();
                }
                out.push_back(std::move(*run));
            }
            return out;
        });
    }

    result<std::vector<run_event>>
    subscription_events(const std::string& subscription_id) override {
        return read([&](connection& c) -> result<std::vector<run_event>> {
            auto exists = subscription_exists(c, subscription_id);
            if (!exists) {
                return exists.error();
            }
            if (!*exists) {
                return errc::not_found;
            }
            auto r = c.exec("SELECT " WB_EVENT_COLS " FROM subscription_events "
                            "WHERE subscription_id = $1 ORDER BY sequence",
                            {p(subscription_id)});
            if (!r) {
                return r.error();
            }
            return read_events(*r, {});
        });
    }

    // ---- housekeeping ----

    result<int> purge_expired(millis now) override {
        return write([&](connection& c) -> result<int> {
            // A refused signature's run-less attempt event goes with its dead letter (every part
            // of the statement sees the dead letters as they were before it).
            auto r = c.exec("WITH a AS (DELETE FROM dedup WHERE expires_at < $1 RETURNING 1), "
                            "e AS (DELETE FROM subscription_events WHERE event_id IN (SELECT "
                            "attempt_event_id FROM dead_letters WHERE expires_at <= $1 AND "
                            "reason = 'verification_failed') RETURNING 1), "
                            "b AS (DELETE FROM dead_letters WHERE expires_at <= $1 RETURNING 1), "
                            "c AS (DELETE FROM replay_jobs WHERE state <> 'running' "
                            "AND expires_at > 0 AND expires_at <= $1 RETURNING 1) "
                            "SELECT (SELECT COUNT(*) FROM a) + (SELECT COUNT(*) FROM e) + "
                            "(SELECT COUNT(*) FROM b) + (SELECT COUNT(*) FROM c)",
                            {p(now)});
            if (!r) {
                return r.error();
            }
            return static_cast<int>(r->int64(0, 0));
        });
    }

    result<std::string> bind_host_key_check(const std::string& check,
                                            const std::string& wrapped_data_key) override {
        return write([&](connection& c) -> result<std::string> {
            // Two nodes binding at once: the primary key lets one insert win, its wrap is written
            // by the same statement, and both read the winner. (The loser's statement snapshot can
            // predate the winner's commit: it may read "", and its caller reads again.)
            auto r = c.exec("WITH ins AS (INSERT INTO store_meta (name, value) "
                            "VALUES ('host_key_check', $1) ON CONFLICT (name) DO NOTHING "
                            "RETURNING value), "
                            "wrap AS (INSERT INTO store_meta (name, value) "
                            "SELECT $2, $3 WHERE EXISTS (SELECT 1 FROM ins) "
                            "ON CONFLICT (name) DO NOTHING) "
                            "SELECT value FROM ins UNION ALL "
                            "SELECT value FROM store_meta WHERE name = 'host_key_check'",
                            {p(check), p(std::string(data_key_wrap_prefix) + check),
                             p(wrapped_data_key)});
            if (!r) {
                return r.error();
            }
            return r->empty() ? std::string() : r->text(0, 0);
        });
    }

    result<bool> has_keyed_rows() override {
        return read([&](connection& c) -> result<bool> {
            auto r = c.exec("SELECT EXISTS (SELECT 1 FROM subscriptions) OR "
                            "EXISTS (SELECT 1 FROM dedup) OR "
                            "EXISTS (SELECT 1 FROM outbound_webhooks)",
                            {});
            if (!r) {
                return result<bool>(boost::system::in_place_error, r.error());
            }
            return r->text(0, 0) == "t";
        });
    }

    result<std::map<std::string, std::string>> data_key_wraps() override {
        return read([&](connection& c) -> result<std::map<std::string, std::string>> {
            auto r = c.exec("SELECT name, value FROM store_meta WHERE starts_with(name, $1)",
                            {p(data_key_wrap_prefix)});
            if (!r) {
                return r.error();
            }
            std::map<std::string, std::string> out;
            for (int i = 0; i < r->size(); ++i) {
                out.emplace(r->text(i, 0).substr(data_key_wrap_prefix.size()), r->text(i, 1));
            }
            return out;
        });
    }

    result<void> add_data_key_wrap(const std::string& check, const std::string& wrapped) override {
        return write([&](connection& c) -> result<void> {
            auto r = c.exec("INSERT INTO store_meta (name, value) VALUES ($1, $2) "
                            "ON CONFLICT (name) DO NOTHING",
                            {p(std::string(data_key_wrap_prefix) + check), p(wrapped)});
            if (!r) {
                return r.error();
            }
            return {};
        });
    }

    result<int> retire_data_key_wraps(const std::string& keep_check) override {
        const std::string keep = std::string(data_key_wrap_prefix) + keep_check;
        return transaction([&](connection& c) -> result<int> {
            // The kept wrap is locked first: a concurrent retire of that very key waits.
            auto has = c.exec("SELECT 1 FROM store_meta WHERE name = $1 FOR UPDATE", {p(keep)});
            if (!has) {
                return has.error();
            }
            if (has->empty()) {
                return make_error_code(errc::not_found);
            }
            auto drop = c.exec("WITH d AS (DELETE FROM store_meta WHERE starts_with(name, $1) "
                               "AND name <> $2 RETURNING 1) SELECT COUNT(*) FROM d",
                               {p(data_key_wrap_prefix), p(keep)});
            if (!drop) {
                return drop.error();
            }
            auto bind = c.exec("INSERT INTO store_meta (name, value) VALUES ('host_key_check', $1) "
                               "ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value",
                               {p(keep_check)});
            if (!bind) {
                return bind.error();
            }
            return static_cast<int>(drop->int64(0, 0));
        });
    }

    // Times by the database's clock, so nodes whose clocks disagree agree on who is silent.
#define WB_DB_NOW_MS "(extract(epoch FROM clock_timestamp()) * 1000)::bigint"

    result<int> keep_node_alive(millis silent_ms) override {
        return write([&](connection& c) -> result<int> {
            // One statement: this node's beat, the nodes silent past `silent_ms` removed, and
            // what they had claimed made claimable now (its lease token changes at the next
            // claim, so a silent node that comes back cannot settle it).
            auto r = c.exec("WITH beat AS (INSERT INTO nodes (id, started_at, last_seen) "
                            "VALUES ($1, " WB_DB_NOW_MS ", " WB_DB_NOW_MS ") "
                            "ON CONFLICT (id) DO UPDATE SET last_seen = EXCLUDED.last_seen "
                            "RETURNING 1), "
                            "dead AS (DELETE FROM nodes WHERE id <> $1 AND last_seen < "
                            WB_DB_NOW_MS " - $2 RETURNING id), "
                            "freed AS (UPDATE deliveries d SET lease_until = 0 FROM dead "
                            "WHERE d.claimed_by = dead.id AND d.status = 'in_flight' RETURNING 1) "
                            "SELECT (SELECT COUNT(*) FROM freed), (SELECT COUNT(*) FROM beat)",
                            {p(node_id_), p(silent_ms)});
            if (!r) {
                return r.error();
            }
            return static_cast<int>(r->int64(0, 0));
        });
    }

    // Shared by several nodes: another node's claims are live (keep_node_alive frees the silent).
    result<int> release_all_claims() override { return make_error_code(errc::unsupported); }

    result<void> leave_cluster() override {
        return write([&](connection& c) -> result<void> {
            auto r = c.exec("WITH gone AS (DELETE FROM nodes WHERE id = $1 RETURNING 1) "
                            "UPDATE deliveries SET lease_until = 0 WHERE claimed_by = $1 "
                            "AND status = 'in_flight'",
                            {p(node_id_)});
            if (!r) {
                return r.error();
            }
            return {};
        });
    }
#undef WB_DB_NOW_MS

    result<void> probe_write() override {
        return write([&](connection& c) -> result<void> {
            auto r = c.exec("INSERT INTO store_meta (name, value) VALUES ('write_probe', $1) "
                            "ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value",
                            {p(std::string(64, 'p'))});
            if (!r) {
                return r.error();
            }
            return {};
        });
    }

    result<std::string> host_key_check() override {
        return read([&](connection& c) -> result<std::string> {
            auto r = c.exec("SELECT value FROM store_meta WHERE name = 'host_key_check'", {});
            if (!r) {
                return r.error();
            }
            return r->empty() ? std::string() : r->text(0, 0);
        });
    }

    result<void> ping() override {
        return read([&](connection& c) -> result<void> {
            // A standby or a database set read-only cannot take intake: not ready.
            auto r = c.exec("SELECT current_setting('transaction_read_only') = 'off' "
                            "AND NOT pg_is_in_recovery()",
                            {});
            if (!r) {
                return r.error();
            }
            if (r->text(0, 0) != "t") {
                return errc::store_unavailable;
            }
            return {};
        });
    }

    // ---- bulk replay jobs (pg_replay_jobs.cpp) ----

    result<void> create_replay_job(const replay_job_record& job,
                                   const std::vector<std::string>& ids) override {
        return write([&](connection& c) { return postgres::replay_jobs::create(c, job, ids); });
    }
    result<replay_job_record> get_replay_job(const std::string& id) override {
        return read([&](connection& c) { return postgres::replay_jobs::get(c, id); });
    }
    result<std::vector<replay_job_item>> unsettled_replay_job_items(const std::string& id) override {
        return read([&](connection& c) { return postgres::replay_jobs::unsettled_items(c, id); });
    }
    result<void> update_replay_job(const replay_job_update& u) override {
        return write([&](connection& c) { return postgres::replay_jobs::update(c, u); });
    }
    result<std::vector<replay_job_record>> claim_replay_jobs(const std::string& owner, millis now,
                                                             millis lease_ms) override {
        return write([&](connection& c) {
            return postgres::replay_jobs::claim(c, owner, now, lease_ms);
        });
    }
    result<int> release_replay_jobs(const std::string& owner) override {
        if (owner.empty()) {
            return make_error_code(errc::invalid_argument);
        }
        return write([&](connection& c) { return postgres::replay_jobs::release(c, owner); });
    }

    // ---- outbound webhooks (pg_outbound.cpp) ----

    result<void> insert_outbound_webhook(const outbound_webhook& w) override {
        return write([&](connection& c) { return postgres::outbound::insert_webhook(c, w); });
    }
    result<outbound_webhook> get_outbound_webhook(const std::string& id) override {
        return read([&](connection& c) { return postgres::outbound::get_webhook(c, id); });
    }
    result<std::vector<outbound_webhook>> list_outbound_webhooks(const std::string& t) override {
        return read([&](connection& c) { return postgres::outbound::list_webhooks(c, t); });
    }
    result<void> delete_outbound_webhook(const std::string& id) override {
        return write([&](connection& c) { return postgres::outbound::delete_webhook(c, id); });
    }
    result<int> enqueue_outbound(const std::string& run_id, std::int64_t sequence,
                                 millis at) override {
        return write(
            [&](connection& c) { return postgres::outbound::enqueue(c, run_id, sequence, at); });
    }
    result<std::vector<outbound_delivery>> claim_outbound_due(millis now, int limit,
                                                              int per_webhook_limit,
                                                              millis lease_ms) override {
        return transaction([&](connection& c) {
            return postgres::outbound::claim_due(c, now, limit, per_webhook_limit, lease_ms);
        });
    }
    result<void> record_outbound_attempt(const outbound_attempt& a) override {
        return transaction(
            [&](connection& c) { return postgres::outbound::record_attempt(c, a); });
    }
    result<int> count_outbound_failures(const std::string& id, millis since) override {
        return read(
            [&](connection& c) { return postgres::outbound::count_failures(c, id, since); });
    }
    result<std::optional<millis>> outbound_next_due_at() override {
        return read([&](connection& c) { return postgres::outbound::next_due_at(c); });
    }
    result<std::vector<outbound_delivery>> list_outbound_deliveries(
        const std::string& id) override {
        return read([&](connection& c) { return postgres::outbound::list_deliveries(c, id); });
    }
    result<page<outbound_dead_letter>> list_outbound_dead_letters(const std::string& id,
                                                                  const page_request& req,
                                                                  millis now) override {
        return read([&](connection& c) {
            return postgres::outbound::list_dead_letters(c, id, req, now);
        });
    }
    result<std::vector<outbound_state_change>> list_outbound_state_changes(
        const std::string& id) override {
        return read(
            [&](connection& c) { return postgres::outbound::list_state_changes(c, id); });
    }

    store_stats stats() const override {
        bool live = false;
        {
            std::lock_guard lock(subs_mu_);
            live = subs_listening_;
        }
        return {commits_.load(), intake_batches_.load(), intake_requests_.load(),
                round_trips_.load(), live};
    }

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
    auto with_connection(F&& body) -> decltype(body(std::declval<connection&>())) {
        std::size_t index = 0;
        {
            std::unique_lock lock(pool_mu_);
            pool_cv_.wait(lock, [&] { return !free_.empty(); });
            index = free_.back();
            free_.pop_back();
        }
        struct give_back {
            postgres_store* self;
            std::size_t index;
            ~give_back() {
                {
                    std::lock_guard lock(self->pool_mu_);
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
    static result<void> begin(connection& c) {
        auto r = c.run("BEGIN");
        if (!r && !c.healthy() && c.ensure(true)) {
            r = c.run("BEGIN");
        }
        return r;
    }

    result<std::vector<subscription>> collect_subscriptions(const rows& r) {
        std::vector<subscription> out;
        for (int i = 0; i < r.size(); ++i) {
            auto s = read_subscription(r, i);
            if (!s) {
                return s.error();
            }
            out.push_back(std::move(*s));
        }
        return out;
    }

    struct claimed {
        std::int64_t seq;
        std::int64_t token;
        delivery d;
    };

    // Rows of WB_DLV_COLS + lease_token [+ probe flag]; a row of NULLs carries only the flag.
    static result<void> read_claimed(const rows& r, std::vector<claimed>& out, bool* probe_due) {
        for (int i = 0; i < r.size(); ++i) {
            if (probe_due != nullptr && r.text(i, 13) == "t") {
                *probe_due = true;
            }
            if (r.is_null(i, 0)) {
                continue;
            }
            auto d = read_delivery(r, i);
            if (!d) {
                return d.error();
            }
            out.push_back({r.int64(i, 11), r.int64(i, 12), std::move(*d)});
        }
        return {};
    }

    // Claims this node never settles (its engine dropped them) would pile up: past a bound, entries
    // whose lease has run out are dropped. Such a delivery then settles under the backend-neutral
    // rule only (never twice), which is what a restarted node gets too.
    void remember_leases(const std::vector<claimed>& got, millis now, millis lease_until) {
        std::lock_guard lock(lease_mu_);
        if (leases_.size() > max_remembered_leases) {
            std::erase_if(leases_, [&](const auto& e) { return e.second.until < now; });
        }
        for (const auto& g : got) {
            leases_[g.d.id] = lease{g.token, lease_until};
        }
    }

    // Half-open probes, inside a transaction: locking the failed subscription rows first makes
    // "no probe in flight" a question only one node asks at a time per subscription; the next
    // statement (a fresh snapshot) then sees any probe the previous lock holder committed.
    static result<void> claim_probes(connection& c, millis now, int limit, millis lease_ms,
                                     const std::string& node, std::vector<claimed>& out) {
        auto failed = c.exec("SELECT id FROM subscriptions WHERE state = 'failed' "
                             "AND next_probe_at <= $1 ORDER BY id "
                             "FOR NO KEY UPDATE SKIP LOCKED",
                             {p(now)});
        if (!failed) {
            return failed.error();
        }
        if (failed->empty()) {
            return {};
        }
        std::vector<std::string> subs;
        for (int i = 0; i < failed->size(); ++i) {
            subs.push_back(failed->text(i, 0));
        }
        auto r = c.exec(
            // Per failed subscription: the earlier of its first due pending row and its first
            // expired lease, each one index seek (a failed subscription is where a backlog grows).
            "WITH pick AS (SELECT c.seq, c.due_at FROM unnest($2::text[]) AS f(id) "
            "CROSS JOIN LATERAL (SELECT u.seq, u.due_at FROM ("
            "(SELECT y.seq, y.due_at FROM deliveries y WHERE y.subscription_id = f.id "
            "AND y.status = 'pending' AND y.due_at <= $1 ORDER BY y.due_at, y.seq LIMIT 1) "
            "UNION ALL (SELECT y.seq, y.due_at FROM deliveries y WHERE y.subscription_id = f.id "
            "AND y.status = 'in_flight' AND y.lease_until <= $1 "
            "ORDER BY y.due_at, y.seq LIMIT 1)) u ORDER BY u.due_at, u.seq LIMIT 1) c "
            "WHERE NOT EXISTS (SELECT 1 FROM deliveries x WHERE x.subscription_id = f.id "
            "AND x.status = 'in_flight' AND x.lease_until > $1)), "
            "top AS (SELECT seq FROM pick ORDER BY due_at, seq LIMIT $4) "
            "UPDATE deliveries d SET status = 'in_flight', lease_until = $3, updated_at = $1, "
            "lease_token = nextval('lease_tokens'), claimed_by = $5 FROM top "
            "WHERE d.seq = top.seq AND d.status IN ('pending', 'in_flight') "
            "RETURNING " WB_DLV_COLS ", d.lease_token",
            {p(now), postgres::text_array(subs), p(now + lease_ms), p(limit), p(node)});
        if (!r) {
            return r.error();
        }
        return read_claimed(*r, out, nullptr);
    }

    result<void> record_attempt_locked(connection& c, const attempt_record& rec,
                                       std::optional<std::int64_t> token) {
        // The row lock orders this settlement against claims and settlements of other nodes.
        auto cur = c.exec("SELECT status, subscription_id, run_id, lease_token FROM deliveries "
                          "WHERE id = $1 FOR UPDATE",
                          {p(rec.delivery_id)});
        if (!cur) {
            return cur.error();
        }
        if (cur->empty()) {
            return errc::not_found;
        }
        auto status = codec::delivery_status_from(cur->text(0, 0));
        if (cur->text(0, 1) != rec.subscription_id) {
            return errc::invalid_argument;
        }
        // A settled delivery is never settled twice, and a claimer whose lease was taken over
        // (another claim minted a new token, or the row went back to pending) cannot settle it.
        if (!status || *status == delivery_status::delivered ||
            *status == delivery_status::dead_lettered) {
            return errc::conflict;
        }
        if (token && (*status != delivery_status::in_flight || cur->int64(0, 3) != *token)) {
            return errc::conflict;
        }
        const std::string reserved_run_id = cur->text(0, 2);

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

        if (attempt.outcome == attempt_outcome::delivered) {
            const run_record& run = *rec.run;
            std::vector<std::string> ids{rec.attempt_event_id, rec.run_started_event_id};
            std::vector<std::string> types{std::string(codec::event_delivery_attempted),
                                           std::string(codec::event_run_started)};
            std::vector<std::string> payloads{payload, rec.run_started_payload_json};
            std::vector<std::string> causes{std::string{}, rec.attempt_event_id};
            for (std::size_t i = 0; i < rec.extra_run_events.size(); ++i) {
                std::string id =
                    i < rec.extra_run_event_ids.size() ? rec.extra_run_event_ids[i] : std::string{};
                if (id.empty()) {
                    id = rec.run_started_event_id + "." + std::to_string(i + 1);
                }
                ids.push_back(std::move(id));
                types.push_back(rec.extra_run_events[i].first);
                payloads.push_back(rec.extra_run_events[i].second);
                causes.emplace_back();
            }
            // The run, its first events (sequences 0..n-1) and their outbox rows, the delivery,
            // the dedup pointer and the breaker bookkeeping: one statement, one round trip.
            static const std::string delivered_sql =
                "WITH r AS (INSERT INTO runs (" WB_RUN_COLS ", next_event_seq) VALUES "
                "($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id), "
                "e AS (INSERT INTO run_events (run_id, sequence, event_id, type, payload_json, "
                "timestamp, causation_id) SELECT $1, t.ord - 1, t.event_id, t.type, t.payload, "
                "$11, NULLIF(t.cause, '') FROM unnest($12::text[], $13::text[], $14::text[], "
                "$15::text[]) WITH ORDINALITY AS t(event_id, type, payload, cause, ord) "
                "RETURNING run_id, sequence, type), "
                "o AS (" +
                postgres::outbound::enqueue_cte("e", "$2", "$11") +
                "), "
                "u AS (UPDATE deliveries SET status = 'delivered', attempts = $16, "
                "lease_until = 0, updated_at = $11, last_error = '', run_id = $1 "
                "WHERE id = $17), "
                "dd AS (UPDATE dedup SET run_id = $1 WHERE subscription_id = $4 "
                "AND delivery_id = $17 AND run_id <> $1 AND $18), "
                "s AS (UPDATE subscriptions SET consecutive_failures = $19, next_probe_at = $20 "
                "WHERE id = $4 RETURNING 1) "
                "SELECT COUNT(*) FROM s";
            auto r = c.exec(
                delivered_sql.c_str(),
                {p(run.id),
                 p(run.tenant),
                 p(run.workflow_id),
                 p(rec.subscription_id),
                 p(run.delivery_id),
                 p(codec::name_of(run.status)),
                 p(run.upstream_run_id),
                 p(run.created_at),
                 p(run.updated_at),
                 p(static_cast<std::int64_t>(ids.size())),
                 p(rec.at),
                 postgres::text_array(ids),
                 postgres::text_array(types),
                 postgres::text_array(payloads),
                 postgres::text_array(causes),
                 p(attempt.attempt),
                 p(rec.delivery_id),
                 p(run.id != reserved_run_id ? "true" : "false"),
                 p(rec.consecutive_failures),
                 p(rec.next_probe_at)});
            if (!r) {
                return r.error();
            }
            if (r->int64(0, 0) == 0) {
                return errc::not_found;
            }
        } else {
            const bool dead = attempt.outcome == attempt_outcome::dead_lettered;
            const auto& change = rec.state_change_caused;
            // The attempt event (on the subscription log), the delivery, the breaker bookkeeping
            // and, when dead-lettered, the dead letter: one statement.
            auto r = c.exec(
                "WITH s AS (UPDATE subscriptions SET next_event_seq = next_event_seq + 1, "
                "consecutive_failures = $2, next_probe_at = $3 WHERE id = $1 "
                "RETURNING next_event_seq - 1 AS seq), "
                "e AS (INSERT INTO subscription_events (subscription_id, sequence, event_id, "
                "type, payload_json, timestamp) SELECT $1, seq, $4, $5, $6, $7 FROM s), "
                "u AS (UPDATE deliveries SET status = $8, due_at = CASE WHEN $9 THEN due_at "
                "ELSE $10 END, attempts = $11, last_error = $12, lease_until = 0, "
                "updated_at = $7 WHERE id = $13), "
                "dl AS (INSERT INTO dead_letters (subscription_id, attempt_event_id, dedup_key, "
                "attempt, reason, state_change_source, state_change_from, state_change_to, "
                "state_change_reason, dead_lettered_at, expires_at, delivery_id) "
                "SELECT $1, $4, $14, $11, $15, $16, $17, $18, $19, $7, $20, $13 FROM s "
                "WHERE $9) "
                "SELECT COUNT(*) FROM s",
                {p(rec.subscription_id),
                 p(rec.consecutive_failures),
                 p(rec.next_probe_at),
                 p(rec.attempt_event_id),
                 p(codec::event_delivery_attempted),
                 p(payload),
                 p(rec.at),
                 p(codec::name_of(dead ? delivery_status::dead_lettered
                                       : delivery_status::pending)),
                 p(dead ? "true" : "false"),
                 p(rec.next_due_at),
                 p(attempt.attempt),
                 p(rec.error),
                 p(rec.delivery_id),
                 p(attempt.dedup_key),
                 p(codec::name_of(dead_letter_reason::retries_exhausted)),
                 change ? p(codec::name_of(change->source)) : param{},
                 change ? p(codec::name_of(change->from)) : param{},
                 change ? p(codec::name_of(change->to)) : param{},
                 change ? p(codec::name_of(change->reason)) : param{},
                 p(rec.dead_letter_expires_at)});
            if (!r) {
                return r.error();
            }
            if (r->int64(0, 0) == 0) {
                return errc::not_found;
            }
        }
        if (rec.state_change_caused) {
            WB_TRY(apply_state_change(c, *rec.state_change_caused, rec.state_change_event_id,
                                      rec.at, rec.attempt_event_id));
        }
        return {};
    }

    // One request inside the batch transaction. The dedup primary key is the dedup check: the
    // INSERT either takes the key (or an expired row's place) and the delivery follows in the same
    // statement, or it returns nothing and the original row is read by a second statement, whose
    // fresh snapshot sees a row another node committed while we waited on the key.
    static result<intake_outcome> intake_one(connection& c, const intake_request& req) {
        const auto status = req.hold ? delivery_status::held : delivery_status::pending;
        const intake_outcome accepted{req.hold ? intake_status::held : intake_status::accepted,
                                      req.delivery_id, req.run_id};
        if (!req.dedup_enabled) {
            auto r = c.exec(
                "WITH ins AS (INSERT INTO deliveries (id, subscription_id, tenant, dedup_key, "
                "run_id, status, due_at, received_at, updated_at) VALUES "
                "($1, $2, $3, $4, $5, $6, $7, $8, $8) RETURNING id) "
                "INSERT INTO delivery_contents (delivery_id, content_json) "
                "SELECT id, $9 FROM ins",
                {p(req.delivery_id), p(req.subscription_id), p(req.tenant), p(req.dedup_key),
                 p(req.run_id), p(codec::name_of(status)), p(req.due_at), p(req.received_at),
                 p(req.content_json)});
            if (!r) {
                return r.error();
            }
            return accepted;
        }
        auto r = c.exec(
            "WITH k AS (INSERT INTO dedup (subscription_id, dedup_key, delivery_id, run_id, "
            "expires_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (subscription_id, dedup_key) "
            "DO UPDATE SET delivery_id = excluded.delivery_id, run_id = excluded.run_id, "
            "expires_at = excluded.expires_at WHERE dedup.expires_at < $6 RETURNING 1), "
            "ins AS (INSERT INTO deliveries (id, subscription_id, tenant, dedup_key, run_id, "
            "status, due_at, received_at, updated_at) SELECT $3, $1, $7, $2, $4, $8, $9, $6, $6 "
            "FROM k RETURNING id) "
            "INSERT INTO delivery_contents (delivery_id, content_json) "
            "SELECT id, $10 FROM ins RETURNING 1",
            {p(req.subscription_id), p(req.dedup_key), p(req.delivery_id), p(req.run_id),
             p(req.dedup_expires_at), p(req.received_at), p(req.tenant), p(codec::name_of(status)),
             p(req.due_at), p(req.content_json)});
        if (!r) {
            return r.error();
        }
        if (!r->empty()) {
            return accepted;
        }
        auto orig = c.exec("SELECT delivery_id, run_id FROM dedup "
                           "WHERE subscription_id = $1 AND dedup_key = $2",
                           {p(req.subscription_id), p(req.dedup_key)});
        if (!orig) {
            return orig.error();
        }
        if (orig->empty()) {
            return errc::internal;
        }
        return intake_outcome{intake_status::duplicate, orig->text(0, 0), orig->text(0, 1)};
    }

    // Group commit: everything queued (up to max_batch_) goes into one transaction; one COMMIT
    // (one WAL flush, synchronous_commit = on), then every callback.
    void writer_loop() {
        std::vector<queued_intake> batch;
        std::vector<result<intake_outcome>> results;
        for (;;) {
            batch.clear();
            {
                std::unique_lock lock(queue_mu_);
                queue_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
                if (queue_.empty()) {
                    return;
                }
                while (!queue_.empty() && batch.size() < static_cast<std::size_t>(max_batch_)) {
                    batch.push_back(std::move(queue_.front()));
                    queue_.pop_front();
                }
            }
            const std::uint64_t before = writer_->round_trips();
            run_batch(batch, results);
            round_trips_.fetch_add(writer_->round_trips() - before);
            intake_requests_.fetch_add(batch.size());
            for (std::size_t i = 0; i < batch.size(); ++i) {
                if (!batch[i].done) {
                    continue;
                }
                try {
                    batch[i].done(std::move(results[i]));
                } catch (...) {
                    // A throwing callback must not take the writer (and every later intake) down.
                }
            }
        }
    }

    // A request that fails aborts the PostgreSQL transaction. Instead of a SAVEPOINT per request
    // (a subtransaction each: past 64 per transaction every other session's snapshots overflow
    // into pg_subtrans, and each costs a round trip), the batch is rolled back and replayed
    // without the failed request, whose error is final. Failures are rare (ingest checks the
    // subscription first), so the common batch is BEGIN + one statement per request + COMMIT.
    // Requests run in (subscription, key) order so two nodes' batches take dedup keys in the same
    // order and cannot deadlock on each other.
    void run_batch(const std::vector<queued_intake>& batch,
                   std::vector<result<intake_outcome>>& results) {
        connection& c = *writer_;
        results.assign(batch.size(), result<intake_outcome>(errc::internal));
        std::vector<std::size_t> order(batch.size());
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
            return std::tie(batch[a].req.subscription_id, batch[a].req.dedup_key) <
                   std::tie(batch[b].req.subscription_id, batch[b].req.dedup_key);
        });
        std::vector<bool> failed(batch.size(), false);
        int transient_retries = 0;
        auto fail_all = [&](boost::system::error_code ec) {
            for (std::size_t i = 0; i < batch.size(); ++i) {
                if (!failed[i]) {
                    results[i] = ec;
                }
            }
        };
        const bool reconnect = writer_epoch_ < reset_epoch_.load();
        if (auto r = c.ensure(reconnect); !r) {
            fail_all(errc::store_unavailable);
            return;
        }
        writer_epoch_ = reset_epoch_.load();
        for (;;) {
            if (auto r = begin(c); !r) {
                note_failure(c);
                fail_all(r.error());
                return;
            }
            bool replay = false;
            for (std::size_t i : order) {
                if (failed[i]) {
                    continue;
                }
                auto out = intake_one(c, batch[i].req);
                if (out) {
                    results[i] = std::move(out);
                    continue;
                }
                const bool transient = out.error() == errc::store_unavailable;
                if (c.healthy()) {
                    (void)c.run("ROLLBACK");
                }
                if (!c.healthy()) {
                    note_failure(c);
                    fail_all(errc::store_unavailable);
                    return;
                }
                if (transient) {
                    // Deadlock / serialization failure: the whole batch may succeed on replay.
                    if (++transient_retries > batch_replays) {
                        fail_all(out.error());
                        return;
                    }
                } else {
                    failed[i] = true;
                    results[i] = out.error();
                }
                replay = true;
                break;
            }
            if (replay) {
                continue;
            }
            if (auto r = c.run("COMMIT"); !r) {
                // Nothing of this batch may be reported accepted.
                if (c.healthy() && c.in_transaction()) {
                    (void)c.run("ROLLBACK");
                }
                note_failure(c);
                fail_all(r.error());
                return;
            }
            commits_.fetch_add(1);
            intake_batches_.fetch_add(1);
            return;
        }
    }

    void note_failure(connection& c) {
        if (!c.healthy()) {
            reset_epoch_.fetch_add(1);
        }
    }

    std::unique_ptr<connection> writer_; // used only by the writer thread
    std::uint64_t writer_epoch_ = 0;
    std::unique_ptr<connection> listener_; // used only by the listener thread

    struct cached_subscription {
        subscription value;
        std::chrono::steady_clock::time_point read_at;
    };
    mutable std::mutex subs_mu_;
    std::unordered_map<std::string, cached_subscription> subs_cache_;
    std::uint64_t subs_generation_ = 0;
    bool subs_listening_ = false; // nothing is cached while notifications could be missed
    std::mutex listener_mu_;
    std::condition_variable listener_cv_;
    bool listener_stopping_ = false;

    std::vector<slot> slots_;
    std::vector<std::size_t> free_;
    std::mutex pool_mu_;
    std::condition_variable pool_cv_;
    std::atomic<std::uint64_t> reset_epoch_{0};

    // Lease tokens of this node's committed claims, by delivery id.
    // This node, as its claims and its beats name it: fresh per open, so a restarted process is
    // a new node and the old one's claims are freed once it is seen silent.
    const std::string node_id_ = make_node_id();
    std::mutex lease_mu_;
    struct lease {
        std::int64_t token;
        millis until;
    };
    static constexpr std::size_t max_remembered_leases = 100000;
    std::unordered_map<std::string, lease> leases_;

    std::mutex queue_mu_;
    std::condition_variable queue_cv_;
    std::deque<queued_intake> queue_;
    bool stopping_ = false;
    const int max_batch_;

    std::atomic<std::uint64_t> commits_{0};
    std::atomic<std::uint64_t> intake_batches_{0};
    std::atomic<std::uint64_t> intake_requests_{0};
    std::atomic<std::uint64_t> round_trips_{0};

    std::thread thread_; // last: started once everything above exists
    std::thread listener_thread_;
};

} // namespace

result<std::unique_ptr<store>> open_postgres_store(const postgres_options& opts, error_info& why) {
    if (opts.url.empty()) {
        why = {errc::invalid_argument, "store.postgres.url is empty"};
        return errc::invalid_argument;
    }
    std::string reason;
    auto writer = postgres::connection::open(opts.url, opts.connect_timeout_s, reason);
    if (!writer) {
        why = {errc::store_unavailable, reason};
        return writer.error();
    }
    if (auto r = postgres::migrate(**writer, reason); !r) {
        const errc code =
            r.error() == errc::unsupported ? errc::unsupported : errc::store_unavailable;
        why = {code, reason};
        return code;
    }
    std::vector<std::unique_ptr<postgres::connection>> pool;
    for (int i = 0; i < std::max(1, opts.pool_size); ++i) {
        auto c = postgres::connection::open(opts.url, opts.connect_timeout_s, reason);
        if (!c) {
            why = {errc::store_unavailable, reason};
            return c.error();
        }
        pool.push_back(std::move(*c));
    }
    auto listener = postgres::connection::open(opts.url, opts.connect_timeout_s, reason);
    if (!listener) {
        why = {errc::store_unavailable, reason};
        return listener.error();
    }
    return std::unique_ptr<store>(std::make_unique<postgres_store>(
        std::move(*writer), std::move(pool), std::move(*listener), opts.group_commit_max_batch));
}

} // namespace wopbridge
