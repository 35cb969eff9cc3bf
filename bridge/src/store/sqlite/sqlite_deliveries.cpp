// SQLite store: claiming deliveries and reading them and their dead letters back.
#include "store/page_cursor.hpp"
#include "store/sqlite/sqlite_store_impl.hpp"

namespace wopbridge::sqlite_detail {

namespace {

// Up to `limit` rows of a query asked for limit + 1 rows in key order; the extra row only says
// there is a next page, whose cursor is the last kept row's key (column `key_column`).
template <class T, class ReadRow>
result<page<T>> collect_page(statement& st, int limit, std::string_view list,
                             const std::string& subscription_id, int key_column, ReadRow read_row) {
    page<T> out;
    std::int64_t last_key = 0;
    WB_TRY(each_row(st, [&](const statement& row) -> result<bool> {
        if (out.items.size() == static_cast<std::size_t>(limit)) {
            out.next_cursor = codec::encode_cursor(list, subscription_id, last_key);
            return false;
        }
        auto item = read_row(row);
        if (!item) {
            return result<bool>(boost::system::in_place_error, item.error());
        }
        last_key = row.int64(key_column);
        out.items.push_back(std::move(*item));
        return true;
    }));
    return out;
}

} // namespace

result<std::map<std::string, delivery>>
sqlite_store::deliveries_by_dedup_key(const std::string& subscription_id,
                                      const std::vector<std::string>& keys) {
    return read_transaction([&]() REQUIRES(read_mu_) -> result<std::map<std::string, delivery>> {
        std::map<std::string, delivery> out;
        for (const auto& key : keys) {
            auto st = reader_->prepare("SELECT " WB_DLV_COLS " FROM deliveries d "
                                       "WHERE d.subscription_id = ?1 AND d.dedup_key = ?2 "
                                       "AND d.dedup_expires_at IS NOT NULL");
            st.bind(1, subscription_id).bind(2, key);
            auto row = st.step();
            if (!row) {
                return row.error();
            }
            if (*row) {
                auto d = read_delivery(st);
                if (!d) {
                    return d.error();
                }
                out.emplace(key, std::move(*d));
            }
        }
        return out;
    });
}

result<std::vector<delivery>> sqlite_store::claim_due(millis now, int limit, millis lease_ms) {
    if (limit <= 0) {
        return std::vector<delivery>{};
    }
    // Queued to the writer: the claim shares the group commit of the intakes and attempt records
    // queued with it, so the rows it marks are written once per commit, not in a transaction of
    // their own. A claim needs no fsync of its own (run_batch commits a batch of claims alone
    // without one): if it is lost, the delivery is simply pending again (nothing started without a
    // later, fsynced record_attempt, and a WAL fsync covers every frame before it).
    std::promise<result<std::vector<delivery>>> promise;
    auto future = promise.get_future();
    queued_write w = queued_claim{now, limit, lease_ms, &promise};
    if (!enqueue_write(w)) {
        return errc::shutting_down;
    }
    return future.get();
}

result<std::vector<delivery>> sqlite_store::claim_locked(millis now, int limit, millis lease_ms) {
    struct candidate {
        std::int64_t seq;
        delivery d;
        std::int64_t turn = 1; // the delivery's rank within its subscription
    };
    std::vector<candidate> picked;
    // Reads up to `n` rows of `sql` (?1 subscription, ?2 now, ?3 n) into `into`.
    auto collect = [&](const char* sql, const std::string& subscription, int n,
                       std::vector<candidate>& into) REQUIRES(write_mu_) -> result<void> {
        auto st = writer_->prepare(sql);
        st.bind(1, subscription).bind(2, now).bind(3, n);
        return each_row(st, [&](const statement& row) -> result<void> {
            auto d = read_delivery(row);
            if (!d) {
                return d.error();
            }
            into.push_back({row.int64(11), std::move(*d)});
            return {};
        });
    };
    auto subscriptions = [&](const char* sql)
                             REQUIRES(write_mu_) -> result<std::vector<std::string>> {
        auto st = writer_->prepare(sql);
        st.bind(1, now);
        return collect_rows(st, [](const statement& row) { return row.text(0); });
    };
    // Per subscription through the (subscription_id, status, due_at, seq) index: at most
    // `limit` rows each, so a backlog costs a seek, not a scan and a sort.
    auto active = active_with_room(now);
    if (!active) {
        return active.error();
    }
    // Round-robin across subscriptions (each one's oldest due delivery first, then each
    // one's second, ...), in due order within a subscription: a subscription with a large
    // due backlog (an always-failing workflow retrying) cannot take every slot ahead of the
    // others' fresh deliveries.
    for (const auto& [id, room] : *active) {
        const int n = std::min(limit, room);
        if (n <= 0) {
            continue; // maxConcurrency attempts already in flight
        }
        std::vector<candidate> own;
        WB_TRY(collect(due_queries::due_pending_of_subscription, id, n, own));
        WB_TRY(collect(due_queries::expired_leases_of_subscription, id, n, own));
        std::sort(own.begin(), own.end(), [](const candidate& a, const candidate& b) {
            return std::tie(a.d.due_at, a.seq) < std::tie(b.d.due_at, b.seq);
        });
        if (own.size() > static_cast<std::size_t>(n)) {
            own.resize(static_cast<std::size_t>(n));
        }
        std::int64_t turn = 0;
        for (auto& c : own) {
            c.turn = ++turn;
            picked.push_back(std::move(c));
        }
    }
    // Half-open probes: one delivery per failed subscription whose probe time has come
    // and which has no unexpired probe in flight.
    auto probing = subscriptions(due_queries::probe_due_subscriptions);
    if (!probing) {
        return probing.error();
    }
    for (const auto& id : *probing) {
        std::vector<candidate> first;
        WB_TRY(collect(due_queries::due_pending_of_subscription, id, 1, first));
        WB_TRY(collect(due_queries::expired_leases_of_subscription, id, 1, first));
        if (first.empty()) {
            continue;
        }
        auto best = std::min_element(
            first.begin(), first.end(), [](const candidate& a, const candidate& b) {
                return std::tie(a.d.due_at, a.seq) < std::tie(b.d.due_at, b.seq);
            });
        picked.push_back(std::move(*best));
    }
    std::sort(picked.begin(), picked.end(), [](const candidate& a, const candidate& b) {
        return std::tie(a.turn, a.d.due_at, a.seq) < std::tie(b.turn, b.d.due_at, b.seq);
    });
    if (picked.size() > static_cast<std::size_t>(limit)) {
        picked.resize(static_cast<std::size_t>(limit));
    }
    std::vector<delivery> out;
    out.reserve(picked.size());
    for (auto& c : picked) {
        auto st = writer_->prepare("UPDATE deliveries SET status = 'in_flight', "
                                   "lease_until = ?2, updated_at = ?3 WHERE seq = ?1");
        st.bind(1, c.seq).bind(2, now + lease_ms).bind(3, now);
        WB_TRY(st.run());
        c.d.status = delivery_status::in_flight;
        c.d.updated_at = now;
        out.push_back(std::move(c.d));
    }
    return out;
}

result<std::vector<std::pair<std::string, int>>> sqlite_store::active_with_room(millis now) {
    std::vector<std::pair<std::string, int>> out;
    auto st = writer_->prepare(due_queries::active_subscriptions);
    st.bind(1, now);
    WB_TRY(each_row(st, [&](const statement& row) {
        const auto cap = row.int64(1);
        const int room = cap <= 0 ? std::numeric_limits<int>::max()
                                  : static_cast<int>(std::max<std::int64_t>(0, cap - row.int64(2)));
        out.emplace_back(row.text(0), room);
    }));
    return out;
}

result<std::string> sqlite_store::delivery_content(const std::string& delivery_id) {
    return read_transaction([&]() REQUIRES(read_mu_) -> result<std::string> {
        auto st = reader_->prepare("SELECT content_json FROM deliveries WHERE id = ?1");
        st.bind(1, delivery_id);
        return read_found_row(st, [](const statement& row) { return row.text(0); });
    });
}

result<std::map<std::string, std::string>>
sqlite_store::delivery_contents(const std::vector<std::string>& delivery_ids) {
    return read_transaction([&]() REQUIRES(read_mu_) -> result<std::map<std::string, std::string>> {
        std::map<std::string, std::string> out;
        for (const auto& id : delivery_ids) {
            auto one = reader_->prepare("SELECT content_json FROM deliveries WHERE id = ?1");
            one.bind(1, id);
            auto row = one.step();
            if (!row) {
                return row.error();
            }
            if (*row) {
                out.emplace(id, one.text(0));
            }
        }
        return out;
    });
}

result<std::vector<subscription_delivery_stats>> sqlite_store::delivery_stats(millis now) {
    using stats_rows = result<std::vector<subscription_delivery_stats>>;
    return read_transaction([&]() REQUIRES(read_mu_) -> stats_rows {
        auto st = reader_->prepare(
            "SELECT subscription_id, "
            "SUM(status = 'pending'), SUM(status = 'pending' AND due_at <= ?1), "
            "SUM(status = 'in_flight'), SUM(status = 'held'), SUM(status = 'delivered'), "
            "SUM(status = 'dead_lettered'), 0 FROM deliveries GROUP BY subscription_id "
            "UNION ALL SELECT subscription_id, 0, 0, 0, 0, 0, 0, COUNT(*) FROM dead_letters "
            "WHERE expires_at > ?1 GROUP BY subscription_id ORDER BY 1");
        st.bind(1, static_cast<std::int64_t>(now));
        std::vector<subscription_delivery_stats> out;
        WB_TRY(each_row(st, [&](const statement& row) {
            auto id = row.text(0);
            if (out.empty() || out.back().subscription_id != id) {
                out.emplace_back().subscription_id = std::move(id);
            }
            auto& s = out.back();
            s.pending += row.int64(1);
            s.due += row.int64(2);
            s.in_flight += row.int64(3);
            s.held += row.int64(4);
            s.delivered += row.int64(5);
            s.dead_lettered += row.int64(6);
            s.dead_letters += row.int64(7);
        }));
        return out;
    });
}

result<std::vector<subscription_delivery_stats>> sqlite_store::outstanding_work(millis now) {
    using stats_rows = result<std::vector<subscription_delivery_stats>>;
    return read_transaction([&]() REQUIRES(read_mu_) -> stats_rows {
        // Each count is a range of deliveries_unsettled: (subscription, status
        // [, due_at]), so delivered and dead-lettered history is never read.
        auto st =
            reader_->prepare("SELECT s.id, "
                             "(SELECT COUNT(*) FROM deliveries d WHERE d.subscription_id = s.id "
                             "AND d.status = 'pending' AND d.status <> 'delivered'), "
                             "(SELECT COUNT(*) FROM deliveries d WHERE d.subscription_id = s.id "
                             "AND d.status = 'pending' AND d.status <> 'delivered' AND d.due_at <= ?1), "
                             "(SELECT COUNT(*) FROM deliveries d WHERE d.subscription_id = s.id "
                             "AND d.status = 'in_flight' AND d.status <> 'delivered'), "
                             "(SELECT COUNT(*) FROM deliveries d WHERE d.subscription_id = s.id "
                             "AND d.status = 'held' AND d.status <> 'delivered'), "
                             "(SELECT COUNT(*) FROM dead_letters x WHERE x.subscription_id = s.id "
                             "AND x.expires_at > ?1) "
                             "FROM subscriptions s ORDER BY s.id");
        st.bind(1, static_cast<std::int64_t>(now));
        std::vector<subscription_delivery_stats> out;
        WB_TRY(each_row(st, [&](const statement& row) {
            subscription_delivery_stats s{.subscription_id = row.text(0),
                                          .pending = row.int64(1),
                                          .due = row.int64(2),
                                          .in_flight = row.int64(3),
                                          .held = row.int64(4),
                                          .dead_letters = row.int64(5)};
            if (s.pending + s.in_flight + s.held + s.dead_letters > 0) {
                out.push_back(std::move(s));
            }
        }));
        return out;
    });
}

result<std::optional<millis>> sqlite_store::next_due_at() {
    return read_transaction([&]() REQUIRES(read_mu_) -> result<std::optional<millis>> {
        auto st = reader_->prepare(due_queries::next_due_at);
        return optional_int64(st);
    });
}

result<page<delivery>> sqlite_store::list_deliveries(const std::string& subscription_id,
                                                     const page_request& req) {
    auto before = codec::page_start(req, deliveries_cursor, subscription_id);
    if (!before) {
        return before.error();
    }
    const int limit = clamp_limit(req.limit);
    return read_transaction([&]() REQUIRES(read_mu_) -> result<page<delivery>> {
        auto exists = subscription_exists(*reader_, subscription_id);
        if (!exists) {
            return exists.error();
        }
        if (!*exists) {
            return errc::not_found;
        }
        auto st = reader_->prepare("SELECT " WB_DLV_COLS " FROM deliveries d "
                                   "WHERE d.subscription_id = ?1 AND d.seq < ?2 "
                                   "ORDER BY d.seq DESC LIMIT ?3");
        st.bind(1, subscription_id).bind(2, *before).bind(3, limit + 1);
        return collect_page<delivery>(st, limit, deliveries_cursor, subscription_id, 11,
                                      read_delivery);
    });
}

result<delivery> sqlite_store::get_delivery(const std::string& delivery_id) {
    return read_transaction([&]() REQUIRES(read_mu_) -> result<delivery> {
        auto st = reader_->prepare("SELECT " WB_DLV_COLS " FROM deliveries d WHERE d.id = ?1");
        st.bind(1, delivery_id);
        return read_found_row(st, read_delivery);
    });
}

result<int> sqlite_store::release_held(const std::string& subscription_id, millis now) {
    return write_transaction([&]() REQUIRES(write_mu_) -> result<int> {
        auto exists = subscription_exists(*writer_, subscription_id);
        if (!exists) {
            return exists.error();
        }
        if (!*exists) {
            return errc::not_found;
        }
        // All become due at the same instant; claim order then falls back to arrival (seq).
        auto st = writer_->prepare("UPDATE deliveries SET status = 'pending', due_at = ?2, "
                                   "updated_at = ?2 WHERE subscription_id = ?1 "
                                   "AND status = 'held' AND status <> 'delivered'");
        st.bind(1, subscription_id).bind(2, now);
        WB_TRY(st.run());
        return static_cast<int>(writer_->changes());
    });
}

result<page<dead_letter>> sqlite_store::list_dead_letters(const std::string& subscription_id,
                                                          const page_request& req, millis now) {
    auto before = codec::page_start(req, dead_letters_cursor, subscription_id);
    if (!before) {
        return before.error();
    }
    const int limit = clamp_limit(req.limit);
    return read_transaction([&]() REQUIRES(read_mu_) -> result<page<dead_letter>> {
        auto exists = subscription_exists(*reader_, subscription_id);
        if (!exists) {
            return exists.error();
        }
        if (!*exists) {
            return errc::not_found;
        }
        auto st = reader_->prepare("SELECT " WB_DL_COLS " FROM dead_letters "
                                   "WHERE subscription_id = ?1 AND seq < ?2 "
                                   "AND expires_at > ?3 ORDER BY seq DESC LIMIT ?4");
        st.bind(1, subscription_id).bind(2, *before).bind(3, now).bind(4, limit + 1);
        return collect_page<dead_letter>(st, limit, dead_letters_cursor, subscription_id, 12,
                                         read_dead_letter);
    });
}

} // namespace wopbridge::sqlite_detail
