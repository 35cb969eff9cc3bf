#pragma once
// The PostgreSQL backend's settings as read from `store.postgres` (postgres_backend.cpp registers
// the backend).

#include "config/config.hpp"

#include <string>

namespace wopbridge {

struct postgres_store_settings {
    std::string url;                // may hold credentials: never log
    millis node_timeout_ms = 10000; // store.postgres.nodeTimeout: a silent node's claims are freed
};

// nullptr when the configured store is not PostgreSQL.
const postgres_store_settings* postgres_settings_of(const store_config& s);

} // namespace wopbridge
