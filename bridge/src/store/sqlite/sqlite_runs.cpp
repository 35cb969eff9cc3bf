// SQLite store: runs and their event logs.
#include "store/sqlite/sqlite_store_impl.hpp"

namespace wopbridge::sqlite_detail {

result<std::vector<run_record>> sqlite_store::list_runs(const run_query& q) {
    const millis before_t =
        q.before ? q.before->created_at : std::numeric_limits<std::int64_t>::max();
    // Owned strings: an empty std::string_view() would bind NULL, and NULL = '' is not true.
    const std::string status(q.status ? codec::name_of(*q.status) : std::string_view());
    const std::string before_id = q.before ? q.before->id : std::string();
    return read_transaction([&]() REQUIRES(read_mu_) -> result<std::vector<run_record>> {
        // The join reads the delivery's dedup key: a replay's is "replay:<attemptEventId>".
        auto st = reader_->prepare(
            "SELECT r.id, r.tenant, r.workflow_id, r.subscription_id, r.delivery_id, r.status, "
            "r.upstream_run_id, r.created_at, r.updated_at, COALESCE(d.dedup_key, '') "
            "FROM runs r LEFT JOIN deliveries d ON d.id = r.delivery_id "
            "WHERE r.tenant = ?1 AND (?2 = '' OR r.subscription_id = ?2) "
            "AND (?3 = '' OR r.workflow_id = ?3) AND (?4 = '' OR r.status = ?4) "
            "AND r.created_at >= ?5 AND r.created_at <= ?6 "
            "AND (r.created_at < ?7 OR (r.created_at = ?7 AND r.id < ?8)) "
            "ORDER BY r.created_at DESC, r.id DESC LIMIT ?9");
        st.bind(1, q.tenant)
            .bind(2, q.subscription_id)
            .bind(3, q.workflow_id)
            .bind(4, status)
            .bind(5, q.created_from)
            .bind(6, q.created_to)
            .bind(7, before_t)
            .bind(8, before_id)
            .bind(9, std::max(1, q.limit));
        return collect_rows(st, codec::read_listed_run<statement>);
    });
}

result<run_record> sqlite_store::get_run(const std::string& run_id) {
    return read_transaction([&]() REQUIRES(read_mu_) -> result<run_record> {
        auto st = reader_->prepare("SELECT " WB_RUN_COLS " FROM runs WHERE id = ?1");
        st.bind(1, run_id);
        return read_found_row(st, read_run);
    });
}

result<std::vector<run_event>>
sqlite_store::run_events_after(const std::string& run_id, std::int64_t after_sequence, int limit) {
    const int n = limit <= 0 ? max_page_limit : clamp_limit(limit);
    return read_transaction([&]() REQUIRES(read_mu_) -> result<std::vector<run_event>> {
        auto exists = reader_->prepare("SELECT 1 FROM runs WHERE id = ?1");
        exists.bind(1, run_id);
        auto found = exists.step();
        if (!found) {
            return found.error();
        }
        if (!*found) {
            return errc::not_found;
        }
        auto st = reader_->prepare(
            "SELECT event_id, type, payload_json, timestamp, sequence, causation_id "
            "FROM run_events WHERE run_id = ?1 AND sequence > ?2 ORDER BY sequence LIMIT ?3");
        st.bind(1, run_id).bind(2, after_sequence).bind(3, n);
        return collect_events(st, run_id);
    });
}

result<run_event> sqlite_store::append_run_event(const std::string& run_id, const std::string& type,
                                                 const std::string& payload_json,
                                                 const std::string& causation_id,
                                                 const std::string& event_id, millis at) {
    return write_transaction([&]() REQUIRES(write_mu_) -> result<run_event> {
        auto seq =
            insert_run_event(*writer_, run_id, type, payload_json, causation_id, event_id, at);
        if (!seq) {
            return seq.error();
        }
        return run_event{event_id, run_id, type, payload_json, at, *seq, causation_id};
    });
}

result<void> sqlite_store::set_run_status(const std::string& run_id, run_status status, millis at) {
    return write_transaction([&]() REQUIRES(write_mu_) -> result<void> {
        return update_run_status(run_id, status, at);
    });
}

result<run_event> sqlite_store::end_run(const std::string& run_id, const std::string& type,
                                        const std::string& payload_json,
                                        const std::string& event_id, run_status status, millis at) {
    return write_transaction([&]() REQUIRES(write_mu_) -> result<run_event> {
        WB_TRY(update_run_status(run_id, status, at));
        auto seq = insert_run_event(*writer_, run_id, type, payload_json, "", event_id, at);
        if (!seq) {
            return seq.error();
        }
        return run_event{event_id, run_id, type, payload_json, at, *seq, ""};
    });
}

result<void> sqlite_store::update_run_status(const std::string& run_id, run_status status,
                                             millis at) {
    auto st = writer_->prepare("UPDATE runs SET status = ?2, updated_at = ?3 WHERE id = ?1");
    st.bind(1, run_id).bind(2, codec::name_of(status)).bind(3, at);
    WB_TRY(st.run());
    if (writer_->changes() == 0) {
        return errc::not_found;
    }
    return {};
}

result<std::vector<run_record>> sqlite_store::list_runs_with_status(run_status status) {
    return read_transaction([&]() REQUIRES(read_mu_) -> result<std::vector<run_record>> {
        // Running runs (what a restart resumes) through the partial index runs_running (its
        // WHERE must appear literally); any other status is a scan.
        if (status == run_status::running) {
            auto st = reader_->prepare("SELECT " WB_RUN_COLS " FROM runs WHERE status = "
                                       "'running' ORDER BY created_at, id");
            return collect_rows(st, read_run);
        }
        auto st = reader_->prepare("SELECT " WB_RUN_COLS
                                   " FROM runs WHERE status = ?1 ORDER BY created_at, id");
        st.bind(1, codec::name_of(status));
        return collect_rows(st, read_run);
    });
}

result<std::vector<run_event>>
sqlite_store::subscription_events(const std::string& subscription_id) {
    return read_transaction([&]() REQUIRES(read_mu_) -> result<std::vector<run_event>> {
        auto exists = subscription_exists(*reader_, subscription_id);
        if (!exists) {
            return exists.error();
        }
        if (!*exists) {
            return errc::not_found;
        }
        auto st = reader_->prepare(
            "SELECT event_id, type, payload_json, timestamp, sequence, causation_id "
            "FROM subscription_events WHERE subscription_id = ?1 ORDER BY sequence");
        st.bind(1, subscription_id);
        return collect_events(st, {});
    });
}

result<std::vector<run_event>> sqlite_store::collect_events(statement& st,
                                                            const std::string& run_id) {
    return collect_rows(st, [&](const statement& row) { return read_event(row, run_id); });
}

} // namespace wopbridge::sqlite_detail
