#include "store/sqlite/sqlite_migrations.hpp"
#include "store/migration_runner.hpp"

#include <array>
#include <span>
#include <string>

namespace wopbridge::sqlite {
namespace {

using store_codec::migration;

// Times are int64 milliseconds since the epoch (UTC). Enum columns hold the wire spellings
// (store_codec). `seq` columns give arrival order and are the page keys.
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
    retry_base_delay_ms       INTEGER NOT NULL,
    retry_max_delay_ms        INTEGER NOT NULL,
    retry_jitter              INTEGER NOT NULL,
    breaker_failure_threshold INTEGER NOT NULL,
    breaker_probe_interval_ms INTEGER NOT NULL,
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
    next_probe_at             INTEGER NOT NULL,
    created_at                INTEGER NOT NULL,
    updated_at                INTEGER NOT NULL
);
CREATE INDEX subscriptions_by_tenant ON subscriptions (tenant, id);

CREATE TABLE dedup (
    subscription_id TEXT NOT NULL REFERENCES subscriptions (id) ON DELETE CASCADE,
    dedup_key       TEXT NOT NULL,
    delivery_id     TEXT NOT NULL,
    run_id          TEXT NOT NULL,
    expires_at      INTEGER NOT NULL,
    PRIMARY KEY (subscription_id, dedup_key)
) WITHOUT ROWID;
CREATE INDEX dedup_by_expiry ON dedup (expires_at);

CREATE TABLE deliveries (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    id              TEXT NOT NULL UNIQUE,
    subscription_id TEXT NOT NULL REFERENCES subscriptions (id) ON DELETE CASCADE,
    tenant          TEXT NOT NULL,
    dedup_key       TEXT NOT NULL,
    run_id          TEXT NOT NULL,
    status          TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    due_at          INTEGER NOT NULL,
    lease_until     INTEGER NOT NULL DEFAULT 0,
    received_at     INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    last_error      TEXT NOT NULL DEFAULT ''
);
CREATE INDEX deliveries_by_status_due ON deliveries (status, due_at, seq);
CREATE INDEX deliveries_by_subscription ON deliveries (subscription_id, seq);

-- Inbound content lives apart from the delivery row: only delivery_content() reads it.
CREATE TABLE delivery_contents (
    delivery_id  TEXT PRIMARY KEY REFERENCES deliveries (id) ON DELETE CASCADE,
    content_json TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE runs (
    id              TEXT PRIMARY KEY,
    tenant          TEXT NOT NULL,
    workflow_id     TEXT NOT NULL,
    subscription_id TEXT NOT NULL,
    delivery_id     TEXT NOT NULL,
    status          TEXT NOT NULL,
    upstream_run_id TEXT NOT NULL,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
);
CREATE INDEX runs_by_status ON runs (status, created_at);

CREATE TABLE run_events (
    run_id       TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    sequence     INTEGER NOT NULL,
    event_id     TEXT NOT NULL UNIQUE,
    type         TEXT NOT NULL,
    payload_json TEXT NOT NULL,
    timestamp    INTEGER NOT NULL,
    causation_id TEXT,
    PRIMARY KEY (run_id, sequence)
) WITHOUT ROWID;

-- The run-less log of a subscription: state changes and attempts that started no run.
CREATE TABLE subscription_events (
    subscription_id TEXT NOT NULL REFERENCES subscriptions (id) ON DELETE CASCADE,
    sequence        INTEGER NOT NULL,
    event_id        TEXT NOT NULL UNIQUE,
    type            TEXT NOT NULL,
    payload_json    TEXT NOT NULL,
    timestamp       INTEGER NOT NULL,
    causation_id    TEXT,
    PRIMARY KEY (subscription_id, sequence)
) WITHOUT ROWID;

CREATE TABLE dead_letters (
    seq                 INTEGER PRIMARY KEY AUTOINCREMENT,
    subscription_id     TEXT NOT NULL REFERENCES subscriptions (id) ON DELETE CASCADE,
    attempt_event_id    TEXT NOT NULL UNIQUE,
    dedup_key           TEXT NOT NULL,
    attempt             INTEGER NOT NULL,
    reason              TEXT NOT NULL,
    state_change_source TEXT,
    state_change_from   TEXT,
    state_change_to     TEXT,
    state_change_reason TEXT,
    dead_lettered_at    INTEGER NOT NULL,
    expires_at          INTEGER NOT NULL,
    delivery_id         TEXT NOT NULL
);
CREATE INDEX dead_letters_newest_first ON dead_letters (subscription_id, seq DESC);
CREATE INDEX dead_letters_by_expiry ON dead_letters (expires_at);
)sql"},
    // whenNotActive: refuse (the contract's 409) | hold.
    {2, R"sql(
ALTER TABLE subscriptions ADD COLUMN when_not_active TEXT NOT NULL DEFAULT 'refuse';
)sql"},
    // 3: outbound run-event webhooks (bridge/src/outbound/): subscriptions, the outbox (one row per
    // (webhook, run event), written in the run event's own transaction), the failure window, dead
    // letters and state changes.
    {3, R"sql(
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
    breaker_open_until     INTEGER NOT NULL,
    created_at             INTEGER NOT NULL,
    updated_at             INTEGER NOT NULL
);
CREATE INDEX outbound_webhooks_by_tenant ON outbound_webhooks (tenant, id);

CREATE TABLE outbound_deliveries (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    id          TEXT NOT NULL UNIQUE,
    webhook_id  TEXT NOT NULL REFERENCES outbound_webhooks (id) ON DELETE CASCADE,
    run_id      TEXT NOT NULL,
    sequence    INTEGER NOT NULL,
    event_type  TEXT NOT NULL,
    status      TEXT NOT NULL,
    attempts    INTEGER NOT NULL,
    due_at      INTEGER NOT NULL,
    lease_until INTEGER NOT NULL,
    last_error  TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    UNIQUE (webhook_id, run_id, sequence)
);
CREATE INDEX outbound_deliveries_due ON outbound_deliveries (status, due_at);

CREATE TABLE outbound_failures (
    webhook_id TEXT NOT NULL REFERENCES outbound_webhooks (id) ON DELETE CASCADE,
    at         INTEGER NOT NULL
);
CREATE INDEX outbound_failures_by_webhook ON outbound_failures (webhook_id, at);

CREATE TABLE outbound_state_changes (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    webhook_id TEXT NOT NULL REFERENCES outbound_webhooks (id) ON DELETE CASCADE,
    from_state TEXT NOT NULL,
    to_state   TEXT NOT NULL,
    reason     TEXT NOT NULL,
    at         INTEGER NOT NULL
);

CREATE TABLE outbound_dead_letters (
    seq              INTEGER PRIMARY KEY AUTOINCREMENT,
    webhook_id       TEXT NOT NULL REFERENCES outbound_webhooks (id) ON DELETE CASCADE,
    delivery_id      TEXT NOT NULL,
    run_id           TEXT NOT NULL,
    sequence         INTEGER NOT NULL,
    event_type       TEXT NOT NULL,
    attempts         INTEGER NOT NULL,
    reason           TEXT NOT NULL,
    last_error       TEXT NOT NULL,
    state_change_seq INTEGER,
    dead_lettered_at INTEGER NOT NULL,
    expires_at       INTEGER NOT NULL
);
CREATE INDEX outbound_dead_letters_by_webhook ON outbound_dead_letters (webhook_id, seq);
)sql"},
    // 4: the due-work index. next_due_at and claim_due ask per subscription ("its earliest pending
    // delivery"), which this answers with one seek, so their cost follows the number of
    // subscriptions, not the backlog.
    {4, R"sql(
CREATE INDEX deliveries_by_subscription_status_due
    ON deliveries (subscription_id, status, due_at, seq);
)sql"},
    // 5: every due query asks per subscription (4); the global status index only cost an index
    // update at each intake, claim and record.
    {5, R"sql(
DROP INDEX deliveries_by_status_due;
)sql"},
    // 6: subscriptions[].maxConcurrency (0 = unbounded).
    {6, R"sql(
ALTER TABLE subscriptions ADD COLUMN max_concurrency INTEGER NOT NULL DEFAULT 0;
)sql"},
    // 7: facts about the store itself; 'host_key_check' binds the store to one host key.
    {7, R"sql(
CREATE TABLE store_meta (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
)sql"},
    // 8: bulk dead-letter replay jobs: the job, its selection and its progress, so a restart (or
    // a lease that ran out) resumes it where it stopped. A deleted subscription takes its jobs.
    {8, R"sql(
CREATE TABLE replay_jobs (
    id                   TEXT PRIMARY KEY,
    tenant               TEXT NOT NULL,
    subscription_id      TEXT NOT NULL REFERENCES subscriptions (id) ON DELETE CASCADE,
    state                TEXT NOT NULL,
    rate_milli           INTEGER NOT NULL, -- the rate per second, times 1000
    total                INTEGER NOT NULL,
    replayed             INTEGER NOT NULL DEFAULT 0,
    delivered            INTEGER NOT NULL DEFAULT 0,
    failed               INTEGER NOT NULL DEFAULT 0,
    consecutive_failures INTEGER NOT NULL DEFAULT 0,
    started_at           INTEGER NOT NULL,
    finished_at          INTEGER NOT NULL DEFAULT 0,
    expires_at           INTEGER NOT NULL DEFAULT 0,
    owner                TEXT NOT NULL DEFAULT '',
    lease_until          INTEGER NOT NULL DEFAULT 0
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
) WITHOUT ROWID;
)sql"},
    // 9: the run listing (GET /v1/runs) pages a tenant's runs newest first.
    {9, R"sql(
CREATE INDEX IF NOT EXISTS runs_by_tenant_created ON runs (tenant, created_at, id);
)sql"},
    // 10: the lean write path. Every commit writes each B-tree page it touched once more into the
    // WAL; appends to a rowid table split at the right edge cheaply (a new page), while index and
    // WITHOUT ROWID B-trees rebalance siblings. So: the content lives in its delivery row (no
    // second table keyed by the delivery id); deliveries' seq is a plain rowid (AUTOINCREMENT
    // rewrote sqlite_sequence at every intake; seq still only grows while rows remain); a run's
    // row is keyed by its id alone (WITHOUT ROWID: no rowid and id index both), and only running
    // runs are indexed by status (all that list_runs_with_status is asked for); run events are a
    // rowid table in arrival order (WITHOUT ROWID rebalanced pages of ~200-byte rows keyed by
    // random run ids) with a (run_id, sequence) index and the event id's unique index (the store
    // contract: a repeated event id is refused). Runs are never deleted, so run_events has no
    // foreign key (its check was one more lookup of the run per event, in the transaction that
    // creates the run): appending to an existing run checks for it (insert_run_event). Old
    // tables are dropped child first, so no ON DELETE CASCADE fires.
    {10, R"sql(
CREATE TABLE deliveries_v10 (
    seq             INTEGER PRIMARY KEY,
    id              TEXT NOT NULL UNIQUE,
    subscription_id TEXT NOT NULL REFERENCES subscriptions (id) ON DELETE CASCADE,
    tenant          TEXT NOT NULL,
    dedup_key       TEXT NOT NULL,
    run_id          TEXT NOT NULL,
    status          TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    due_at          INTEGER NOT NULL,
    lease_until     INTEGER NOT NULL DEFAULT 0,
    received_at     INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    last_error      TEXT NOT NULL DEFAULT '',
    content_json    TEXT NOT NULL
);
INSERT INTO deliveries_v10 (seq, id, subscription_id, tenant, dedup_key, run_id, status, attempts,
                            due_at, lease_until, received_at, updated_at, last_error, content_json)
    SELECT d.seq, d.id, d.subscription_id, d.tenant, d.dedup_key, d.run_id, d.status, d.attempts,
           d.due_at, d.lease_until, d.received_at, d.updated_at, d.last_error,
           COALESCE(c.content_json, '')
    FROM deliveries d LEFT JOIN delivery_contents c ON c.delivery_id = d.id ORDER BY d.seq;
DROP TABLE delivery_contents;
DROP TABLE deliveries;
ALTER TABLE deliveries_v10 RENAME TO deliveries;
CREATE INDEX deliveries_by_subscription ON deliveries (subscription_id, seq);
CREATE INDEX deliveries_by_subscription_status_due
    ON deliveries (subscription_id, status, due_at, seq);

CREATE TABLE runs_v10 (
    id              TEXT PRIMARY KEY,
    tenant          TEXT NOT NULL,
    workflow_id     TEXT NOT NULL,
    subscription_id TEXT NOT NULL,
    delivery_id     TEXT NOT NULL,
    status          TEXT NOT NULL,
    upstream_run_id TEXT NOT NULL,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO runs_v10 SELECT id, tenant, workflow_id, subscription_id, delivery_id, status,
                            upstream_run_id, created_at, updated_at FROM runs;
CREATE TABLE run_events_v10 (
    seq          INTEGER PRIMARY KEY,
    run_id       TEXT NOT NULL,
    sequence     INTEGER NOT NULL,
    event_id     TEXT NOT NULL,
    type         TEXT NOT NULL,
    payload_json TEXT NOT NULL,
    timestamp    INTEGER NOT NULL,
    causation_id TEXT
);
INSERT INTO run_events_v10 (run_id, sequence, event_id, type, payload_json, timestamp,
                            causation_id)
    SELECT run_id, sequence, event_id, type, payload_json, timestamp, causation_id
    FROM run_events ORDER BY timestamp, run_id, sequence;
DROP TABLE run_events;
DROP TABLE runs;
ALTER TABLE runs_v10 RENAME TO runs;
ALTER TABLE run_events_v10 RENAME TO run_events;
CREATE INDEX runs_running ON runs (created_at, id) WHERE status = 'running';
CREATE INDEX runs_by_tenant_created ON runs (tenant, created_at, id);
CREATE UNIQUE INDEX run_events_by_run ON run_events (run_id, sequence);
CREATE UNIQUE INDEX run_events_by_event_id ON run_events (event_id);
)sql"},
    // 11: dedup inside deliveries. The dedup table's row (keyed by a keyed hash, so each intake
    // landed on a different leaf and split it in turn) and its expiry index were two B-trees more
    // per event; a delivery now holds its own claim on its key (dedup_expires_at, NULL: none) under
    // a partial unique index, and an expired claim is let go when the key comes again. The due
    // index keeps only unsettled rows: a delivered one left it, so it no longer grows with history.
    {11, R"sql(
ALTER TABLE deliveries ADD COLUMN dedup_expires_at INTEGER;
UPDATE deliveries SET dedup_expires_at = x.expires_at
    FROM dedup x WHERE x.delivery_id = deliveries.id
    AND x.subscription_id = deliveries.subscription_id AND x.dedup_key = deliveries.dedup_key;
CREATE UNIQUE INDEX deliveries_dedup ON deliveries (subscription_id, dedup_key)
    WHERE dedup_expires_at IS NOT NULL;
DROP TABLE dedup;
DROP INDEX deliveries_by_subscription_status_due;
CREATE INDEX deliveries_unsettled ON deliveries (subscription_id, status, due_at, seq)
    WHERE status <> 'delivered';
)sql"},
}};

