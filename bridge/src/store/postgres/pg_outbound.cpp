#include "store/postgres/pg_outbound.hpp"
#include "store/page_cursor.hpp"
#include "store/store_rows.hpp"
#include "store/store_try.hpp"

#include <algorithm>
#include <tuple>

#define WB_ODL_COLS                                                                                \
    "d.id, d.webhook_id, d.run_id, d.sequence, d.event_type, d.status, d.attempts, d.due_at, "     \
    "d.created_at, d.last_error, d.seq"

namespace wopbridge::postgres::outbound {
namespace {

namespace codec = store_codec;

// WB_OWH_COLS.
outbound_webhook read_webhook(const rows& r, int i) {
    return codec::read_outbound_webhook(row_ref(r, i));
}

// Reads WB_ODL_COLS (column 10, seq, is the order key).
outbound_delivery read_delivery(const rows& r, int i) {
    return codec::read_outbound_delivery(row_ref(r, i));
}

// WB_OWH_COLS, in order.
std::vector<param> webhook_params(const outbound_webhook& w) {
    param_list out;
    codec::outbound_webhook_values(w, out);
    return std::move(out.params);
}

} // namespace

std::string enqueue_cte(const std::string& events_relation, const std::string& tenant_expr,
                        const std::string& at_param) {
    // The id is random; the unique (webhook_id, run_id, sequence) makes a re-enqueue a no-op.
    return "INSERT INTO outbound_deliveries (id, webhook_id, run_id, sequence, event_type, "
           "status, attempts, due_at, lease_until, last_error, created_at, updated_at) "
           "SELECT 'obd_' || replace(gen_random_uuid()::text, '-', ''), w.id, ev.run_id, "
           "ev.sequence, ev.type, 'pending', 0, " +
           at_param + ", 0, '', " + at_param + ", " + at_param + " FROM " + events_relation +
           " ev JOIN outbound_webhooks w ON w.tenant = " + tenant_expr +
           " AND w.state = 'active' AND w.events_json::jsonb ? ev.type "
           "ON CONFLICT (webhook_id, run_id, sequence) DO NOTHING";
}

result<int> enqueue(connection& c, const std::string& run_id, std::int64_t sequence, millis at) {
    const std::string sql =
        "WITH ev AS (SELECT e.run_id, e.sequence, e.type, r.tenant FROM run_events e "
        "JOIN runs r ON r.id = e.run_id WHERE e.run_id = $1 AND e.sequence = $2) " +
        enqueue_cte("ev", "ev.tenant", "$3");
    auto r = c.exec(sql.c_str(), {p(run_id), p(sequence), p(at)});
    if (!r) {
        return r.error();
    }
    return static_cast<int>(r->affected());
}

result<void> insert_webhook(connection& c, const outbound_webhook& w) {
    return c.run("INSERT INTO outbound_webhooks (" WB_OWH_COLS ") VALUES "
                 "($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
                 webhook_params(w));
}

result<outbound_webhook> get_webhook(connection& c, const std::string& id) {
    auto r = c.exec("SELECT " WB_OWH_COLS " FROM outbound_webhooks WHERE id = $1", {p(id)});
    if (!r) {
        return r.error();
    }
    if (r->empty()) {
        return make_error_code(errc::not_found);
    }
    return read_webhook(*r, 0);
}

result<std::vector<outbound_webhook>> list_webhooks(connection& c, const std::string& tenant) {
    auto r = c.exec("SELECT " WB_OWH_COLS " FROM outbound_webhooks WHERE tenant = $1 ORDER BY id",
                    {p(tenant)});
    if (!r) {
        return r.error();
    }
    return collect_rows(*r, codec::read_outbound_webhook<row_ref>);
}

result<void> delete_webhook(connection& c, const std::string& id) {
    auto r = c.exec("DELETE FROM outbound_webhooks WHERE id = $1", {p(id)});
    if (!r) {
        return r.error();
    }
    if (r->affected() == 0) {
        return make_error_code(errc::not_found);
    }
    return {};
}

result<std::vector<outbound_delivery>> claim_due(connection& c, millis now, int limit,
                                                 int per_webhook_limit, millis lease_ms) {
    std::vector<outbound_delivery> out;
    if (limit <= 0) {
        return out;
    }
    // The webhooks with due work, locked until commit: another node skips them, so counting
    // their in-flight rows and claiming below is one decision per webhook across the cluster.
    auto hooks = c.exec("SELECT w.id FROM outbound_webhooks w WHERE w.state = 'active' "
                        "AND EXISTS (SELECT 1 FROM outbound_deliveries d WHERE "
                        "d.webhook_id = w.id AND ((d.status = 'pending' AND d.due_at <= $1) "
                        "OR (d.status = 'in_flight' AND d.lease_until <= $1))) "
                        "ORDER BY w.id FOR NO KEY UPDATE OF w SKIP LOCKED",
                        {p(now)});
    if (!hooks) {
        return hooks.error();
    }
    if (hooks->empty()) {
        return out;
    }
    const std::vector<std::string> ids = hooks->texts(0);
    // Oldest first per webhook, so one webhook's backlog keeps its order. The quals are repeated
    // on the UPDATE so a row settled meanwhile by another node is re-checked, not taken.
    auto r = c.exec(
        "WITH cand AS (SELECT d.seq, d.webhook_id, d.due_at, ROW_NUMBER() OVER ("
        "PARTITION BY d.webhook_id ORDER BY d.due_at, d.seq) AS rn FROM outbound_deliveries d "
        "WHERE d.webhook_id = ANY($2::text[]) AND ((d.status = 'pending' AND d.due_at <= $1) "
        "OR (d.status = 'in_flight' AND d.lease_until <= $1))), "
        "busy AS (SELECT webhook_id, COUNT(*) AS n FROM outbound_deliveries "
        "WHERE webhook_id = ANY($2::text[]) AND status = 'in_flight' AND lease_until > $1 "
        "GROUP BY webhook_id), "
        "pick AS (SELECT cand.seq FROM cand LEFT JOIN busy ON busy.webhook_id = cand.webhook_id "
        "WHERE cand.rn + COALESCE(busy.n, 0) <= $3 ORDER BY cand.due_at, cand.seq LIMIT $4) "
        "UPDATE outbound_deliveries d SET status = 'in_flight', lease_until = $5, updated_at = $1 "
        "FROM pick WHERE d.seq = pick.seq AND ((d.status = 'pending' AND d.due_at <= $1) "
        "OR (d.status = 'in_flight' AND d.lease_until <= $1)) RETURNING " WB_ODL_COLS,
        {p(now), text_array(ids), p(per_webhook_limit), p(limit), p(now + lease_ms)});
    if (!r) {
        return r.error();
    }
    std::vector<std::pair<std::int64_t, outbound_delivery>> got;
    for (int i = 0; i < r->size(); ++i) {
        got.emplace_back(r->int64(i, 10), read_delivery(*r, i));
    }
    std::sort(got.begin(), got.end(), [](const auto& a, const auto& b) {
        return std::tie(a.second.due_at, a.first) < std::tie(b.second.due_at, b.first);
    });
    for (auto& g : got) {
        out.push_back(std::move(g.second));
    }
    return out;
}

result<void> record_attempt(connection& c, const outbound_attempt& a) {
    auto upd = c.exec("UPDATE outbound_deliveries SET status = $2, attempts = attempts + $3, "
                      "due_at = CASE WHEN $2 = 'pending' THEN $4 ELSE due_at END, "
                      "lease_until = 0, last_error = $5, updated_at = $6 WHERE id = $1",
                      {p(a.delivery_id), p(a.status), p(a.counted_attempt ? 1 : 0),
                       p(a.next_due_at), p(a.error), p(a.at)});
    if (!upd) {
        return upd.error();
    }
    if (upd->affected() == 0) {
        return make_error_code(errc::not_found); // the webhook was deleted meanwhile
    }
    if (a.failure) {
        WB_TRY(c.run("INSERT INTO outbound_failures (webhook_id, at) VALUES ($1, $2)",
                     {p(a.webhook_id), p(a.at)}));
    }
    WB_TRY(c.run("UPDATE outbound_webhooks SET consecutive_failures = $2, "
                 "breaker_open_until = $3, updated_at = $4 WHERE id = $1",
                 {p(a.webhook_id), p(a.consecutive_failures), p(a.breaker_open_until), p(a.at)}));
    param change_seq;
    if (a.state_change) {
        const auto& sc = *a.state_change;
        auto r = c.exec(
            "WITH u AS (UPDATE outbound_webhooks SET state = $2, updated_at = $4 "
            "WHERE id = $1 AND state = $3 RETURNING id) "
            "INSERT INTO outbound_state_changes (webhook_id, from_state, to_state, "
            "reason, at) SELECT id, $3, $2, $5, $4 FROM u RETURNING seq",
            {p(sc.webhook_id), p(to_string(sc.to)), p(to_string(sc.from)), p(sc.at), p(sc.reason)});
        if (!r) {
            return r.error();
        }
        if (!r->empty()) {
            change_seq = p(r->int64(0, 0));
        }
    }
    if (a.status == "dead_lettered") {
        WB_TRY(
            c.run("INSERT INTO outbound_dead_letters (webhook_id, delivery_id, run_id, sequence, "
                  "event_type, attempts, reason, last_error, state_change_seq, dead_lettered_at, "
                  "expires_at) SELECT webhook_id, id, run_id, sequence, event_type, attempts, "
                  "'retries_exhausted', last_error, $2::bigint, $3, $4 FROM outbound_deliveries "
                  "WHERE id = $1",
                  {p(a.delivery_id), change_seq, p(a.at), p(a.dead_letter_expires_at)}));
    }
    return {};
}

result<int> count_failures(connection& c, const std::string& webhook_id, millis since) {
    auto r = c.exec("SELECT COUNT(*) FROM outbound_failures WHERE webhook_id = $1 AND at >= $2",
                    {p(webhook_id), p(since)});
    if (!r) {
        return r.error();
    }
    return static_cast<int>(r->int64(0, 0));
}

result<std::optional<millis>> next_due_at(connection& c) {
    auto r =
        c.exec("SELECT MIN(CASE WHEN d.status = 'pending' THEN d.due_at ELSE d.lease_until END) "
               "FROM outbound_deliveries d JOIN outbound_webhooks w ON w.id = d.webhook_id "
               "WHERE w.state = 'active' AND d.status IN ('pending', 'in_flight')");
    if (!r) {
        return r.error();
    }
    if (r->empty() || r->is_null(0, 0)) {
        return std::optional<millis>{};
    }
    return std::optional<millis>{r->int64(0, 0)};
}

result<std::vector<outbound_delivery>> list_deliveries(connection& c,
                                                       const std::string& webhook_id) {
    auto r = c.exec("SELECT " WB_ODL_COLS " FROM outbound_deliveries d WHERE d.webhook_id = $1 "
                    "ORDER BY d.seq",
                    {p(webhook_id)});
    if (!r) {
        return r.error();
    }
    return collect_rows(*r, codec::read_outbound_delivery<row_ref>);
}

result<page<outbound_dead_letter>> list_dead_letters(connection& c, const std::string& webhook_id,
                                                     const page_request& req, millis now) {
    auto before = codec::outbound_page_start(req, webhook_id);
    if (!before) {
        return before.error();
    }
    const int limit = std::clamp(req.limit, 1, 1000);
    auto r = c.exec(
        "SELECT d.webhook_id, d.delivery_id, d.run_id, d.sequence, d.event_type, d.attempts, "
        "d.reason, d.last_error, d.dead_lettered_at, d.expires_at, d.seq, s.from_state, "
        "s.to_state, s.reason, s.at FROM outbound_dead_letters d "
        "LEFT JOIN outbound_state_changes s ON s.seq = d.state_change_seq "
        "WHERE d.webhook_id = $1 AND d.seq < $2 AND d.expires_at > $3 "
        "ORDER BY d.seq DESC LIMIT $4",
        {p(webhook_id), p(*before), p(now), p(limit + 1)});
    if (!r) {
        return r.error();
    }
    page<outbound_dead_letter> out;
    for (int i = 0; i < r->size(); ++i) {
        if (i == limit) {
            out.next_cursor = codec::outbound_cursor(webhook_id, r->int64(i - 1, 10));
            break;
        }
        out.items.push_back(codec::read_outbound_dead_letter(row_ref(*r, i)));
    }
    return out;
}

result<std::vector<outbound_state_change>> list_state_changes(connection& c,
                                                              const std::string& webhook_id) {
    auto r = c.exec("SELECT from_state, to_state, reason, at FROM outbound_state_changes "
                    "WHERE webhook_id = $1 ORDER BY seq",
                    {p(webhook_id)});
    if (!r) {
        return r.error();
    }
    return collect_rows(
        *r, [&](const row_ref& row) { return codec::read_outbound_state_change(row, webhook_id); });
}

} // namespace wopbridge::postgres::outbound
