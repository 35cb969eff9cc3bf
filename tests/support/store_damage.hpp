#pragma once
// Damage a stopped SQLite store the way a bad disk page does, but deterministically: an index
// that no longer matches its table while every page stays well-formed (so quick_check says ok and
// only integrity_check finds it). Through SQLite itself: the index is rebuilt from a definition
// that holds none of the rows (or lets duplicates in), then its stored definition is put back.
#include <string>

namespace wopbridge::testing {

// Every row of `table` missing from `index` ("row N missing from index …"). "" or why it failed.
std::string empty_an_index(const std::string& db, const std::string& index);
// Two run events sharing an event id in the UNIQUE run_events_by_event_id ("non-unique entry in
// index …"): the first run event copied under a new sequence. "" or why it failed.
std::string duplicate_a_run_event_id(const std::string& db);

} // namespace wopbridge::testing