result<int> current_version(connection& conn) {
    auto exists = conn.prepare(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'");
    auto row = exists.step();
    if (!row) {
        return row.error();
    }
    if (!*row) {
        return 0;
    }
    auto st = conn.prepare("SELECT COALESCE(MAX(version), 0) FROM schema_migrations");
    auto r = st.step();
    if (!r) {
        return r.error();
    }
    return *r ? st.integer(0) : 0;
}

// The runner's view of a SQLite connection.
struct schema {
    connection& conn;
    result<int> read_version() { return current_version(conn); }
    result<void> exec(const char* sql) { return conn.exec(sql); }
    result<void> record(int version) {
        auto st =
            conn.prepare("INSERT INTO schema_migrations (version, applied_at) "
                         "VALUES (?1, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))");
        st.bind(1, version);
        return st.run();
    }
    std::string last_error() const { return conn.last_error(); }
    void rollback() { conn.exec("ROLLBACK"); }
    void rollback_if_open() {
        if (conn.in_transaction()) {
            rollback();
        }
    }
};

// IMMEDIATE: the write lock from the start, so a second process waits here, then re-reads.
constexpr std::array<store_codec::opening_step, 2> opening{{
    {"cannot start migration", "BEGIN IMMEDIATE"},
    {"cannot create schema_migrations",
     "CREATE TABLE IF NOT EXISTS schema_migrations ("
     "version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)"},
}};

} // namespace

int latest_schema_version() noexcept {
    return migrations.back().version;
}

result<void, error_info> migrate(connection& conn) {
    schema db{conn};
    return store_codec::run_migrations(db, migrations, opening);
}

result<void, error_info> migrate_to(connection& conn, int version) {
    if (version < 1 || version > latest_schema_version()) {
        return error_info{errc::invalid_argument, "no schema version " + std::to_string(version)};
    }
    schema db{conn};
    return store_codec::run_migrations(
        db, std::span<const migration>(migrations.data(), static_cast<std::size_t>(version)),
        opening);
}

} // namespace wopbridge::sqlite
