#pragma once
// SQL of the bulk replay-job tables on PostgreSQL (migration 7), the counterpart of
// store/sqlite/sqlite_replay_jobs. Free functions over a connection; the caller (postgres_store)
// owns the transaction. A claim is one UPDATE: two nodes racing for an orphaned job serialize on
// its row, and the second sees the renewed lease and leaves it.

#include "store/postgres/pg_connection.hpp"
#include "store/store.hpp"

#include <string>
#include <vector>

namespace wopbridge::postgres::replay_jobs {

// One statement (the items through unnest): needs no transaction of its own.
result<void> create(connection& c, const replay_job_record& job,
                    const std::vector<std::string>& attempt_event_ids);
result<replay_job_record> get(connection& c, const std::string& id);
result<std::vector<replay_job_item>> unsettled_items(connection& c, const std::string& id);
// One statement as well: the guarded job row and the items it carries, or nothing.
result<void> update(connection& c, const replay_job_update& u);
result<std::vector<replay_job_record>> claim(connection& c, const std::string& owner, millis now,
                                             millis lease_ms);
result<int> release(connection& c, const std::string& owner);

} // namespace wopbridge::postgres::replay_jobs
