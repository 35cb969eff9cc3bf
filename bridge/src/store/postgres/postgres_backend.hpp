#pragma once
// The PostgreSQL backend's settings as read from `store.postgres` (postgres_backend.cpp registers
// the backend).

#include "config/config.hpp"
#include "store/store_backend.hpp"

#include <string>

namespace wopbridge {

struct postgres_store_settings {
    std::string url;                // may hold credentials: never log
    millis node_timeout_ms = default_node_timeout_ms; // store.postgres.nodeTimeout
};

// nullptr when the configured store is not PostgreSQL.
const postgres_store_settings* postgres_settings_of(const store_config& s);

} // namespace wopbridge
