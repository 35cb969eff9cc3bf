// PostgreSQL store: rows to and from the contract types, shared by every role.
#include "store/postgres/postgres_store_impl.hpp"
#include "store/store_rows.hpp"

namespace wopbridge::postgres_detail {

int clamp_limit(int limit) {
    return std::clamp(limit, 1, max_page_limit);
}

result<subscription> read_subscription(const rows& r, int i) {
    return codec::read_subscription(postgres::row_ref(r, i));
}

std::vector<param> subscription_params(const subscription& s) {
    postgres::param_list out;
    codec::subscription_values(s, out);
    return std::move(out.params);
}

result<delivery> read_delivery(const rows& r, int i) {
    return codec::read_delivery(postgres::row_ref(r, i));
}

result<run_record> read_run(const rows& r, int i) {
    return codec::read_run(postgres::row_ref(r, i));
}

std::vector<run_event> read_events(const rows& r, const std::string& run_id) {
    auto events = postgres::collect_rows(
        r, [&](const postgres::row_ref& row) { return codec::read_event(row, run_id); });
    return std::move(*events); // reading an event cannot fail
}

result<dead_letter> read_dead_letter(const rows& r, int i) {
    return codec::read_dead_letter(postgres::row_ref(r, i));
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
