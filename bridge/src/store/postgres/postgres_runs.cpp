// PostgreSQL store: runs and their event logs.
#include "store/postgres/postgres_store_impl.hpp"

namespace wopbridge::postgres_detail {

result<std::vector<run_record>> postgres_store::list_runs(const run_query& q) {
    const std::int64_t before_t =
        q.before ? q.before->created_at : std::numeric_limits<std::int64_t>::max();
    return read([&](connection& c) -> result<std::vector<run_record>> {
        // The join reads the delivery's dedup key: a replay's is "replay:<attemptEventId>".
        auto r = c.exec(
            "SELECT r.id, r.tenant, r.workflow_id, r.subscription_id, r.delivery_id, r.status, "
            "r.upstream_run_id, r.created_at, r.updated_at, COALESCE(d.dedup_key, '') "
            "FROM runs r LEFT JOIN deliveries d ON d.id = r.delivery_id "
            "WHERE r.tenant = $1 AND ($2::text = '' OR r.subscription_id = $2::text) "
            "AND ($3::text = '' OR r.workflow_id = $3::text) "
            "AND ($4::text = '' OR r.status = $4::text) "
            "AND r.created_at >= $5::bigint AND r.created_at <= $6::bigint "
            "AND (r.created_at < $7::bigint OR (r.created_at = $7::bigint AND r.id < $8::text)) "
            "ORDER BY r.created_at DESC, r.id DESC LIMIT $9::bigint",
            {p(q.tenant), p(q.subscription_id), p(q.workflow_id),
             p(q.status ? codec::name_of(*q.status) : std::string_view()),
             p(static_cast<std::int64_t>(q.created_from)),
             p(static_cast<std::int64_t>(q.created_to)), p(before_t),
             p(q.before ? std::string_view(q.before->id) : std::string_view()),
             p(std::max(1, q.limit))});
        if (!r) {
            return r.error();
        }
        return postgres::collect_rows(*r, codec::read_listed_run<postgres::row_ref>);
    });
}

result<run_record> postgres_store::get_run(const std::string& run_id) {
    return read([&](connection& c) -> result<run_record> {
        auto r = c.exec("SELECT " WB_RUN_COLS " FROM runs WHERE id = $1", {p(run_id)});
        if (!r) {
            return r.error();
        }
        if (r->empty()) {
            return errc::not_found;
        }
        return read_run(*r, 0);
    });
}

result<std::vector<run_event>> postgres_store::run_events_after(const std::string& run_id,
                                                                std::int64_t after_sequence,
                                                                int limit) {
    const int n = limit <= 0 ? max_page_limit : clamp_limit(limit);
    return read([&](connection& c) -> result<std::vector<run_event>> {
        auto found = c.exec("SELECT 1 FROM runs WHERE id = $1", {p(run_id)});
        if (!found) {
            return found.error();
        }
        if (found->empty()) {
            return errc::not_found;
        }
        auto r = c.exec("SELECT " WB_EVENT_COLS " FROM run_events WHERE run_id = $1 "
                        "AND sequence > $2 ORDER BY sequence LIMIT $3",
                        {p(run_id), p(after_sequence), p(n)});
        if (!r) {
            return r.error();
        }
        return read_events(*r, run_id);
    });
}

result<run_event> postgres_store::append_run_event(const std::string& run_id,
                                                   const std::string& type,
                                                   const std::string& payload_json,
                                                   const std::string& causation_id,
                                                   const std::string& event_id, millis at) {
    return append(run_id, type, payload_json, causation_id, event_id, std::nullopt, at);
}

result<run_event> postgres_store::end_run(const std::string& run_id, const std::string& type,
                                          const std::string& payload_json,
                                          const std::string& event_id, run_status status,
                                          millis at) {
    return append(run_id, type, payload_json, "", event_id, status, at);
}

result<run_event> postgres_store::append(const std::string& run_id, const std::string& type,
                                         const std::string& payload_json,
                                         const std::string& causation_id,
                                         const std::string& event_id,
                                         std::optional<run_status> status, millis at) {
    return write([&](connection& c) -> result<run_event> {
        static const std::string append_sql =
            "WITH r AS (UPDATE runs SET next_event_seq = next_event_seq + 1, "
            "status = COALESCE($7::text, status), "
            "updated_at = CASE WHEN $7::text IS NULL THEN updated_at ELSE $5::bigint END "
            "WHERE id = $1 RETURNING next_event_seq - 1 AS seq, tenant), "
            "ins AS (INSERT INTO run_events (run_id, sequence, event_id, type, "
            "payload_json, timestamp, causation_id) "
            "SELECT $1, seq, $2, $3, $4, $5, $6 FROM r RETURNING run_id, sequence, type), "
            "o AS (" +
            postgres::outbound::enqueue_cte("ins", "(SELECT tenant FROM r)", "$5") +
            ") SELECT sequence FROM ins";
        const std::string status_name = status ? std::string(codec::name_of(*status)) : "";
        auto r =
            c.exec_prepared(append_sql.c_str(), {p(run_id), p(event_id), p(type), p(payload_json), p(at),
                                        p_or_null(causation_id), p_or_null(status_name)});
        if (!r) {
            return r.error();
        }
        if (r->empty()) {
            return errc::not_found;
        }
        return run_event{event_id, run_id, type, payload_json, at, r->int64(0, 0), causation_id};
    });
}

result<void> postgres_store::set_run_status(const std::string& run_id, run_status status,
                                            millis at) {
    return write([&](connection& c) -> result<void> {
        auto r = c.exec("UPDATE runs SET status = $2, updated_at = $3 WHERE id = $1",
                        {p(run_id), p(codec::name_of(status)), p(at)});
        if (!r) {
            return r.error();
        }
        if (r->affected() == 0) {
            return errc::not_found;
        }
        return {};
    });
}

result<std::vector<run_record>> postgres_store::list_runs_with_status(run_status status) {
    return read([&](connection& c) -> result<std::vector<run_record>> {
        auto r =
            c.exec("SELECT " WB_RUN_COLS " FROM runs WHERE status = $1 ORDER BY created_at, id",
                   {p(codec::name_of(status))});
        if (!r) {
            return r.error();
        }
        return postgres::collect_rows(*r, codec::read_run<postgres::row_ref>);
    });
}

result<std::vector<run_event>>
postgres_store::subscription_events(const std::string& subscription_id) {
    return read([&](connection& c) -> result<std::vector<run_event>> {
        auto exists = subscription_exists(c, subscription_id);
        if (!exists) {
            return exists.error();
        }
        if (!*exists) {
            return errc::not_found;
        }
        auto r = c.exec("SELECT " WB_EVENT_COLS " FROM subscription_events "
                        "WHERE subscription_id = $1 ORDER BY sequence",
                        {p(subscription_id)});
        if (!r) {
            return r.error();
        }
        return read_events(*r, {});
    });
}

} // namespace wopbridge::postgres_detail
