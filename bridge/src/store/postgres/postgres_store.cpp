// The PostgreSQL store backend: several bridge nodes share one database. Per node: one intake
// writer connection (group commit) and a small pool for everything else. Across nodes, correctness
// rests on the database alone: the dedup primary key, row locks (claims use FOR UPDATE SKIP
// LOCKED), per-run / per-subscription event counters, and lease tokens. Nothing is cached.
// This file: opening, the threads' lifetime, upkeep, the cluster, and the outbound and
// replay-job roles (pg_outbound.cpp, pg_replay_jobs.cpp).
#include "store/postgres/postgres_store_impl.hpp"
#include "core/thread_name.hpp"

#define WB_DB_NOW_MS "(extract(epoch FROM clock_timestamp()) * 1000)::bigint"

namespace wopbridge::postgres_detail {

postgres_store::postgres_store(std::unique_ptr<connection> writer,
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
    thread_ = std::thread([this] {
        name_this_thread("wb-pg-writer");
        writer_loop();
    });
    listener_thread_ = std::thread([this] {
        name_this_thread("wb-pg-listen");
        listener_loop();
    });
}

postgres_store::~postgres_store() {
    {
        wopbridge::lock_guard lock(listener_mu_);
        listener_stopping_ = true;
    }
    listener_cv_.notify_all();
    listener_thread_.join(); // at most one notification wait (250 ms) away
    {
        wopbridge::lock_guard lock(queue_mu_);
        stopping_ = true;
    }
    queue_cv_.notify_all();
    thread_.join(); // the loop drains the queue first: every callback gets its answer
}

result<int> postgres_store::purge_expired(millis now) {
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

result<int> postgres_store::keep_node_alive(millis silent_ms) {
    return write([&](connection& c) -> result<int> {
        // One statement: this node's beat, the nodes silent past `silent_ms` removed, and
        // what they had claimed made claimable now (its lease token changes at the next
        // claim, so a silent node that comes back cannot settle it).
        auto r = c.exec("WITH beat AS (INSERT INTO nodes (id, started_at, last_seen) "
                        "VALUES ($1, " WB_DB_NOW_MS ", " WB_DB_NOW_MS ") "
                        "ON CONFLICT (id) DO UPDATE SET last_seen = EXCLUDED.last_seen "
                        "RETURNING 1), "
                        "dead AS (DELETE FROM nodes WHERE id <> $1 AND last_seen < " WB_DB_NOW_MS
                        " - $2 RETURNING id), "
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

result<int> postgres_store::release_all_claims() {
    return make_error_code(errc::unsupported);
}

result<void> postgres_store::leave_cluster() {
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

result<void> postgres_store::probe_write() {
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

result<void> postgres_store::ping() {
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

result<void> postgres_store::create_replay_job(const replay_job_record& job,
                                               const std::vector<std::string>& ids) {
    return write([&](connection& c) { return postgres::replay_jobs::create(c, job, ids); });
}

result<replay_job_record> postgres_store::get_replay_job(const std::string& id) {
    return read([&](connection& c) { return postgres::replay_jobs::get(c, id); });
}

result<std::vector<replay_job_item>>
postgres_store::unsettled_replay_job_items(const std::string& id) {
    return read([&](connection& c) { return postgres::replay_jobs::unsettled_items(c, id); });
}

result<void> postgres_store::update_replay_job(const replay_job_update& u) {
    return write([&](connection& c) { return postgres::replay_jobs::update(c, u); });
}

result<std::vector<replay_job_record>>
postgres_store::claim_replay_jobs(const std::string& owner, millis now, millis lease_ms) {
    return write(
        [&](connection& c) { return postgres::replay_jobs::claim(c, owner, now, lease_ms); });
}

result<int> postgres_store::release_replay_jobs(const std::string& owner) {
    if (owner.empty()) {
        return make_error_code(errc::invalid_argument);
    }
    return write([&](connection& c) { return postgres::replay_jobs::release(c, owner); });
}

result<void> postgres_store::insert_outbound_webhook(const outbound_webhook& w) {
    return write([&](connection& c) { return postgres::outbound::insert_webhook(c, w); });
}

result<outbound_webhook> postgres_store::get_outbound_webhook(const std::string& id) {
    return read([&](connection& c) { return postgres::outbound::get_webhook(c, id); });
}

result<std::vector<outbound_webhook>> postgres_store::list_outbound_webhooks(const std::string& t) {
    return read([&](connection& c) { return postgres::outbound::list_webhooks(c, t); });
}

result<void> postgres_store::delete_outbound_webhook(const std::string& id) {
    return write([&](connection& c) { return postgres::outbound::delete_webhook(c, id); });
}

result<int> postgres_store::enqueue_outbound(const std::string& run_id, std::int64_t sequence,
                                             millis at) {
    return write(
        [&](connection& c) { return postgres::outbound::enqueue(c, run_id, sequence, at); });
}

result<std::vector<outbound_delivery>>
postgres_store::claim_outbound_due(millis now, int limit, int per_webhook_limit, millis lease_ms) {
    return transaction([&](connection& c) {
        return postgres::outbound::claim_due(c, now, limit, per_webhook_limit, lease_ms);
    });
}

result<void> postgres_store::record_outbound_attempt(const outbound_attempt& a) {
    return transaction([&](connection& c) { return postgres::outbound::record_attempt(c, a); });
}

result<int> postgres_store::count_outbound_failures(const std::string& id, millis since) {
    return read([&](connection& c) { return postgres::outbound::count_failures(c, id, since); });
}

result<std::optional<millis>> postgres_store::outbound_next_due_at() {
    return read([&](connection& c) { return postgres::outbound::next_due_at(c); });
}

result<std::vector<outbound_delivery>>
postgres_store::list_outbound_deliveries(const std::string& id) {
    return read([&](connection& c) { return postgres::outbound::list_deliveries(c, id); });
}

result<page<outbound_dead_letter>>
postgres_store::list_outbound_dead_letters(const std::string& id, const page_request& req,
                                           millis now) {
    return read(
        [&](connection& c) { return postgres::outbound::list_dead_letters(c, id, req, now); });
}

result<std::vector<outbound_state_change>>
postgres_store::list_outbound_state_changes(const std::string& id) {
    return read([&](connection& c) { return postgres::outbound::list_state_changes(c, id); });
}

store_stats postgres_store::stats() const {
    bool live = false;
    {
        wopbridge::lock_guard lock(subs_mu_);
        live = subs_listening_;
    }
    return {commits_.load(), intake_batches_.load(), intake_requests_.load(), round_trips_.load(),
            live};
}

result<void> postgres_store::begin(connection& c) {
    auto r = c.run("BEGIN");
    if (!r && !c.healthy() && c.ensure(true)) {
        r = c.run("BEGIN");
    }
    return r;
}

} // namespace wopbridge::postgres_detail

namespace wopbridge {
namespace {

using namespace postgres_detail;

} // namespace

result<std::unique_ptr<store>, error_info> open_postgres_store(const postgres_options& opts) {
    if (opts.url.empty()) {
        return error_info{errc::invalid_argument, "store.postgres.url is empty"};
    }
    auto writer = postgres::connection::open(opts.url, opts.connect_timeout_s);
    if (!writer) {
        return writer.error();
    }
    if (auto r = postgres::migrate(**writer); !r) {
        // A newer schema is the operator's to fix; any other failure is the server's state.
        auto e = r.error();
        if (e.code != errc::unsupported) {
            e.code = errc::store_unavailable;
        }
        return e;
    }
    std::vector<std::unique_ptr<postgres::connection>> pool;
    for (int i = 0; i < std::max(1, opts.pool_size); ++i) {
        auto c = postgres::connection::open(opts.url, opts.connect_timeout_s);
        if (!c) {
            return c.error();
        }
        pool.push_back(std::move(*c));
    }
    auto listener = postgres::connection::open(opts.url, opts.connect_timeout_s);
    if (!listener) {
        return listener.error();
    }
    return std::unique_ptr<store>(std::make_unique<postgres_store>(
        std::move(*writer), std::move(pool), std::move(*listener), opts.group_commit_max_batch));
}

} // namespace wopbridge
