#pragma once
// SQLite's own consistency checks, run on a store file at start (store.sqlite.startupCheck) and
// by `wopbridge check-store`. quick_check reads every page once and checks the b-trees' shape,
// records and NOT NULL/CHECK constraints; integrity_check does that and also checks each index
// against its table (a row missing from an index, a UNIQUE index holding a duplicate), which
// quick_check does not: a damaged index page leaves quick_check ok.
#include "store/store.hpp"

#include <string>
#include <vector>

namespace wopbridge::sqlite {

class connection;

struct check_report {
    std::vector<std::string> findings; // SQLite's own lines; empty when the file is ok
    std::string error;                 // the check could not run (the file cannot be read)
    double seconds = 0;
    bool ok() const noexcept { return findings.empty() && error.empty(); }
};

const char* check_name(sqlite_startup_check depth) noexcept;
// At most `max_findings` lines (SQLite stops there).
check_report run_check(connection& c, sqlite_startup_check depth, int max_findings);

} // namespace wopbridge::sqlite
