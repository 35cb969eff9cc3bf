#include "store/postgres/pg_replay_jobs.hpp"
#include "store/store_rows.hpp"

#include <cmath>

namespace wopbridge::postgres::replay_jobs {
namespace {

replay_job_record read_job(const rows& r, int i) {
    return store_codec::read_replay_job(row_ref(r, i));
}

} // namespace

result<void> create(connection& c, const replay_job_record& job,
                    const std::vector<std::string>& attempt_event_ids) {
    auto r = c.exec("WITH j AS (INSERT INTO replay_jobs (" WB_RJ_COLS ") VALUES "
                    "($1, $2, $3, $4, $5, $6, 0, 0, 0, 0, $7, 0, 0, $8, $9) RETURNING id) "
                    "INSERT INTO replay_job_items (job_id, position, attempt_event_id) "
                    "SELECT j.id, (t.n - 1)::INTEGER, t.a FROM j, "
                    "unnest($10::text[]) WITH ORDINALITY AS t (a, n)",
                    {p(job.id), p(job.tenant), p(job.subscription_id), p(job.state),
                     p(static_cast<std::int64_t>(std::llround(job.rate_per_second * 1000.0))),
                     p(static_cast<int>(attempt_event_ids.size())), p(job.started_at), p(job.owner),
                     p(job.lease_until), text_array(attempt_event_ids)});
    if (!r) {
        return r.error();
    }
    return {};
}

result<replay_job_record> get(connection& c, const std::string& id) {
    auto r = c.exec("SELECT " WB_RJ_COLS " FROM replay_jobs WHERE id = $1", {p(id)});
    if (!r) {
        return r.error();
    }
    if (r->empty()) {
        return make_error_code(errc::not_found);
    }
    return read_job(*r, 0);
}

result<std::vector<replay_job_item>> unsettled_items(connection& c, const std::string& id) {
    auto r = c.exec("SELECT " WB_RJ_ITEM_COLS " FROM replay_job_items WHERE job_id = $1 "
                    "AND outcome IN ('selected', 'replayed') ORDER BY position",
                    {p(id)});
    if (!r) {
        return r.error();
    }
    return collect_rows(*r, store_codec::read_replay_job_item<row_ref>);
}

result<void> update(connection& c, const replay_job_update& u) {
    std::vector<std::int64_t> positions;
    std::vector<std::string> deliveries;
    std::vector<std::string> outcomes;
    for (const auto& it : u.items) {
        positions.push_back(it.position);
        deliveries.push_back(it.delivery_id);
        outcomes.push_back(it.outcome);
    }
    // The items change only through the job row's guard, in the same statement: a node that lost
    // the job writes nothing at all.
    auto r = c.exec("WITH j AS (UPDATE replay_jobs SET lease_until = $3, replayed = $4, "
                    "delivered = $5, failed = $6, consecutive_failures = $7, state = $8, "
                    "finished_at = $9, expires_at = $10 "
                    "WHERE id = $1 AND owner = $2 AND state = 'running' RETURNING id), "
                    "i AS (UPDATE replay_job_items x SET delivery_id = t.d, outcome = t.o "
                    "FROM j, unnest($11::bigint[], $12::text[], $13::text[]) AS t (p, d, o) "
                    "WHERE x.job_id = j.id AND x.position = t.p RETURNING 1) "
                    "SELECT (SELECT COUNT(*) FROM j), (SELECT COUNT(*) FROM i)",
                    {p(u.job_id), p(u.owner), p(u.lease_until), p(u.replayed), p(u.delivered),
                     p(u.failed), p(u.consecutive_failures), p(u.state), p(u.finished_at),
                     p(u.expires_at), int_array(positions), text_array(deliveries),
                     text_array(outcomes)});
    if (!r) {
        return r.error();
    }
    if (r->int64(0, 0) != 1) {
        return make_error_code(errc::conflict); // taken over, finished, or gone
    }
    return {};
}

result<std::vector<replay_job_record>> claim(connection& c, const std::string& owner, millis now,
                                             millis lease_ms) {
    auto r = c.exec("UPDATE replay_jobs SET owner = $1, lease_until = $3 "
                    "WHERE state = 'running' AND lease_until <= $2 RETURNING " WB_RJ_COLS,
                    {p(owner), p(now), p(now + lease_ms)});
    if (!r) {
        return r.error();
    }
    return collect_rows(*r, store_codec::read_replay_job<row_ref>);
}

result<int> release(connection& c, const std::string& owner) {
    auto r = c.exec("UPDATE replay_jobs SET lease_until = 0 WHERE state = 'running' "
                    "AND lease_until > 0 AND owner = $1",
                    {p(owner)});
    if (!r) {
        return r.error();
    }
    return static_cast<int>(r->affected());
}

} // namespace wopbridge::postgres::replay_jobs
