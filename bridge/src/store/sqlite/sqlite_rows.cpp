// SQLite store: rows to and from the contract types, and the event-log inserts every role shares.
#include "store/sqlite/sqlite_store_impl.hpp"
#include "store/store_rows.hpp"

#include <array>
#include <string>

namespace wopbridge::sqlite_detail {

int clamp_limit(int limit) {
    return std::clamp(limit, 1, max_page_limit);
}

result<subscription> read_subscription(const statement& st) {
    return codec::read_subscription(st);
}

void bind_subscription(statement& st, const subscription& s) {
    codec::subscription_values(s, sqlite::positional_binder(st));
}

result<delivery> read_delivery(const statement& st) {
    return codec::read_delivery(st);
}

result<run_record> read_run(const statement& st) {
    return codec::read_run(st);
}

run_event read_event(const statement& st, std::string run_id) {
    return codec::read_event(st, std::move(run_id));
}

result<dead_letter> read_dead_letter(const statement& st) {
    return codec::read_dead_letter(st);
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
    // No foreign key on run_events (migration 10): an unknown run is refused here.
    auto run = c.prepare("SELECT 1 FROM runs WHERE id = ?1");
    run.bind(1, run_id);
    auto found = run.step();
    if (!found) {
        return found.error();
    }
    if (!*found) {
        return errc::not_found;
    }
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

namespace {
// The INSERT of `rows` run events at sequences 0..rows-1, six parameters a row.
std::string new_run_log_sql(std::size_t rows) {
    std::string sql = "INSERT INTO run_events (run_id, sequence, event_id, type, payload_json, "
                      "timestamp, causation_id) VALUES ";
    for (std::size_t i = 0; i < rows; ++i) {
        sql += (i == 0 ? "(?, " : ", (?, ") + std::to_string(i) + ", ?, ?, ?, ?, ?)";
    }
    return sql;
}
} // namespace

result<void> insert_new_run_log(connection& c, const std::string& run_id,
                                const std::vector<new_run_event>& events, millis at,
                                bool outbound) {
    if (events.empty()) {
        return {};
    }
    // A run starts with 2-4 events: those texts are built once (and prepared once, cached).
    static const std::array<std::string, 8> common = [] {
        std::array<std::string, 8> texts;
        for (std::size_t i = 0; i < texts.size(); ++i) {
            texts[i] = new_run_log_sql(i + 1);
        }
        return texts;
    }();
    const std::string rare = events.size() > common.size() ? new_run_log_sql(events.size()) : "";
    auto st = c.prepare(rare.empty() ? common[events.size() - 1].c_str() : rare.c_str());
    for (std::size_t i = 0; i < events.size(); ++i) {
        const int b = static_cast<int>(i * 6 + 1);
        const auto& e = events[i];
        st.bind(b, run_id).bind(b + 1, e.event_id).bind(b + 2, e.type).bind(b + 3, e.payload);
        st.bind(b + 4, at).bind_or_null(b + 5, e.causation_id);
    }
    WB_TRY(st.run());
    if (outbound) {
        for (std::size_t i = 0; i < events.size(); ++i) {
            WB_TRY(sqlite::outbound::enqueue(c, run_id, static_cast<std::int64_t>(i), at));
        }
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
