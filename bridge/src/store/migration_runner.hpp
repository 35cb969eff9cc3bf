#pragma once
// The schema migration runner both backends share. Read the version (without writing, so a
// read-only database that is current still opens); when behind, open the migration transaction
// (the backend's opening statements: BEGIN, a lock, schema_migrations), re-read the version under
// it (another process or node may have migrated meanwhile), apply each newer step with its
// schema_migrations row, and commit. The steps' SQL and the opening statements are per backend.

#include "core/error.hpp"

#include <span>
#include <string>

namespace wopbridge::store_codec {

struct migration {
    int version;
    const char* sql;
};

// A statement opening the migration transaction, and how its failure is reported.
struct opening_step {
    const char* what;
    const char* sql;
};

// `Db` speaks its backend's dialect:
//   result<int> read_version();          0 before schema_migrations exists
//   result<void> exec(const char* sql);  one statement or a script
//   result<void> record(int version);    the schema_migrations row of a step
//   std::string last_error();            the server's message (no parameters)
//   void rollback();  void rollback_if_open();
// Fails with unsupported (and the reason) when the database is newer than `steps`.
template <class Db>
result<void, error_info> run_migrations(Db& db, std::span<const migration> steps,
                                        std::span<const opening_step> opening) {
    const int latest = steps.back().version;
    auto too_new = [&](int v) -> error_info {
        return {errc::unsupported, "database schema version " + std::to_string(v) +
                                       " is newer than this build supports (" +
                                       std::to_string(latest) + "); upgrade wopbridge"};
    };
    auto version = db.read_version();
    if (!version) {
        return error_info{errc_of(version.error()),
                          "cannot read schema version: " + db.last_error()};
    }
    if (*version > latest) {
        return too_new(*version);
    }
    if (*version == latest) {
        return {};
    }
    auto fail = [&](const char* what, boost::system::error_code ec) -> error_info {
        error_info e{errc_of(ec), std::string(what) + ": " + db.last_error()};
        db.rollback_if_open();
        return e;
    };
    for (const auto& step : opening) {
        if (auto r = db.exec(step.sql); !r) {
            return fail(step.what, r.error());
        }
    }
    version = db.read_version();
    if (!version) {
        return fail("cannot read schema version", version.error());
    }
    if (*version > latest) {
        db.rollback();
        return too_new(*version);
    }
    for (const auto& m : steps) {
        if (m.version <= *version) {
            continue;
        }
        if (auto r = db.exec(m.sql); !r) {
            return fail("migration failed", r.error());
        }
        if (auto r = db.record(m.version); !r) {
            return fail("cannot record migration", r.error());
        }
    }
    if (auto r = db.exec("COMMIT"); !r) {
        return fail("cannot commit migration", r.error());
    }
    return {};
}

} // namespace wopbridge::store_codec
