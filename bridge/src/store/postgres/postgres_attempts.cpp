// PostgreSQL store: recording delivery attempts (the run, dead letter and state change they cause).
#include "store/postgres/postgres_store_impl.hpp"

namespace wopbridge::postgres_detail {

result<void> postgres_store::record_attempt(const attempt_record& rec) {
    if (rec.attempt.outcome == attempt_outcome::delivered && !rec.run) {
        return errc::invalid_argument;
    }
    std::optional<std::int64_t> token;
    {
        wopbridge::lock_guard lock(lease_mu_);
        if (auto it = leases_.find(rec.delivery_id); it != leases_.end()) {
            token = it->second.token;
        }
    }
    // Forgotten only when the attempt changed the subscription's row (or failed midway): most
    // delivered attempts change nothing there, and forgetting made the next ingest read it again.
    bool changed = false;
    auto out = transaction([&](connection& c) -> result<void> {
        changed = false;
        return record_attempt_locked(c, rec, token, changed);
    });
    if (changed || !out) {
        forget_subscription(rec.subscription_id);
    }
    if (out || out.error() == errc::conflict || out.error() == errc::not_found) {
        wopbridge::lock_guard lock(lease_mu_);
        leases_.erase(rec.delivery_id);
    }
    return out;
}

std::vector<result<void>> postgres_store::record_attempts(const std::vector<attempt_record>& recs) {
    if (recs.size() <= 1) {
        return store::record_attempts(recs);
    }
    std::vector<std::optional<std::int64_t>> tokens(recs.size());
    {
        wopbridge::lock_guard lock(lease_mu_);
        for (std::size_t i = 0; i < recs.size(); ++i) {
            if (auto it = leases_.find(recs[i].delivery_id); it != leases_.end()) {
                tokens[i] = it->second.token;
            }
        }
    }
    std::vector<bool> changed(recs.size(), false);
    const bool as_batch = settles_as_batch(recs);
    auto all = transaction([&](connection& c) -> result<void> {
        changed.assign(recs.size(), false);
        if (as_batch) {
            return record_delivered_batch(c, recs, tokens, changed);
        }
        for (std::size_t i = 0; i < recs.size(); ++i) {
            if (recs[i].attempt.outcome == attempt_outcome::delivered && !recs[i].run) {
                return errc::invalid_argument;
            }
            bool ch = false;
            WB_TRY(record_attempt_locked(c, recs[i], tokens[i], ch));
            changed[i] = ch;
        }
        return {};
    });
    for (std::size_t i = 0; i < recs.size(); ++i) {
        if (changed[i] || !all) {
            forget_subscription(recs[i].subscription_id);
        }
    }
    if (all) {
        wopbridge::lock_guard lock(lease_mu_);
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

result<void> postgres_store::record_attempt_locked(connection& c, const attempt_record& rec,
                                                   std::optional<std::int64_t> token,
                                                   bool& subscription_changed) {
    // The row lock orders this settlement against claims and settlements of other nodes.
    auto cur = c.exec_prepared("SELECT status, subscription_id, run_id, lease_token FROM deliveries "
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

    const delivery_attempt attempt = codec::recorded_attempt(rec);
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
            "WHERE id = $17 RETURNING 1), "
            "dd AS (UPDATE dedup SET run_id = $1 WHERE subscription_id = $4 "
            "AND delivery_id = $17 AND run_id <> $1 AND $18), "
            // Rewritten only when the breaker's figures move: a delivered attempt of a healthy
            // subscription leaves its row (and the row lock every node's settlement would
            // queue on) alone. The delivery row, locked above, stands for the subscription
            // (deleting one cascades to its deliveries).
            "s AS (UPDATE subscriptions SET consecutive_failures = $19, next_probe_at = $20 "
            "WHERE id = $4 AND (consecutive_failures <> $19 OR next_probe_at <> $20) "
            "RETURNING 1) "
            "SELECT (SELECT COUNT(*) FROM u), (SELECT COUNT(*) FROM s)";
        auto r = c.exec_prepared(delivered_sql.c_str(), {p(run.id),
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
        subscription_changed = r->int64(0, 1) > 0;
    } else {
        subscription_changed = true; // its breaker figures and its log's sequence move
        const bool dead = attempt.outcome == attempt_outcome::dead_lettered;
        const auto& change = rec.state_change_caused;
        // The attempt event (on the subscription log), the delivery, the breaker bookkeeping
        // and, when dead-lettered, the dead letter: one statement.
        auto r = c.exec_prepared(
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
             p(codec::name_of(dead ? delivery_status::dead_lettered : delivery_status::pending)),
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
        subscription_changed = true;
        WB_TRY(apply_state_change(c, *rec.state_change_caused, rec.state_change_event_id, rec.at,
                                  rec.attempt_event_id));
    }
    return {};
}

} // namespace wopbridge::postgres_detail
