#include "store/sqlite/sqlite_outbound.hpp"
#include "store/page_cursor.hpp"
#include "store/store_rows.hpp"
#include "store/store_try.hpp"

#include <algorithm>
#include <map>

#define WB_ODL_COLS                                                                                \
    "id, webhook_id, run_id, sequence, event_type, status, attempts, due_at, created_at, "         \
    "last_error"

namespace wopbridge::sqlite::outbound {
namespace {

namespace codec = store_codec;

// WB_OWH_COLS.
outbound_webhook read_webhook(const statement& st) {
    return codec::read_outbound_webhook(st);
}

// WB_ODL_COLS.
outbound_delivery read_delivery(const statement& st) {
    return codec::read_outbound_delivery(st);
}

} // namespace

result<int> enqueue(connection& c, const std::string& run_id, std::int64_t sequence, millis at) {
    // The id is derived from the dedup key so a re-enqueue cannot mint a second row.
    auto st = c.prepare(
        "INSERT OR IGNORE INTO outbound_deliveries (id, webhook_id, run_id, sequence, event_type, "
        "status, attempts, due_at, lease_until, last_error, created_at, updated_at) "
        "SELECT 'obd_' || lower(hex(randomblob(12))), w.id, e.run_id, e.sequence, e.type, "
        "'pending', 0, ?3, 0, '', ?3, ?3 "
        "FROM run_events e JOIN runs r ON r.id = e.run_id "
        "JOIN outbound_webhooks w ON w.tenant = r.tenant AND w.state = 'active' "
        "WHERE e.run_id = ?1 AND e.sequence = ?2 "
        "AND EXISTS (SELECT 1 FROM json_each(w.events_json) j WHERE j.value = e.type)");
    st.bind(1, run_id).bind(2, sequence).bind(3, at);
    WB_TRY(st.run());
    return static_cast<int>(c.changes());
}

result<void> insert_webhook(connection& c, const outbound_webhook& w) {
    auto st = c.prepare("INSERT INTO outbound_webhooks (" WB_OWH_COLS
                        ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)");
    codec::outbound_webhook_values(w, positional_binder(st));
    return st.run();
}

result<outbound_webhook> get_webhook(connection& c, const std::string& id) {
    auto st = c.prepare("SELECT " WB_OWH_COLS " FROM outbound_webhooks WHERE id = ?1");
    st.bind(1, id);
    return read_found_row(st, read_webhook);
}

result<std::vector<outbound_webhook>> list_webhooks(connection& c, const std::string& tenant) {
    auto st =
        c.prepare("SELECT " WB_OWH_COLS " FROM outbound_webhooks WHERE tenant = ?1 ORDER BY id");
    st.bind(1, tenant);
    return collect_rows(st, read_webhook);
}

result<void> delete_webhook(connection& c, const std::string& id) {
    auto st = c.prepare("DELETE FROM outbound_webhooks WHERE id = ?1");
    st.bind(1, id);
    WB_TRY(st.run());
    if (c.changes() == 0) {
        return make_error_code(errc::not_found);
    }
    return {};
}

result<std::vector<outbound_delivery>> claim_due(connection& c, millis now, int limit,
                                                 int per_webhook_limit, millis lease_ms) {
    std::vector<outbound_delivery> picked;
    if (limit <= 0) {
        return picked;
    }
    std::map<std::string, int> in_flight;
    {
        auto st = c.prepare("SELECT webhook_id, COUNT(*) FROM outbound_deliveries "
                            "WHERE status = 'in_flight' AND lease_until > ?1 GROUP BY webhook_id");
        st.bind(1, now);
        WB_TRY(
            each_row(st, [&](const statement& row) { in_flight[row.text(0)] = row.integer(1); }));
    }
    {
        // Oldest first per webhook, so one webhook's backlog keeps its order.
        auto st = c.prepare(
            "SELECT d.id, d.webhook_id, d.run_id, d.sequence, d.event_type, d.status, d.attempts, "
            "d.due_at, d.created_at, d.last_error FROM outbound_deliveries d "
            "JOIN outbound_webhooks w ON w.id = d.webhook_id "
            "WHERE w.state = 'active' AND ((d.status = 'pending' AND d.due_at <= ?1) "
            "OR (d.status = 'in_flight' AND d.lease_until <= ?1)) "
            "ORDER BY d.due_at, d.seq LIMIT ?2");
        st.bind(1, now).bind(2, limit * 8);
        WB_TRY(each_row(st, [&](statement& row) {
            if (static_cast<int>(picked.size()) >= limit) {
                return false;
            }
            auto d = read_delivery(row);
            int& n = in_flight[d.webhook_id];
            if (n < per_webhook_limit) {
                ++n;
                picked.push_back(std::move(d));
            }
            return true;
        }));
    }
    for (auto& d : picked) {
        auto st = c.prepare("UPDATE outbound_deliveries SET status = 'in_flight', "
                            "lease_until = ?2, updated_at = ?3 WHERE id = ?1");
        st.bind(1, d.id).bind(2, now + lease_ms).bind(3, now);
        WB_TRY(st.run());
        d.status = "in_flight";
    }
    return picked;
}

result<void> record_attempt(connection& c, const outbound_attempt& a) {
    {
        auto st =
            c.prepare("UPDATE outbound_deliveries SET status = ?2, attempts = attempts + ?3, "
                      "due_at = CASE WHEN ?2 = 'pending' THEN ?4 ELSE due_at END, lease_until = 0, "
                      "last_error = ?5, updated_at = ?6 WHERE id = ?1");
        st.bind(1, a.delivery_id)
            .bind(2, a.status)
            .bind(3, a.counted_attempt ? 1 : 0)
            .bind(4, a.next_due_at)
            .bind(5, a.error)
            .bind(6, a.at);
        WB_TRY(st.run());
        if (c.changes() == 0) {
            return make_error_code(errc::not_found); // the webhook was deleted meanwhile
        }
    }
    if (a.failure) {
        auto st = c.prepare("INSERT INTO outbound_failures (webhook_id, at) VALUES (?1, ?2)");
        st.bind(1, a.webhook_id).bind(2, a.at);
        WB_TRY(st.run());
    }
    {
        auto st = c.prepare("UPDATE outbound_webhooks SET consecutive_failures = ?2, "
                            "breaker_open_until = ?3, updated_at = ?4 WHERE id = ?1");
        st.bind(1, a.webhook_id)
            .bind(2, a.consecutive_failures)
            .bind(3, a.breaker_open_until)
            .bind(4, a.at);
        WB_TRY(st.run());
    }
    std::int64_t change_seq = -1;
    if (a.state_change) {
        const auto& sc = *a.state_change;
        auto up = c.prepare("UPDATE outbound_webhooks SET state = ?2, updated_at = ?4 "
                            "WHERE id = ?1 AND state = ?3");
        up.bind(1, sc.webhook_id)
            .bind(2, to_string(sc.to))
            .bind(3, to_string(sc.from))
            .bind(4, sc.at);
        WB_TRY(up.run());
        if (c.changes() == 1) {
            auto st = c.prepare("INSERT INTO outbound_state_changes (webhook_id, from_state, "
                                "to_state, reason, at) VALUES (?1, ?2, ?3, ?4, ?5) RETURNING seq");
            st.bind(1, sc.webhook_id)
                .bind(2, to_string(sc.from))
                .bind(3, to_string(sc.to))
                .bind(4, sc.reason)
                .bind(5, sc.at);
            auto row = st.step();
            if (!row) {
                return row.error();
            }
            change_seq = st.int64(0);
            WB_TRY(st.run());
        }
    }
    if (a.status == "dead_lettered") {
        auto st = c.prepare(
            "INSERT INTO outbound_dead_letters (webhook_id, delivery_id, run_id, sequence, "
            "event_type, attempts, reason, last_error, state_change_seq, dead_lettered_at, "
            "expires_at) SELECT webhook_id, id, run_id, sequence, event_type, attempts, "
            "'retries_exhausted', last_error, ?2, ?3, ?4 FROM outbound_deliveries WHERE id = ?1");
        st.bind(1, a.delivery_id);
        if (change_seq >= 0) {
            st.bind(2, change_seq);
        } else {
            st.bind_null(2);
        }
        st.bind(3, a.at).bind(4, a.dead_letter_expires_at);
        WB_TRY(st.run());
    }
    return {};
}

result<int> count_failures(connection& c, const std::string& webhook_id, millis since) {
    auto st =
        c.prepare("SELECT COUNT(*) FROM outbound_failures WHERE webhook_id = ?1 AND at >= ?2");
    st.bind(1, webhook_id).bind(2, since);
    auto row = st.step();
    if (!row) {
        return row.error();
    }
    return *row ? st.integer(0) : 0;
}

result<std::optional<millis>> next_due_at(connection& c) {
    auto st =
        c.prepare("SELECT MIN(CASE WHEN d.status = 'pending' THEN d.due_at ELSE d.lease_until END) "
                  "FROM outbound_deliveries d JOIN outbound_webhooks w ON w.id = d.webhook_id "
                  "WHERE w.state = 'active' AND d.status IN ('pending', 'in_flight')");
    return optional_int64(st);
}

result<std::vector<outbound_delivery>> list_deliveries(connection& c,
                                                       const std::string& webhook_id) {
    auto st = c.prepare("SELECT " WB_ODL_COLS
                        " FROM outbound_deliveries WHERE webhook_id = ?1 ORDER BY seq");
    st.bind(1, webhook_id);
    return collect_rows(st, read_delivery);
}

result<page<outbound_dead_letter>> list_dead_letters(connection& c, const std::string& webhook_id,
                                                     const page_request& req, millis now) {
    auto before = codec::outbound_page_start(req, webhook_id);
    if (!before) {
        return before.error();
    }
    int limit = std::clamp(req.limit, 1, 1000);
    auto st = c.prepare(
        "SELECT d.webhook_id, d.delivery_id, d.run_id, d.sequence, d.event_type, d.attempts, "
        "d.reason, d.last_error, d.dead_lettered_at, d.expires_at, d.seq, s.from_state, "
        "s.to_state, s.reason, s.at FROM outbound_dead_letters d "
        "LEFT JOIN outbound_state_changes s ON s.seq = d.state_change_seq "
        "WHERE d.webhook_id = ?1 AND d.seq < ?2 AND d.expires_at > ?3 "
        "ORDER BY d.seq DESC LIMIT ?4");
    st.bind(1, webhook_id).bind(2, *before).bind(3, now).bind(4, limit + 1);
    page<outbound_dead_letter> out;
    std::int64_t last_seq = 0;
    WB_TRY(each_row(st, [&](const statement& row) {
        if (static_cast<int>(out.items.size()) == limit) {
            out.next_cursor = codec::outbound_cursor(webhook_id, last_seq);
            return false;
        }
        last_seq = row.int64(10);
        out.items.push_back(codec::read_outbound_dead_letter(row));
        return true;
    }));
    return out;
}

result<std::vector<outbound_state_change>> list_state_changes(connection& c,
                                                              const std::string& webhook_id) {
    auto st = c.prepare("SELECT from_state, to_state, reason, at FROM outbound_state_changes "
                        "WHERE webhook_id = ?1 ORDER BY seq");
    st.bind(1, webhook_id);
    return collect_rows(st, [&](const statement& row) {
        return codec::read_outbound_state_change(row, webhook_id);
    });
}

} // namespace wopbridge::sqlite::outbound
