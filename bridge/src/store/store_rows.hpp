#pragma once
// Rows to and from the contract types, shared by the SQLite and PostgreSQL backends: both select
// the same columns in the same order (their WB_*_COLS lists), so one mapping serves both. A `Row`
// reads the current row by column index: text(col), int64(col), integer(col) and is_null(col)
// (sqlite::statement, postgres::row_ref). Values to write go, in column order, to an `add`
// callable taking std::string_view, std::int64_t, int, bool or nullable_text; a text value lives
// only for its call (binders copy it).

#include "core/error.hpp"
#include "store/store.hpp"
#include "store/store_codec.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

// Column lists both backends select, in the order the mappings below read them (statements are
// cached by their SQL text, so these are string literals).
#define WB_SUB_COLS                                                                                \
    "id, tenant, source, state, workflow_id, dedup_enabled, retry_max_attempts, retry_backoff, "   \
    "retry_base_delay_ms, retry_max_delay_ms, retry_jitter, breaker_failure_threshold, "           \
    "breaker_probe_interval_ms, verification, webhook_id, secret_fingerprint, sealed_secret, "     \
    "schedule_cron, schedule_time_zone, connector, connector_settings_json, origin, "              \
    "consecutive_failures, next_probe_at, created_at, updated_at, when_not_active, "               \
    "max_concurrency"
// What a config-file subscription's upsert overwrites (state, failures and created_at are the
// store's own): the same ON CONFLICT clause in both dialects.
#define WB_SUB_CONFIG_UPSERT                                                                       \
    "ON CONFLICT (id) DO UPDATE SET tenant = excluded.tenant, "                                    \
    "source = excluded.source, workflow_id = excluded.workflow_id, "                               \
    "dedup_enabled = excluded.dedup_enabled, "                                                     \
    "retry_max_attempts = excluded.retry_max_attempts, "                                           \
    "retry_backoff = excluded.retry_backoff, "                                                     \
    "retry_base_delay_ms = excluded.retry_base_delay_ms, "                                         \
    "retry_max_delay_ms = excluded.retry_max_delay_ms, "                                           \
    "retry_jitter = excluded.retry_jitter, "                                                       \
    "breaker_failure_threshold = excluded.breaker_failure_threshold, "                             \
    "breaker_probe_interval_ms = excluded.breaker_probe_interval_ms, "                             \
    "verification = excluded.verification, webhook_id = excluded.webhook_id, "                     \
    "secret_fingerprint = excluded.secret_fingerprint, "                                           \
    "sealed_secret = excluded.sealed_secret, "                                                     \
    "schedule_cron = excluded.schedule_cron, "                                                     \
    "schedule_time_zone = excluded.schedule_time_zone, "                                           \
    "connector = excluded.connector, "                                                             \
    "connector_settings_json = excluded.connector_settings_json, "                                 \
    "origin = excluded.origin, updated_at = excluded.updated_at, "                                 \
    "when_not_active = excluded.when_not_active, "                                                 \
    "max_concurrency = excluded.max_concurrency"
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
#define WB_OWH_COLS                                                                                \
    "id, tenant, url, events_json, tags_json, sealed_secret, sealed_standard_secret, "             \
    "secret_fingerprint, state, consecutive_failures, breaker_open_until, created_at, updated_at"
#define WB_RJ_COLS                                                                                 \
    "id, tenant, subscription_id, state, rate_milli, total, replayed, delivered, failed, "         \
    "consecutive_failures, started_at, finished_at, expires_at, owner, lease_until"
#define WB_RJ_ITEM_COLS "position, attempt_event_id, delivery_id, outcome"

