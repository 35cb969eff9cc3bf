#pragma once
// Versioned schema of the SQLite backend. Migrations are append-only: never edit a released step,
// add a new one. Each step runs in the same transaction as its schema_migrations row.

#include "store/sqlite/sqlite_connection.hpp"

#include <string>

namespace wopbridge::sqlite {

// The schema version this build writes.
int latest_schema_version() noexcept;

// Brings the database to latest_schema_version(). Fails with unsupported (and the reason) when
// the file was written by a newer build; does not write when the schema is already current
// (so a read-only file still opens).
result<void, error_info> migrate(connection& conn);

// Brings a database to `version` only (an earlier release's schema): for the tests that open a
// store written by a previous release.
result<void, error_info> migrate_to(connection& conn, int version);

} // namespace wopbridge::sqlite
