#pragma once
// SQL of the bulk replay-job tables (migration 8). Free functions over a connection: the caller
// (sqlite_store) owns the transaction and the connection's mutex.

#include "store/sqlite/sqlite_connection.hpp"
#include "store/store.hpp"

#include <string>
#include <vector>

namespace wopbridge::sqlite::replay_jobs {

result<void> create(connection& c, const replay_job_record& job,
                    const std::vector<std::string>& attempt_event_ids);
result<replay_job_record> get(connection& c, const std::string& id);
result<std::vector<replay_job_item>> unsettled_items(connection& c, const std::string& id);
result<void> update(connection& c, const replay_job_update& u);
result<std::vector<replay_job_record>> claim(connection& c, const std::string& owner, millis now,
                                             millis lease_ms);
result<int> release(connection& c, const std::string& owner); // "" = every lease
result<int> purge_finished(connection& c, millis now);

} // namespace wopbridge::sqlite::replay_jobs