namespace wopbridge::store_codec {

// A value of a NULL-able text column (nullopt: NULL).
using nullable_text = std::optional<std::string_view>;

template <class Enum> result<Enum> parsed(std::optional<Enum> value) {
    if (!value) {
        return errc::internal; // a spelling this build does not know: corrupt or newer writer
    }
    return *value;
}

// WB_SUB_COLS.
template <class Row> result<subscription> read_subscription(const Row& r) {
    subscription s;
    s.id = r.text(0);
    s.tenant = r.text(1);
    auto source = parsed(source_from(r.text(2)));
    auto state = parsed(state_from(r.text(3)));
    auto backoff = parsed(backoff_from(r.text(7)));
    auto verification = parsed(verification_from(r.text(13)));
    auto origin = parsed(origin_from(r.text(21)));
    if (!source || !state || !backoff || !verification || !origin) {
        return errc::internal;
    }
    s.source = *source;
    s.state = *state;
    s.workflow_id = r.text(4);
    s.dedup_enabled = r.int64(5) != 0;
    s.retry.max_attempts = r.integer(6);
    s.retry.backoff = *backoff;
    s.retry.base_delay_ms = r.int64(8);
    s.retry.max_delay_ms = r.int64(9);
    s.retry.jitter = r.int64(10) != 0;
    s.breaker.failure_threshold = r.integer(11);
    s.breaker.probe_interval_ms = r.int64(12);
    s.verification = *verification;
    s.webhook_id = r.text(14);
    s.secret_fingerprint = r.text(15);
    s.sealed_secret = r.text(16);
    if (!r.is_null(17)) {
        s.schedule = schedule_spec{r.text(17), r.text(18)};
    }
    s.connector = r.text(19);
    s.connector_settings_json = r.text(20);
    s.origin = *origin;
    s.consecutive_failures = r.integer(22);
    s.next_probe_at = r.int64(23);
    s.created_at = r.int64(24);
    s.updated_at = r.int64(25);
    s.hold_when_not_active = r.text(26) == "hold";
    s.max_concurrency = r.integer(27);
    return s;
}

// The 28 values of WB_SUB_COLS, in order.
template <class Add> void subscription_values(const subscription& s, Add&& add) {
    add(std::string_view(s.id));
    add(std::string_view(s.tenant));
    add(name_of(s.source));
    add(name_of(s.state));
    add(std::string_view(s.workflow_id));
    add(s.dedup_enabled);
    add(s.retry.max_attempts);
    add(name_of(s.retry.backoff));
    add(s.retry.base_delay_ms);
    add(s.retry.max_delay_ms);
    add(s.retry.jitter);
    add(s.breaker.failure_threshold);
    add(s.breaker.probe_interval_ms);
    add(name_of(s.verification));
    add(std::string_view(s.webhook_id));
    add(std::string_view(s.secret_fingerprint));
    add(std::string_view(s.sealed_secret));
    add(s.schedule ? nullable_text(s.schedule->cron) : nullable_text{});
    add(s.schedule ? nullable_text(s.schedule->time_zone) : nullable_text{});
    add(std::string_view(s.connector));
    add(std::string_view(s.connector_settings_json));
    add(name_of(s.origin));
    add(s.consecutive_failures);
    add(s.next_probe_at);
    add(s.created_at);
    add(s.updated_at);
    add(std::string_view(s.hold_when_not_active ? "hold" : "refuse"));
    add(s.max_concurrency);
}

// WB_DLV_COLS; the sort key (seq) is column 11.
template <class Row> result<delivery> read_delivery(const Row& r) {
    delivery d;
    d.id = r.text(0);
    d.subscription_id = r.text(1);
    d.tenant = r.text(2);
    d.dedup_key = r.text(3);
    d.run_id = r.text(4);
    auto status = parsed(delivery_status_from(r.text(5)));
    if (!status) {
        return status.error();
    }
    d.status = *status;
    d.attempts = r.integer(6);
    d.due_at = r.int64(7);
    d.received_at = r.int64(8);
    d.updated_at = r.int64(9);
    d.last_error = r.text(10);
    return d;
}

// WB_RUN_COLS.
template <class Row> result<run_record> read_run(const Row& r) {
    run_record out;
    out.id = r.text(0);
    out.tenant = r.text(1);
    out.workflow_id = r.text(2);
    out.subscription_id = r.text(3);
    out.delivery_id = r.text(4);
    auto status = parsed(run_status_from(r.text(5)));
    if (!status) {
        return status.error();
    }
    out.status = *status;
    out.upstream_run_id = r.text(6);
    out.created_at = r.int64(7);
    out.updated_at = r.int64(8);
    return out;
}

// WB_RUN_COLS, then the dedup key of the run's delivery (column 9): a run listing's row, which
// names the dead letter a replay's run replays.
template <class Row> result<run_record> read_listed_run(const Row& r) {
    auto run = read_run(r);
    if (run) {
        run->replay_of_attempt_event_id = replay_of_dedup_key(r.text(9));
    }
    return run;
}

// event_id, type, payload_json, timestamp, sequence, causation_id (NULL: none).
template <class Row> run_event read_event(const Row& r, std::string run_id) {
    run_event e;
    e.event_id = r.text(0);
    e.run_id = std::move(run_id);
    e.type = r.text(1);
    e.payload_json = r.text(2);
    e.timestamp = r.int64(3);
    e.sequence = r.int64(4);
    e.causation_id = r.is_null(5) ? std::string{} : r.text(5);
    return e;
}

// WB_DL_COLS; the sort key (seq) is column 12.
template <class Row> result<dead_letter> read_dead_letter(const Row& r) {
    dead_letter d;
    d.subscription_id = r.text(0);
    d.attempt_event_id = r.text(1);
    d.attempt.subscription_id = d.subscription_id;
    d.attempt.dedup_key = r.text(2);
    d.attempt.attempt = r.integer(3);
    d.attempt.outcome = attempt_outcome::dead_lettered;
    auto reason = parsed(dead_letter_reason_from(r.text(4)));
    if (!reason) {
        return reason.error();
    }
    d.reason = *reason;
    if (!r.is_null(5)) {
        auto source = parsed(source_from(r.text(5)));
        auto from = parsed(state_from(r.text(6)));
        auto to = parsed(state_from(r.text(7)));
        auto why = parsed(reason_from(r.text(8)));
        if (!source || !from || !to || !why) {
            return errc::internal;
        }
        d.caused_state_change = state_change{d.subscription_id, *source, *from, *to, *why};
    }
    d.dead_lettered_at = r.int64(9);
    d.expires_at = r.int64(10);
    d.delivery_id = r.text(11);
    return d;
}

// The attempt as the subscription's log records it: of the record's subscription, naming a run
// only when delivered (the record's run when the attempt names none).
inline delivery_attempt recorded_attempt(const attempt_record& rec) {
    delivery_attempt attempt = rec.attempt;
    attempt.subscription_id = rec.subscription_id;
    if (attempt.outcome == attempt_outcome::delivered) {
        if (attempt.run_id.empty()) {
            attempt.run_id = rec.run->id;
        }
    } else {
        attempt.run_id.clear();
    }
    return attempt;
}

// ---- outbound webhooks ----

// The events_json / tags_json columns: a JSON array of strings (non-strings are skipped on read).
std::string json_string_array(const std::vector<std::string>& items);
std::vector<std::string> string_array_from_json(const std::string& text);
// An outbound state column; an unknown spelling reads as failed.
sub_state outbound_state_from(std::string_view text) noexcept;

// WB_OWH_COLS.
template <class Row> outbound_webhook read_outbound_webhook(const Row& r) {
    outbound_webhook w;
    w.id = r.text(0);
    w.tenant = r.text(1);
    w.url = r.text(2);
    w.events = string_array_from_json(r.text(3));
    w.tags = string_array_from_json(r.text(4));
    w.sealed_secret = r.text(5);
    w.sealed_standard_secret = r.text(6);
    w.secret_fingerprint = r.text(7);
    w.state = outbound_state_from(r.text(8));
    w.consecutive_failures = r.integer(9);
    w.breaker_open_until = r.int64(10);
    w.created_at = r.int64(11);
    w.updated_at = r.int64(12);
    return w;
}

// The 13 values of WB_OWH_COLS, in order.
template <class Add> void outbound_webhook_values(const outbound_webhook& w, Add&& add) {
    add(std::string_view(w.id));
    add(std::string_view(w.tenant));
    add(std::string_view(w.url));
    add(std::string_view(json_string_array(w.events)));
    add(std::string_view(json_string_array(w.tags)));
    add(std::string_view(w.sealed_secret));
    add(std::string_view(w.sealed_standard_secret));
    add(std::string_view(w.secret_fingerprint));
    add(to_string(w.state));
    add(w.consecutive_failures);
    add(w.breaker_open_until);
    add(w.created_at);
    add(w.updated_at);
}

// id, webhook_id, run_id, sequence, event_type, status, attempts, due_at, created_at, last_error.
template <class Row> outbound_delivery read_outbound_delivery(const Row& r) {
    outbound_delivery d;
    d.id = r.text(0);
    d.webhook_id = r.text(1);
    d.run_id = r.text(2);
    d.sequence = r.int64(3);
    d.event_type = r.text(4);
    d.status = r.text(5);
    d.attempts = r.integer(6);
    d.due_at = r.int64(7);
    d.created_at = r.int64(8);
    d.last_error = r.text(9);
    return d;
}

// from_state, to_state, reason, at, from column `first`.
template <class Row>
outbound_state_change read_outbound_state_change(const Row& r, std::string webhook_id,
                                                 int first = 0) {
    return outbound_state_change{std::move(webhook_id), outbound_state_from(r.text(first)),
                                 outbound_state_from(r.text(first + 1)), r.text(first + 2),
                                 r.int64(first + 3)};
}

// webhook_id, delivery_id, run_id, sequence, event_type, attempts, reason, last_error,
// dead_lettered_at, expires_at, seq (the page key, not read here), then the state change's
// from_state, to_state, reason, at (NULL when it caused none).
template <class Row> outbound_dead_letter read_outbound_dead_letter(const Row& r) {
    outbound_dead_letter d;
    d.webhook_id = r.text(0);
    d.delivery_id = r.text(1);
    d.run_id = r.text(2);
    d.sequence = r.int64(3);
    d.event_type = r.text(4);
    d.attempts = r.integer(5);
    d.reason = r.text(6);
    d.last_error = r.text(7);
    d.dead_lettered_at = r.int64(8);
    d.expires_at = r.int64(9);
    if (!r.is_null(11)) {
        d.state_change = read_outbound_state_change(r, d.webhook_id, 11);
    }
    return d;
}

// ---- bulk replay jobs ----

// WB_RJ_COLS (the rate is stored per 1000 seconds, as an integer).
template <class Row> replay_job_record read_replay_job(const Row& r) {
    replay_job_record j;
    j.id = r.text(0);
    j.tenant = r.text(1);
    j.subscription_id = r.text(2);
    j.state = r.text(3);
    j.rate_per_second = static_cast<double>(r.int64(4)) / 1000.0;
    j.total = r.integer(5);
    j.replayed = r.integer(6);
    j.delivered = r.integer(7);
    j.failed = r.integer(8);
    j.consecutive_failures = r.integer(9);
    j.started_at = r.int64(10);
    j.finished_at = r.int64(11);
    j.expires_at = r.int64(12);
    j.owner = r.text(13);
    j.lease_until = r.int64(14);
    return j;
}

// WB_RJ_ITEM_COLS.
template <class Row> replay_job_item read_replay_job_item(const Row& r) {
    replay_job_item it;
    it.position = r.integer(0);
    it.attempt_event_id = r.text(1);
    it.delivery_id = r.text(2);
    it.outcome = r.text(3);
    return it;
}

} // namespace wopbridge::store_codec
