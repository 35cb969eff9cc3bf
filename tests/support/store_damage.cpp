#include "support/store_damage.hpp"

#include <sqlite3.h>

#include <vector>

namespace wopbridge::testing {
namespace {

struct db_handle {
    sqlite3* db = nullptr;
    ~db_handle() { sqlite3_close(db); }
};

std::string exec(sqlite3* db, const std::string& sql) {
    char* err = nullptr;
    if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
        std::string why = sql.substr(0, 80) + ": " + (err ? err : "failed");
        sqlite3_free(err);
        return why;
    }
    return "";
}

std::string one_text(sqlite3* db, const std::string& sql) {
    sqlite3_stmt* st = nullptr;
    std::string out;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0) != nullptr) {
        out = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    }
    sqlite3_finalize(st);
    return out;
}

// Runs `rebuild` (which drops and re-creates `index` differently), then writes `index`'s original
// definition back into the schema, so SQLite reads the index as the original one again.
std::string rebuild_then_restore(const std::string& path, const std::string& index,
                                 const std::vector<std::string>& rebuild) {
    db_handle h;
    if (sqlite3_open(path.c_str(), &h.db) != SQLITE_OK) {
        return "cannot open " + path;
    }
    const std::string original = one_text(
        h.db, "SELECT sql FROM sqlite_schema WHERE type = 'index' AND name = '" + index + "'");
    if (original.empty()) {
        return "no index " + index;
    }
    for (const auto& sql : rebuild) {
        if (auto why = exec(h.db, sql); !why.empty()) {
            return why;
        }
    }
    std::string quoted;
    for (char c : original) {
        quoted += c == '\'' ? std::string("''") : std::string(1, c);
    }
    if (auto why = exec(h.db, "PRAGMA writable_schema=ON"); !why.empty()) {
        return why;
    }
    if (auto why = exec(h.db, "UPDATE sqlite_schema SET sql = '" + quoted + "' WHERE name = '" +
                                  index + "'");
        !why.empty()) {
        return why;
    }
    if (auto why = exec(h.db, "PRAGMA writable_schema=OFF"); !why.empty()) {
        return why;
    }
    return exec(h.db, "PRAGMA wal_checkpoint(TRUNCATE)");
}

} // namespace

std::string empty_an_index(const std::string& db, const std::string& index) {
    db_handle h;
    if (sqlite3_open(db.c_str(), &h.db) != SQLITE_OK) {
        return "cannot open " + db;
    }
    const std::string original = one_text(
        h.db, "SELECT sql FROM sqlite_schema WHERE type = 'index' AND name = '" + index + "'");
    sqlite3_close(h.db);
    h.db = nullptr;
    if (original.empty()) {
        return "no index " + index;
    }
    // The same index, partial on a condition no row meets: built empty.
    return rebuild_then_restore(db, index, {"DROP INDEX " + index, original + " WHERE 0"});
}

std::string duplicate_a_run_event_id(const std::string& db) {
    const std::string index = "run_events_by_event_id";
    db_handle h;
    if (sqlite3_open(db.c_str(), &h.db) != SQLITE_OK) {
        return "cannot open " + db;
    }
    std::string original = one_text(
        h.db, "SELECT sql FROM sqlite_schema WHERE type = 'index' AND name = '" + index + "'");
    sqlite3_close(h.db);
    h.db = nullptr;
    const auto unique = original.find("UNIQUE ");
    if (original.empty() || unique == std::string::npos) {
        return "no UNIQUE index " + index;
    }
    std::string plain = original;
    plain.erase(unique, 7);
    // A copy of the first run event under a new rowid and sequence, its event id kept.
    return rebuild_then_restore(
        db, index,
        {"DROP INDEX " + index, plain,
         "INSERT INTO run_events (run_id, sequence, event_id, type, payload_json, timestamp, "
         "causation_id) SELECT run_id, sequence + 1000, event_id, type, payload_json, timestamp, "
         "causation_id FROM run_events ORDER BY seq LIMIT 1"});
}

} // namespace wopbridge::testing
