#include "store/sqlite/sqlite_replay_jobs.hpp"
#include "store/store_rows.hpp"
#include "store/store_try.hpp"

#include <cmath>

namespace wopbridge::sqlite::replay_jobs {
namespace {

replay_job_record read_job(const statement& st) {
    return store_codec::read_replay_job(st);
}

} // namespace

result<void> create(connection& c, const replay_job_record& job,
                    const std::vector<std::string>& attempt_event_ids) {
    auto ins = c.prepare("INSERT INTO replay_jobs (" WB_RJ_COLS ") VALUES "
                         "(?1, ?2, ?3, ?4, ?5, ?6, 0, 0, 0, 0, ?7, 0, 0, ?8, ?9)");
    ins.bind(1, job.id)
        .bind(2, job.tenant)
        .bind(3, job.subscription_id)
        .bind(4, job.state)
        .bind(5, static_cast<std::int64_t>(std::llround(job.rate_per_second * 1000.0)))
        .bind(6, static_cast<int>(attempt_event_ids.size()))
        .bind(7, job.started_at)
        .bind(8, job.owner)
        .bind(9, job.lease_until);
    WB_TRY(ins.run());
    for (std::size_t i = 0; i < attempt_event_ids.size(); ++i) {
        auto item = c.prepare("INSERT INTO replay_job_items (job_id, position, attempt_event_id) "
                              "VALUES (?1, ?2, ?3)");
        item.bind(1, job.id).bind(2, static_cast<int>(i)).bind(3, attempt_event_ids[i]);
        WB_TRY(item.run());
    }
    return {};
}

result<replay_job_record> get(connection& c, const std::string& id) {
    auto st = c.prepare("SELECT " WB_RJ_COLS " FROM replay_jobs WHERE id = ?1");
    st.bind(1, id);
    return read_found_row(st, read_job);
}

result<std::vector<replay_job_item>> unsettled_items(connection& c, const std::string& id) {
    auto st = c.prepare("SELECT " WB_RJ_ITEM_COLS " FROM replay_job_items WHERE job_id = ?1 "
                        "AND outcome IN ('selected', 'replayed') ORDER BY position");
    st.bind(1, id);
    return collect_rows(st, store_codec::read_replay_job_item<statement>);
}

result<void> update(connection& c, const replay_job_update& u) {
    auto job = c.prepare("UPDATE replay_jobs SET lease_until = ?3, replayed = ?4, delivered = ?5, "
                         "failed = ?6, consecutive_failures = ?7, state = ?8, finished_at = ?9, "
                         "expires_at = ?10 "
                         "WHERE id = ?1 AND owner = ?2 AND state = 'running'");
    job.bind(1, u.job_id)
        .bind(2, u.owner)
        .bind(3, u.lease_until)
        .bind(4, u.replayed)
        .bind(5, u.delivered)
        .bind(6, u.failed)
        .bind(7, u.consecutive_failures)
        .bind(8, u.state)
        .bind(9, u.finished_at)
        .bind(10, u.expires_at);
    WB_TRY(job.run());
    if (c.changes() != 1) {
        return make_error_code(errc::conflict); // taken over, finished, or gone
    }
    for (const auto& it : u.items) {
        auto item = c.prepare("UPDATE replay_job_items SET delivery_id = ?3, outcome = ?4 "
                              "WHERE job_id = ?1 AND position = ?2");
        item.bind(1, u.job_id).bind(2, it.position).bind(3, it.delivery_id).bind(4, it.outcome);
        WB_TRY(item.run());
    }
    return {};
}

result<std::vector<replay_job_record>> claim(connection& c, const std::string& owner, millis now,
                                             millis lease_ms) {
    auto st = c.prepare("UPDATE replay_jobs SET owner = ?1, lease_until = ?3 "
                        "WHERE state = 'running' AND lease_until <= ?2 RETURNING " WB_RJ_COLS);
    st.bind(1, owner).bind(2, now).bind(3, now + lease_ms);
    return collect_rows(st, read_job);
}

result<int> release(connection& c, const std::string& owner) {
    auto st = c.prepare("UPDATE replay_jobs SET lease_until = 0 WHERE state = 'running' "
                        "AND lease_until > 0 AND (?1 = '' OR owner = ?1)");
    st.bind(1, owner);
    WB_TRY(st.run());
    return static_cast<int>(c.changes());
}

result<int> purge_finished(connection& c, millis now) {
    auto st = c.prepare("DELETE FROM replay_jobs WHERE state <> 'running' AND expires_at > 0 "
                        "AND expires_at <= ?1");
    st.bind(1, now);
    WB_TRY(st.run());
    return static_cast<int>(c.changes());
}

} // namespace wopbridge::sqlite::replay_jobs
