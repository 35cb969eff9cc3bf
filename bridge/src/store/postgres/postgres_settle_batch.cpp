// PostgreSQL store: a batch of delivered attempts settled in two statements, whatever its size.
// The per-record path (record_attempt_locked) spent most of the server's time per event in
// statement overhead (executor start, plan-cache checks, expression set-up), not in row work.
#include "store/postgres/postgres_store_impl.hpp"

#include <unordered_map>

namespace wopbridge::postgres_detail {

bool postgres_store::settles_as_batch(const std::vector<attempt_record>& recs) {
    // Failures write the subscription's log in order, state changes their own events, and a
    // replay's new run moves the dedup pointer: those go record by record.
    for (const auto& rec : recs) {
        if (rec.attempt.outcome != attempt_outcome::delivered || !rec.run ||
            rec.state_change_caused) {
            return false;
        }
    }
    return true;
}

result<void> postgres_store::record_delivered_batch(
    connection& c, const std::vector<attempt_record>& recs,
    const std::vector<std::optional<std::int64_t>>& tokens, std::vector<bool>& changed) {
    std::vector<std::string> ids;
    ids.reserve(recs.size());
    for (const auto& rec : recs) {
        ids.push_back(rec.delivery_id);
    }
    // The row locks, taken in id order on every node, order this settlement against claims and
    // settlements elsewhere, as the per-record lock does.
    // Planned per call, not prepared (both statements): a plan cached while the table was small
    // kept a sequential scan of deliveries as it grew, until the next ANALYZE.
    auto cur = c.exec(
        "SELECT id, status, subscription_id, run_id, lease_token FROM deliveries "
        "WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE",
        {postgres::text_array(ids)});
    if (!cur) {
        return cur.error();
    }
    std::unordered_map<std::string, int> row_of;
    for (int i = 0; i < cur->size(); ++i) {
        row_of.emplace(cur->text(i, 0), i);
    }
    if (row_of.size() != recs.size()) {
        return errc::not_found; // missing, or the same delivery twice: the per-record path sorts it
    }
    std::vector<std::string> run_ids, tenants, workflows, subs, statuses, upstreams;
    std::vector<std::int64_t> created, updated, event_counts, attempts, ats;
    std::vector<std::string> ev_run, ev_id, ev_type, ev_payload, ev_cause;
    std::vector<std::int64_t> ev_seq, ev_at;
    std::unordered_map<std::string, std::size_t> last_of_subscription;
    for (std::size_t i = 0; i < recs.size(); ++i) {
        const attempt_record& rec = recs[i];
        const int row = row_of.at(rec.delivery_id);
        auto status = codec::delivery_status_from(cur->text(row, 1));
        if (cur->text(row, 2) != rec.subscription_id) {
            return errc::invalid_argument;
        }
        if (!status || *status == delivery_status::delivered ||
            *status == delivery_status::dead_lettered) {
            return errc::conflict;
        }
        if (tokens[i] && (*status != delivery_status::in_flight || cur->int64(row, 4) != *tokens[i])) {
            return errc::conflict;
        }
        const run_record& run = *rec.run;
        if (run.id != cur->text(row, 3)) {
            return errc::conflict; // a new run id moves the dedup pointer: per record
        }
        const delivery_attempt attempt = codec::recorded_attempt(rec);
        std::int64_t seq = 0;
        auto add_event = [&](std::string id, std::string type, std::string payload,
                             std::string cause) {
            ev_run.push_back(run.id);
            ev_seq.push_back(seq++);
            ev_id.push_back(std::move(id));
            ev_type.push_back(std::move(type));
            ev_payload.push_back(std::move(payload));
            ev_cause.push_back(std::move(cause));
            ev_at.push_back(rec.at);
        };
        add_event(rec.attempt_event_id, std::string(codec::event_delivery_attempted),
                  codec::attempt_payload_json(attempt), {});
        add_event(rec.run_started_event_id, std::string(codec::event_run_started),
                  rec.run_started_payload_json, rec.attempt_event_id);
        for (std::size_t k = 0; k < rec.extra_run_events.size(); ++k) {
            std::string id =
                k < rec.extra_run_event_ids.size() ? rec.extra_run_event_ids[k] : std::string{};
            if (id.empty()) {
                id = rec.run_started_event_id + "." + std::to_string(k + 1);
            }
            add_event(std::move(id), rec.extra_run_events[k].first,
                      rec.extra_run_events[k].second, {});
        }
        run_ids.push_back(run.id);
        tenants.push_back(run.tenant);
        workflows.push_back(run.workflow_id);
        subs.push_back(rec.subscription_id);
        statuses.emplace_back(codec::name_of(run.status));
        upstreams.push_back(run.upstream_run_id);
        created.push_back(run.created_at);
        updated.push_back(run.updated_at);
        event_counts.push_back(seq);
        attempts.push_back(attempt.attempt);
        ats.push_back(rec.at);
        last_of_subscription[rec.subscription_id] = i; // applied in order: the last one stands
    }
    std::vector<std::string> bk_sub;
    std::vector<std::int64_t> bk_failures, bk_probe;
    for (const auto& [sub, i] : last_of_subscription) {
        bk_sub.push_back(sub);
        bk_failures.push_back(recs[i].consecutive_failures);
        bk_probe.push_back(recs[i].next_probe_at);
    }
    // The runs, their first events (sequences 0..n-1) and outbox rows, the deliveries and the
    // breaker bookkeeping (only where it moves), as record_attempt_locked writes them one by one.
    static const std::string sql =
        "WITH r AS (INSERT INTO runs (" WB_RUN_COLS ", next_event_seq) SELECT * FROM "
        "unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], "
        "$7::text[], $8::bigint[], $9::bigint[], $10::bigint[])), "
        "e AS (INSERT INTO run_events (run_id, sequence, event_id, type, payload_json, "
        "timestamp, causation_id) SELECT t.run_id, t.seq, t.event_id, t.type, t.payload, t.at, "
        "NULLIF(t.cause, '') FROM unnest($11::text[], $12::bigint[], $13::text[], $14::text[], "
        "$15::text[], $16::bigint[], $17::text[]) AS t(run_id, seq, event_id, type, payload, at, "
        "cause) RETURNING run_id, sequence, type, timestamp), "
        "ev AS (SELECT e.run_id, e.sequence, e.type, e.timestamp, i.tenant FROM e JOIN "
        "unnest($1::text[], $2::text[]) AS i(run_id, tenant) ON i.run_id = e.run_id), "
        "o AS (" +
        postgres::outbound::enqueue_cte("ev", "ev.tenant", "ev.timestamp") +
        "), "
        "u AS (UPDATE deliveries d SET status = 'delivered', attempts = v.attempts, "
        "lease_until = 0, updated_at = v.at, last_error = '', run_id = v.run_id "
        "FROM unnest($23::text[], $18::bigint[], $19::bigint[], $1::text[]) "
        "AS v(id, attempts, at, run_id) WHERE d.id = v.id RETURNING 1), "
        "s AS (UPDATE subscriptions x SET consecutive_failures = v.failures, "
        "next_probe_at = v.probe FROM unnest($20::text[], $21::bigint[], $22::bigint[]) "
        "AS v(id, failures, probe) WHERE x.id = v.id AND (x.consecutive_failures <> v.failures "
        "OR x.next_probe_at <> v.probe) RETURNING x.id) "
        "SELECT (SELECT COUNT(*) FROM u), s.id FROM (SELECT 1) one LEFT JOIN s ON true";
    std::vector<std::string> delivery_ids;
    delivery_ids.reserve(recs.size());
    for (const auto& rec : recs) {
        delivery_ids.push_back(rec.run->delivery_id);
    }
    auto r = c.exec(
        sql.c_str(),
        {postgres::text_array(run_ids), postgres::text_array(tenants),
         postgres::text_array(workflows), postgres::text_array(subs),
         postgres::text_array(delivery_ids), postgres::text_array(statuses),
         postgres::text_array(upstreams), postgres::int_array(created),
         postgres::int_array(updated), postgres::int_array(event_counts),
         postgres::text_array(ev_run), postgres::int_array(ev_seq), postgres::text_array(ev_id),
         postgres::text_array(ev_type), postgres::text_array(ev_payload),
         postgres::int_array(ev_at), postgres::text_array(ev_cause), postgres::int_array(attempts),
         postgres::int_array(ats), postgres::text_array(bk_sub), postgres::int_array(bk_failures),
         postgres::int_array(bk_probe), postgres::text_array(ids)});
    if (!r) {
        return r.error();
    }
    if (r->empty() || r->int64(0, 0) != static_cast<std::int64_t>(recs.size())) {
        return errc::not_found;
    }
    std::unordered_map<std::string, bool> moved; // subscriptions whose row the statement rewrote
    for (int i = 0; i < r->size(); ++i) {
        if (!r->is_null(i, 1)) {
            moved[r->text(i, 1)] = true;
        }
    }
    changed.assign(recs.size(), false);
    for (std::size_t i = 0; i < recs.size(); ++i) {
        changed[i] = moved.count(recs[i].subscription_id) > 0;
    }
    return {};
}

} // namespace wopbridge::postgres_detail
