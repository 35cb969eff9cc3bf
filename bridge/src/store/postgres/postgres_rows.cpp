// PostgreSQL store: rows to and from the contract types, shared by every role.
#include "store/postgres/postgres_store_impl.hpp"

namespace wopbridge::postgres_detail {

int clamp_limit(int limit) {
    return std::clamp(limit, 1, max_page_limit);
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

} // namespace wopbridge::postgres_detail
