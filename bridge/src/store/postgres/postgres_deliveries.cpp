// PostgreSQL store: claiming deliveries and reading them and their dead letters back.
#include "store/page_cursor.hpp"
#include "store/postgres/postgres_store_impl.hpp"

namespace wopbridge::postgres_detail {

namespace {

// Up to `limit` rows of a query asked for limit + 1 rows in key order; the extra row only says
// there is a next page, whose cursor is the last kept row's key (column `key_column`).
template <class T, class ReadRow>
result<page<T>> collect_page(const rows& r, int limit, std::string_view list,
                             const std::string& subscription_id, int key_column, ReadRow read_row) {
    page<T> out;
    for (int i = 0; i < r.size(); ++i) {
        if (i == limit) {
            out.next_cursor =
                codec::encode_cursor(list, subscription_id, r.int64(i - 1, key_column));
            break;
        }
        auto item = read_row(r, i);
        if (!item) {
            return item.error();
        }
        out.items.push_back(std::move(*item));
    }
    return out;
}

} // namespace

result<std::map<std::string, delivery>>
postgres_store::deliveries_by_dedup_key(const std::string& subscription_id,
                                        const std::vector<std::string>& keys) {
    return read([&](connection& c) -> result<std::map<std::string, delivery>> {
        std::map<std::string, delivery> out;
        if (keys.empty()) {
            return out;
        }
        // One round trip for the page: the keys as a text array.
        std::string array = "{";
        for (std::size_t i = 0; i < keys.size(); ++i) {
            array += i ? ",\"" : "\"";
            for (char ch : keys[i]) {
                if (ch == '"' || ch == '\\') {
                    array += '\\';
                }
                array += ch;
            }
            array += '"';
        }
        array += '}';
        auto r = c.exec("SELECT " WB_DLV_COLS " FROM dedup x "
                        "JOIN deliveries d ON d.id = x.delivery_id "
                        "WHERE x.subscription_id = $1 AND x.dedup_key = ANY($2::text[])",
                        {p(subscription_id), p(array)});
        if (!r) {
            return r.error();
        }
        for (int i = 0; i < r->size(); ++i) {
            auto d = read_delivery(*r, i);
            if (!d) {
                return d.error();
            }
            auto key = d->dedup_key;
            out.emplace(std::move(key), std::move(*d));
        }
        return out;
    });
}

result<std::vector<delivery>> postgres_store::claim_due(millis now, int limit, millis lease_ms) {
    if (limit <= 0) {
        return std::vector<delivery>{};
    }
    std::vector<claimed> got;
    bool probe_due = false;
    // Repeatable: if a dead connection hid a committed claim, those rows stay leased until
    // their lease runs out and are claimed again then (a delay, never a double claim).
    auto first = read([&](connection& c) -> result<void> {
        got.clear();
        probe_due = false;
        auto r =
            c.exec("WITH c AS (UPDATE deliveries d SET status = 'in_flight', lease_until = $2, "
                   "updated_at = $1, lease_token = nextval('lease_tokens'), claimed_by = $4 "
                   // Per active subscription, its first $3 due rows in index order (a
                   // seek, not a pass over the backlog), plus expired leases (few), taken
                   // in turns: every subscription's oldest due row, then every one's
                   // second, ... So a subscription with a large due backlog (an
                   // always-failing workflow retrying) cannot take every slot ahead of
                   // the others' fresh deliveries. (Window functions cannot share a
                   // query level with FOR UPDATE, hence the extra layer.)
                   // maxConcurrency: a subscription takes at most `room` rows, its bound
                   // minus its unexpired leases on every node (pending and expired-lease
                   // rows alike), ranked k within it.
                   "WHERE d.seq = ANY(ARRAY(SELECT c.seq FROM (SELECT u.*, row_number() "
                   "OVER (PARTITION BY u.sub ORDER BY u.due_at, u.seq) AS k FROM ("
                   "SELECT y.seq, y.due_at, y.turn, s.id AS sub, " WB_CLAIM_ROOM " AS room "
                   "FROM subscriptions s CROSS JOIN LATERAL ("
                   "SELECT l.seq, l.due_at, row_number() OVER (ORDER BY l.due_at, l.seq) "
                   "AS turn FROM (SELECT x.seq, x.due_at FROM deliveries x "
                   "WHERE x.subscription_id = s.id AND x.status = 'pending' "
                   "AND x.due_at <= $1 ORDER BY x.due_at, x.seq "
                   "LIMIT LEAST($3, " WB_CLAIM_ROOM ") "
                   "FOR UPDATE OF x SKIP LOCKED) l) y WHERE s.state = 'active' "
                   "UNION ALL SELECT z.seq, z.due_at, row_number() OVER ("
                   "PARTITION BY z.subscription_id ORDER BY z.due_at, z.seq), z.sub, z.room "
                   "FROM (SELECT x.seq, x.due_at, x.subscription_id, s.id AS sub, " WB_CLAIM_ROOM
                   " AS room "
                   "FROM deliveries x JOIN subscriptions s ON s.id = x.subscription_id "
                   "WHERE s.state = 'active' AND x.status = 'in_flight' "
                   "AND x.lease_until <= $1 FOR UPDATE OF x SKIP LOCKED) z) u) c "
                   "WHERE c.k <= c.room ORDER BY c.turn, c.due_at, c.seq LIMIT $3)) "
                   "RETURNING " WB_DLV_COLS ", d.lease_token) "
                   "SELECT c.*, f.probe FROM (SELECT EXISTS (SELECT 1 FROM subscriptions "
                   "WHERE state = 'failed' AND next_probe_at <= $1) AS probe) f "
                   "LEFT JOIN c ON true",
                   {p(now), p(now + lease_ms), p(limit), p(node_id_)});
        if (!r) {
            return r.error();
        }
        return read_claimed(*r, got, &probe_due);
    });
    if (!first) {
        return first.error();
    }
    commits_.fetch_add(1);
    remember_leases(got, now, now + lease_ms);
    if (probe_due && got.size() < static_cast<std::size_t>(limit)) {
        std::vector<claimed> probes;
        auto second = transaction([&](connection& c) -> result<void> {
            probes.clear();
            return claim_probes(c, now, limit - static_cast<int>(got.size()), lease_ms, node_id_,
                                probes);
        });
        // The first claims are committed and ours whatever happens to the probes.
        if (second) {
            remember_leases(probes, now, now + lease_ms);
            std::move(probes.begin(), probes.end(), std::back_inserter(got));
        } else if (got.empty()) {
            return second.error();
        }
    }
    std::sort(got.begin(), got.end(), [](const claimed& a, const claimed& b) {
        return std::tie(a.d.due_at, a.seq) < std::tie(b.d.due_at, b.seq);
    });
    std::vector<delivery> out;
    out.reserve(got.size());
    for (auto& g : got) {
        out.push_back(std::move(g.d));
    }
    return out;
}

result<std::string> postgres_store::delivery_content(const std::string& delivery_id) {
    return read([&](connection& c) -> result<std::string> {
        auto r = c.exec("SELECT content_json FROM delivery_contents WHERE delivery_id = $1",
                        {p(delivery_id)});
        if (!r) {
            return r.error();
        }
        if (r->empty()) {
            return errc::not_found;
        }
        return r->text(0, 0);
    });
}

result<std::map<std::string, std::string>>
postgres_store::delivery_contents(const std::vector<std::string>& delivery_ids) {
    return read([&](connection& c) -> result<std::map<std::string, std::string>> {
        auto r = c.exec_prepared("SELECT delivery_id, content_json FROM delivery_contents "
                        "WHERE delivery_id = ANY($1::text[])",
                        {postgres::text_array(delivery_ids)});
        if (!r) {
            return r.error();
        }
        std::map<std::string, std::string> out;
        for (int i = 0; i < r->size(); ++i) {
            out.emplace(r->text(i, 0), r->text(i, 1));
        }
        return out;
    });
}

result<std::vector<subscription_delivery_stats>> postgres_store::delivery_stats(millis now) {
    return read([&](connection& c) -> result<std::vector<subscription_delivery_stats>> {
        auto r =
            c.exec("SELECT subscription_id, "
                   "COUNT(*) FILTER (WHERE status = 'pending'), "
                   "COUNT(*) FILTER (WHERE status = 'pending' AND due_at <= $1), "
                   "COUNT(*) FILTER (WHERE status = 'in_flight'), "
                   "COUNT(*) FILTER (WHERE status = 'held'), "
                   "COUNT(*) FILTER (WHERE status = 'delivered'), "
                   "COUNT(*) FILTER (WHERE status = 'dead_lettered'), 0::bigint "
                   "FROM deliveries GROUP BY subscription_id "
                   "UNION ALL SELECT subscription_id, 0, 0, 0, 0, 0, 0, COUNT(*) FROM dead_letters "
                   "WHERE expires_at > $1 GROUP BY subscription_id ORDER BY 1",
                   {p(static_cast<std::int64_t>(now))});
        if (!r) {
            return r.error();
        }
        std::vector<subscription_delivery_stats> out;
        for (int i = 0; i < r->size(); ++i) {
            auto id = r->text(i, 0);
            if (out.empty() || out.back().subscription_id != id) {
                out.emplace_back().subscription_id = std::move(id);
            }
            auto& s = out.back();
            s.pending += r->int64(i, 1);
            s.due += r->int64(i, 2);
            s.in_flight += r->int64(i, 3);
            s.held += r->int64(i, 4);
            s.delivered += r->int64(i, 5);
            s.dead_lettered += r->int64(i, 6);
            s.dead_letters += r->int64(i, 7);
        }
        return out;
    });
}

result<std::vector<subscription_delivery_stats>> postgres_store::outstanding_work(millis now) {
    return read([&](connection& c) -> result<std::vector<subscription_delivery_stats>> {
        // Ranges of deliveries_by_subscription_status_due per subscription: history is not read.
        auto r = c.exec("SELECT s.id, "
                        "(SELECT COUNT(*) FROM deliveries d WHERE d.subscription_id = s.id "
                        "AND d.status = 'pending'), "
                        "(SELECT COUNT(*) FROM deliveries d WHERE d.subscription_id = s.id "
                        "AND d.status = 'pending' AND d.due_at <= $1), "
                        "(SELECT COUNT(*) FROM deliveries d WHERE d.subscription_id = s.id "
                        "AND d.status = 'in_flight'), "
                        "(SELECT COUNT(*) FROM deliveries d WHERE d.subscription_id = s.id "
                        "AND d.status = 'held'), "
                        "(SELECT COUNT(*) FROM dead_letters x WHERE x.subscription_id = s.id "
                        "AND x.expires_at > $1) "
                        "FROM subscriptions s ORDER BY s.id",
                        {p(static_cast<std::int64_t>(now))});
        if (!r) {
            return r.error();
        }
        std::vector<subscription_delivery_stats> out;
        for (int i = 0; i < r->size(); ++i) {
            subscription_delivery_stats s{.subscription_id = r->text(i, 0),
                                          .pending = r->int64(i, 1),
                                          .due = r->int64(i, 2),
                                          .in_flight = r->int64(i, 3),
                                          .held = r->int64(i, 4),
                                          .dead_letters = r->int64(i, 5)};
            if (s.pending + s.in_flight + s.held + s.dead_letters > 0) {
                out.push_back(std::move(s));
            }
        }
        return out;
    });
}

result<std::optional<millis>> postgres_store::next_due_at() {
    return read([&](connection& c) -> result<std::optional<millis>> {
        auto r = c.exec_prepared(
            // Per subscription (its first pending row, one index seek each), never a pass
            // over the whole pending backlog; in-flight rows are few (at most what was claimed).
            "SELECT MIN(t) FROM ("
            "SELECT CASE WHEN s.state = 'failed' THEN GREATEST(p.due_at, s.next_probe_at) "
            "ELSE p.due_at END AS t FROM subscriptions s "
            "CROSS JOIN LATERAL (SELECT d.due_at FROM deliveries d "
            "WHERE d.subscription_id = s.id AND d.status = 'pending' "
            "ORDER BY d.due_at LIMIT 1) p "
            "WHERE s.state = 'active' OR (s.state = 'failed' AND "
            "NOT EXISTS (SELECT 1 FROM deliveries x WHERE x.subscription_id = s.id "
            "AND x.status = 'in_flight')) "
            // Each subscription's earliest lease, one seek each (migration 10): a bitmap scan
            // of every in-flight entry also visited each one a settlement had left dead until
            // vacuum came (and never marked them), 1.2 ms a call under load.
            "UNION ALL SELECT l.lease_until AS t FROM subscriptions s "
            "CROSS JOIN LATERAL (SELECT d.lease_until FROM deliveries d "
            "WHERE d.subscription_id = s.id AND d.status = 'in_flight' "
            "ORDER BY d.lease_until LIMIT 1) l "
            "WHERE s.state IN ('active', 'failed')) AS due",
            {});
        if (!r) {
            return r.error();
        }
        if (r->empty() || r->is_null(0, 0)) {
            return std::optional<millis>{};
        }
        return std::optional<millis>{r->int64(0, 0)};
    });
}

result<page<delivery>> postgres_store::list_deliveries(const std::string& subscription_id,
                                                       const page_request& req) {
    auto before = codec::page_start(req, deliveries_cursor, subscription_id);
    if (!before) {
        return before.error();
    }
    const int limit = clamp_limit(req.limit);
    return read([&](connection& c) -> result<page<delivery>> {
        auto exists = subscription_exists(c, subscription_id);
        if (!exists) {
            return exists.error();
        }
        if (!*exists) {
            return errc::not_found;
        }
        auto r = c.exec("SELECT " WB_DLV_COLS " FROM deliveries d "
                        "WHERE d.subscription_id = $1 AND d.seq < $2 "
                        "ORDER BY d.seq DESC LIMIT $3",
                        {p(subscription_id), p(*before), p(limit + 1)});
        if (!r) {
            return r.error();
        }
        return collect_page<delivery>(*r, limit, deliveries_cursor, subscription_id, 11,
                                      read_delivery);
    });
}

result<delivery> postgres_store::get_delivery(const std::string& delivery_id) {
    return read([&](connection& c) -> result<delivery> {
        auto r =
            c.exec("SELECT " WB_DLV_COLS " FROM deliveries d WHERE d.id = $1", {p(delivery_id)});
        if (!r) {
            return r.error();
        }
        if (r->empty()) {
            return errc::not_found;
        }
        return read_delivery(*r, 0);
    });
}

result<int> postgres_store::release_held(const std::string& subscription_id, millis now) {
    return write([&](connection& c) -> result<int> {
        // All become due at the same instant; claim order then falls back to arrival (seq).
        auto r = c.exec("WITH s AS (SELECT 1 FROM subscriptions WHERE id = $1), "
                        "u AS (UPDATE deliveries SET status = 'pending', due_at = $2, "
                        "updated_at = $2 WHERE subscription_id = $1 AND status = 'held' "
                        "RETURNING 1) "
                        "SELECT (SELECT COUNT(*) FROM s), (SELECT COUNT(*) FROM u)",
                        {p(subscription_id), p(now)});
        if (!r) {
            return r.error();
        }
        if (r->int64(0, 0) == 0) {
            return errc::not_found;
        }
        return static_cast<int>(r->int64(0, 1));
    });
}

result<page<dead_letter>> postgres_store::list_dead_letters(const std::string& subscription_id,
                                                            const page_request& req, millis now) {
    auto before = codec::page_start(req, dead_letters_cursor, subscription_id);
    if (!before) {
        return before.error();
    }
    const int limit = clamp_limit(req.limit);
    return read([&](connection& c) -> result<page<dead_letter>> {
        auto exists = subscription_exists(c, subscription_id);
        if (!exists) {
            return exists.error();
        }
        if (!*exists) {
            return errc::not_found;
        }
        auto r = c.exec("SELECT " WB_DL_COLS " FROM dead_letters "
                        "WHERE subscription_id = $1 AND seq < $2 "
                        "AND expires_at > $3 ORDER BY seq DESC LIMIT $4",
                        {p(subscription_id), p(*before), p(now), p(limit + 1)});
        if (!r) {
            return r.error();
        }
        return collect_page<dead_letter>(*r, limit, dead_letters_cursor, subscription_id, 12,
                                         read_dead_letter);
    });
}

result<void> postgres_store::read_claimed(const rows& r, std::vector<claimed>& out,
                                          bool* probe_due) {
    for (int i = 0; i < r.size(); ++i) {
        if (probe_due != nullptr && r.text(i, 13) == "t") {
            *probe_due = true;
        }
        if (r.is_null(i, 0)) {
            continue;
        }
        auto d = read_delivery(r, i);
        if (!d) {
            return d.error();
        }
        out.push_back({r.int64(i, 11), r.int64(i, 12), std::move(*d)});
    }
    return {};
}

void postgres_store::remember_leases(const std::vector<claimed>& got, millis now,
                                     millis lease_until) {
    wopbridge::lock_guard lock(lease_mu_);
    if (leases_.size() > max_remembered_leases) {
        std::erase_if(leases_, [&](const auto& e) { return e.second.until < now; });
    }
    for (const auto& g : got) {
        leases_[g.d.id] = lease{g.token, lease_until};
    }
}

result<void> postgres_store::claim_probes(connection& c, millis now, int limit, millis lease_ms,
                                          const std::string& node, std::vector<claimed>& out) {
    auto failed = c.exec("SELECT id FROM subscriptions WHERE state = 'failed' "
                         "AND next_probe_at <= $1 ORDER BY id "
                         "FOR NO KEY UPDATE SKIP LOCKED",
                         {p(now)});
    if (!failed) {
        return failed.error();
    }
    if (failed->empty()) {
        return {};
    }
    const std::vector<std::string> subs = failed->texts(0);
    auto r = c.exec(
        // Per failed subscription: the earlier of its first due pending row and its first
        // expired lease, each one index seek (a failed subscription is where a backlog grows).
        "WITH pick AS (SELECT c.seq, c.due_at FROM unnest($2::text[]) AS f(id) "
        "CROSS JOIN LATERAL (SELECT u.seq, u.due_at FROM ("
        "(SELECT y.seq, y.due_at FROM deliveries y WHERE y.subscription_id = f.id "
        "AND y.status = 'pending' AND y.due_at <= $1 ORDER BY y.due_at, y.seq LIMIT 1) "
        "UNION ALL (SELECT y.seq, y.due_at FROM deliveries y WHERE y.subscription_id = f.id "
        "AND y.status = 'in_flight' AND y.lease_until <= $1 "
        "ORDER BY y.due_at, y.seq LIMIT 1)) u ORDER BY u.due_at, u.seq LIMIT 1) c "
        "WHERE NOT EXISTS (SELECT 1 FROM deliveries x WHERE x.subscription_id = f.id "
        "AND x.status = 'in_flight' AND x.lease_until > $1)), "
        "top AS (SELECT seq FROM pick ORDER BY due_at, seq LIMIT $4) "
        "UPDATE deliveries d SET status = 'in_flight', lease_until = $3, updated_at = $1, "
        "lease_token = nextval('lease_tokens'), claimed_by = $5 FROM top "
        "WHERE d.seq = top.seq AND d.status IN ('pending', 'in_flight') "
        "RETURNING " WB_DLV_COLS ", d.lease_token",
        {p(now), postgres::text_array(subs), p(now + lease_ms), p(limit), p(node)});
    if (!r) {
        return r.error();
    }
    return read_claimed(*r, out, nullptr);
}

} // namespace wopbridge::postgres_detail
