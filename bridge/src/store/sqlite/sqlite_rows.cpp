// SQLite store: rows to and from the contract types, and the event-log inserts every role shares.
#include "store/sqlite/sqlite_store_impl.hpp"

namespace wopbridge::sqlite_detail {

int clamp_limit(int limit) {
    return std::clamp(limit, 1, max_page_limit);
}

errc to_errc(const boost::system::error_code& ec) {
    if (ec.category() == bridge_category()) {
        return static_cast<errc>(ec.value());
    }
    return errc::internal;
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

} // namespace wopbridge::sqlite_detail
