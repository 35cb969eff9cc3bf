#include "store/postgres/pg_migrations.hpp"
#include "store/migration_runner.hpp"

#include <array>

namespace wopbridge::postgres {
namespace {

using store_codec::migration;

// Times are BIGINT milliseconds since the epoch (UTC); enum columns hold the wire spellings
// (store_codec). `seq` columns give arrival order and are the page keys. `next_event_seq` counters
// hand out gap-free event sequences: bumping one locks its row until commit, so appends from any
// node serialize per run (or per subscription log).
constexpr std::array<migration, 11> migrations{{
    {1, R"sql(
CREATE TABLE subscriptions (
    id                        TEXT PRIMARY KEY,
    tenant                    TEXT NOT NULL,
    source                    TEXT NOT NULL,
    state                     TEXT NOT NULL,
    workflow_id               TEXT NOT NULL,
    dedup_enabled             INTEGER NOT NULL,
    retry_max_attempts        INTEGER NOT NULL,
    retry_backoff             TEXT NOT NULL,
    retry_base_delay_ms       BIGINT NOT NULL,
    retry_max_delay_ms        BIGINT NOT NULL,
    retry_jitter              INTEGER NOT NULL,
    breaker_failure_threshold INTEGER NOT NULL,
    breaker_probe_interval_ms BIGINT NOT NULL,
    verification              TEXT NOT NULL,
    webhook_id                TEXT NOT NULL,
    secret_fingerprint        TEXT NOT NULL,
    sealed_secret             TEXT NOT NULL,
    schedule_cron             TEXT,
    schedule_time_zone        TEXT,
    connector                 TEXT NOT NULL,
    connector_settings_json   TEXT NOT NULL,
    origin                    TEXT NOT NULL,
    consecutive_failures      INTEGER NOT NULL,
    next_probe_at             BIGINT NOT NULL,
    created_at                BIGINT NOT NULL,
    updated_at                BIGINT NOT NULL,
    next_event_seq            BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX subscriptions_by_tenant ON subscriptions (tenant, id);
CREATE INDEX subscriptions_failed_probe ON subscriptions (next_probe_at) WHERE state = 'failed';

CREATE TABLE dedup (
    subscription_id TEXT NOT NULL REFERENCES subscriptions (id) ON DELETE CASCADE,
    dedup_key       TEXT NOT NULL,
    delivery_id     TEXT NOT NULL,
    run_id          TEXT NOT NULL,
    expires_at      BIGINT NOT NULL,
    PRIMARY KEY (subscription_id, dedup_key)
);
CREATE INDEX dedup_by_expiry ON dedup (expires_at);

-- Lease tokens: every claim gets a fresh one; a claimer whose lease was taken over cannot settle.
CREATE SEQUENCE lease_tokens;

CREATE TABLE deliveries (
    seq             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id              TEXT NOT NULL UNIQUE,
    subscription_id TEXT NOT NULL REFERENCES subscriptions (id) ON DELETE CASCADE,
    tenant          TEXT NOT NULL,
    dedup_key       TEXT NOT NULL,
    run_id          TEXT NOT NULL,
    status          TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    due_at          BIGINT NOT NULL,
    lease_until     BIGINT NOT NULL DEFAULT 0,
    lease_token     BIGINT NOT NULL DEFAULT 0,
    received_at     BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL,
    last_error      TEXT NOT NULL DEFAULT ''
);
CREATE INDEX deliveries_claimable ON deliveries (due_at, seq) WHERE status = 'pending';
CREATE INDEX deliveries_leased ON deliveries (lease_until) WHERE status = 'in_flight';
CREATE INDEX deliveries_by_subscription ON deliveries (subscription_id, seq);

-- Inbound content lives apart from the delivery row: only delivery_content() reads it.
CREATE TABLE delivery_contents (
    delivery_id  TEXT PRIMARY KEY REFERENCES deliveries (id) ON DELETE CASCADE,
    content_json TEXT NOT NULL
);

CREATE TABLE runs (
    id              TEXT PRIMARY KEY,
    tenant          TEXT NOT NULL,
    workflow_id     TEXT NOT NULL,
    subscription_id TEXT NOT NULL,
    delivery_id     TEXT NOT NULL,
    status          TEXT NOT NULL,
    upstream_run_id TEXT NOT NULL,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL,
    next_event_seq  BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX runs_by_status ON runs (status, created_at);

CREATE TABLE run_events (
    run_id       TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    sequence     BIGINT NOT NULL,
    event_id     TEXT NOT NULL UNIQUE,
    type         TEXT NOT NULL,
    payload_json TEXT NOT NULL,
    timestamp    BIGINT NOT NULL,
    causation_id TEXT,
    PRIMARY KEY (run_id, sequence)
);

-- The run-less log of a subscription: state changes and attempts that started no run.
CREATE TABLE subscription_events (
    subscription_id TEXT NOT NULL REFERENCES subscriptions (id) ON DELETE CASCADE,
    sequence        BIGINT NOT NULL,
    event_id        TEXT NOT NULL UNIQUE,
    type            TEXT NOT NULL,
    payload_json    TEXT NOT NULL,
    timestamp       BIGINT NOT NULL,
    causation_id    TEXT,
    PRIMARY KEY (subscription_id, sequence)
);

CREATE TABLE dead_letters (
    seq                 BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    subscription_id     TEXT NOT NULL REFERENCES subscriptions (id) ON DELETE CASCADE,
    attempt_event_id    TEXT NOT NULL UNIQUE,
    dedup_key           TEXT NOT NULL,
    attempt             INTEGER NOT NULL,
    reason              TEXT NOT NULL,
    state_change_source TEXT,
    state_change_from   TEXT,
    state_change_to     TEXT,
    state_change_reason TEXT,
    dead_lettered_at    BIGINT NOT NULL,
    expires_at          BIGINT NOT NULL,
    delivery_id         TEXT NOT NULL
);
CREATE INDEX dead_letters_newest_first ON dead_letters (subscription_id, seq DESC);
CREATE INDEX dead_letters_by_expiry ON dead_letters (expires_at);
)sql"},
    // 2: whenNotActive (refuse | hold), as SQLite migration 2 (existing rows keep the old
    // behaviour, refuse); and the outbound run-event webhooks, as SQLite migration 3: webhooks,
    // the outbox (one row per (webhook, run event), written in the run event's own statement),
    // the failure window, dead letters and state changes.
    {2, R"sql(
ALTER TABLE subscriptions ADD COLUMN when_not_active TEXT NOT NULL DEFAULT 'refuse';

CREATE TABLE outbound_webhooks (
    id                     TEXT PRIMARY KEY,
    tenant                 TEXT NOT NULL,
    url                    TEXT NOT NULL,
    events_json            TEXT NOT NULL,
    tags_json              TEXT NOT NULL,
    sealed_secret          TEXT NOT NULL,
    sealed_standard_secret TEXT NOT NULL,
    secret_fingerprint     TEXT NOT NULL,
    state                  TEXT NOT NULL,
    consecutive_failures   INTEGER NOT NULL,
    breaker_open_until     BIGINT NOT NULL,
    created_at             BIGINT NOT NULL,
    updated_at             BIGINT NOT NULL
);
CREATE INDEX outbound_webhooks_by_tenant ON outbound_webhooks (tenant, id);

CREATE TABLE outbound_deliveries (
    seq         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id          TEXT NOT NULL UNIQUE,
    webhook_id  TEXT NOT NULL REFERENCES outbound_webhooks (id) ON DELETE CASCADE,
    run_id      TEXT NOT NULL,
    sequence    BIGINT NOT NULL,
    event_type  TEXT NOT NULL,
    status      TEXT NOT NULL,
    attempts    INTEGER NOT NULL,
    due_at      BIGINT NOT NULL,
    lease_until BIGINT NOT NULL,
    last_error  TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL,
    UNIQUE (webhook_id, run_id, sequence)
);
CREATE INDEX outbound_deliveries_due ON outbound_deliveries (status, due_at);

CREATE TABLE outbound_failures (
    webhook_id TEXT NOT NULL REFERENCES outbound_webhooks (id) ON DELETE CASCADE,
    at         BIGINT NOT NULL
);
CREATE INDEX outbound_failures_by_webhook ON outbound_failures (webhook_id, at);

CREATE TABLE outbound_state_changes (
    seq        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    webhook_id TEXT NOT NULL REFERENCES outbound_webhooks (id) ON DELETE CASCADE,
    from_state TEXT NOT NULL,
    to_state   TEXT NOT NULL,
    reason     TEXT NOT NULL,
    at         BIGINT NOT NULL
);

CREATE TABLE outbound_dead_letters (
    seq              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    webhook_id       TEXT NOT NULL REFERENCES outbound_webhooks (id) ON DELETE CASCADE,
    delivery_id      TEXT NOT NULL,
    run_id           TEXT NOT NULL,
    sequence         BIGINT NOT NULL,
    event_type       TEXT NOT NULL,
    attempts         INTEGER NOT NULL,
    reason           TEXT NOT NULL,
    last_error       TEXT NOT NULL,
    state_change_seq BIGINT,
    dead_lettered_at BIGINT NOT NULL,
    expires_at       BIGINT NOT NULL
);
CREATE INDEX outbound_dead_letters_by_webhook ON outbound_dead_letters (webhook_id, seq);
)sql"},
    // 3: the due-work index. next_due_at and claim_due ask per subscription ("its earliest pending
    // delivery"), which this answers with one seek, so their cost follows the number of
    // subscriptions, not the backlog.
    {3, R"sql(
CREATE INDEX deliveries_by_subscription_status_due
    ON deliveries (subscription_id, status, due_at, seq);
)sql"},
    // 4: subscriptions[].maxConcurrency (0 = unbounded).
    {4, R"sql(
ALTER TABLE subscriptions ADD COLUMN max_concurrency INTEGER NOT NULL DEFAULT 0;
)sql"},
    // 5: every change of a subscription row (whoever makes it: any node, an operator's SQL) is
    // announced on the channel wopbridge_subscriptions with the id as payload, at commit, so
    // nodes can cache subscriptions. next_event_seq alone (the subscription log's counter) is not
    // part of what nodes read, so it announces nothing.
    {5, R"sql(
CREATE FUNCTION wopbridge_subscription_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('wopbridge_subscriptions', COALESCE(NEW.id, OLD.id));
    RETURN NULL;
END $$;
CREATE TRIGGER subscriptions_changed_insert_delete AFTER INSERT OR DELETE ON subscriptions
    FOR EACH ROW EXECUTE FUNCTION wopbridge_subscription_changed();
CREATE TRIGGER subscriptions_changed_update AFTER UPDATE ON subscriptions
    FOR EACH ROW WHEN (to_jsonb(OLD) - 'next_event_seq' IS DISTINCT FROM
                       to_jsonb(NEW) - 'next_event_seq')
    EXECUTE FUNCTION wopbridge_subscription_changed();
)sql"},
    // 6: facts about the store itself; 'host_key_check' binds the store (every node) to one host
    // key.
    {6, R"sql(
CREATE TABLE store_meta (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
)sql"},
    // 7: bulk dead-letter replay jobs: the job, its selection and its progress, so any node
    // answers its status and a node that died has its job resumed by another once the lease runs
    // out. A deleted subscription takes its jobs.
    {7, R"sql(
CREATE TABLE replay_jobs (
    id                   TEXT PRIMARY KEY,
    tenant               TEXT NOT NULL,
    subscription_id      TEXT NOT NULL REFERENCES subscriptions (id) ON DELETE CASCADE,
    state                TEXT NOT NULL,
    rate_milli           BIGINT NOT NULL, -- the rate per second, times 1000
    total                INTEGER NOT NULL,
    replayed             INTEGER NOT NULL DEFAULT 0,
    delivered            INTEGER NOT NULL DEFAULT 0,
    failed               INTEGER NOT NULL DEFAULT 0,
    consecutive_failures INTEGER NOT NULL DEFAULT 0,
    started_at           BIGINT NOT NULL,
    finished_at          BIGINT NOT NULL DEFAULT 0,
    expires_at           BIGINT NOT NULL DEFAULT 0,
    owner                TEXT NOT NULL DEFAULT '',
    lease_until          BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX replay_jobs_by_state_lease ON replay_jobs (state, lease_until);
CREATE INDEX replay_jobs_by_subscription ON replay_jobs (subscription_id);
CREATE TABLE replay_job_items (
    job_id           TEXT NOT NULL REFERENCES replay_jobs (id) ON DELETE CASCADE,
    position         INTEGER NOT NULL,
    attempt_event_id TEXT NOT NULL,
    delivery_id      TEXT NOT NULL DEFAULT '',
    outcome          TEXT NOT NULL DEFAULT 'selected',
    PRIMARY KEY (job_id, position)
);
)sql"},
    // 8: nodes say they are alive (by the database's clock), and a claim names the node that took
    // it: the deliveries a silent node (killed, cut off) had claimed become claimable long before
    // their leases run out.
    {8, R"sql(
CREATE TABLE nodes (
    id         TEXT PRIMARY KEY,
    started_at BIGINT NOT NULL,
    last_seen  BIGINT NOT NULL
);
ALTER TABLE deliveries ADD COLUMN claimed_by TEXT NOT NULL DEFAULT '';
CREATE INDEX deliveries_by_claimer ON deliveries (claimed_by) WHERE status = 'in_flight';
)sql"},
    // 9: the run listing (GET /v1/runs) pages a tenant's runs newest first.
    {9, R"sql(
CREATE INDEX IF NOT EXISTS runs_by_tenant_created ON runs (tenant, created_at, id);
)sql"},
    // 10: leases by subscription, so the next-due question finds each subscription's earliest
    // lease by one seek (it sorted every in-flight row, 0.7 ms a call under a backlog); expired
    // leases are claimed per subscription through it as well.
    {10, R"sql(
CREATE INDEX deliveries_leased_by_subscription ON deliveries (subscription_id, lease_until)
    WHERE status = 'in_flight';
DROP INDEX deliveries_leased;
)sql"},
    // 11: run_events without a foreign key to runs. Every event is inserted by the statement
    // that inserts or locks its run's row (the sequence comes from that row) and runs are never
    // deleted, so the check only cost a lookup and a row lock, a WAL record, per event.
    {11, R"sql(
ALTER TABLE run_events DROP CONSTRAINT IF EXISTS run_events_run_id_fkey;
)sql"},
}};

// Any constant shared by every node: 'wopbrdg1'.
constexpr const char* lock_sql = "SELECT pg_advisory_xact_lock(8606922045461292849)";

result<int> current_version(connection& conn) {
    auto exists = conn.exec("SELECT to_regclass('schema_migrations') IS NOT NULL");
    if (!exists) {
        return exists.error();
    }
    if (exists->text(0, 0) != "t") {
        return 0;
    }
    auto v = conn.exec("SELECT COALESCE(MAX(version), 0) FROM schema_migrations");
    if (!v) {
        return v.error();
    }
    return v->integer(0, 0);
}

// The runner's view of a PostgreSQL connection.
struct schema {
    connection& conn;
    result<int> read_version() { return current_version(conn); }
    result<void> exec(const char* sql) { return conn.run(sql); }
    result<void> record(int version) {
        return conn.run("INSERT INTO schema_migrations (version, applied_at) VALUES "
                        "($1, (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT)",
                        {p(version)});
    }
    std::string last_error() const { return conn.last_error(); }
    void rollback() { (void)conn.run("ROLLBACK"); }
    void rollback_if_open() {
        if (conn.healthy() && conn.in_transaction()) {
            rollback();
        }
    }
};

// The advisory lock is held until COMMIT: a second node blocks there, then re-reads the version.
constexpr std::array<store_codec::opening_step, 3> opening{{
    {"cannot start migration", "BEGIN"},
    {"cannot take the migration lock", lock_sql},
    {"cannot create schema_migrations", "CREATE TABLE IF NOT EXISTS schema_migrations ("
                                        "version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)"},
}};

} // namespace

int latest_schema_version() noexcept {
    return migrations.back().version;
}

result<void, error_info> migrate(connection& conn) {
    schema db{conn};
    return store_codec::run_migrations(db, migrations, opening);
}

} // namespace wopbridge::postgres
