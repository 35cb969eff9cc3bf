#pragma once
// The SQLite backend's settings as read from `store.sqlite` (sqlite_backend.cpp registers the
// backend). Tests and check-store read them through sqlite_settings_of().

#include "config/config.hpp"

#include <string>

namespace wopbridge {

struct sqlite_store_settings {
    std::string path;      // absolute
    int path_line = 0;     // where store.sqlite.path is set (0: the default is used)
    int path_column = 0;
    millis commit_window_ms = 1;       // store.sqlite.commitWindow (sqlite_options)
    bool quick_startup_check = false;  // store.sqlite.startupCheck: quick (default integrity)
};

// nullptr when the configured store is not SQLite.
const sqlite_store_settings* sqlite_settings_of(const store_config& s);

} // namespace wopbridge
