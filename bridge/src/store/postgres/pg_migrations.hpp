#pragma once
// Versioned schema migrations of the PostgreSQL store. Several nodes may start at once: the
// migrations run inside one transaction holding an advisory lock, and whoever gets the lock second
// finds the work done.

#include "store/postgres/pg_connection.hpp"

#include <string>

namespace wopbridge::postgres {

int latest_schema_version() noexcept;

// Brings the database to latest_schema_version(). unsupported when the database is newer.
result<void, error_info> migrate(connection& conn);

} // namespace wopbridge::postgres
