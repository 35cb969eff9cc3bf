#include "config/environment_check.hpp"

#include "core/paths.hpp"
#include "core/secret_box.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

namespace wopbridge {
namespace {

namespace fs = std::filesystem;

void check_host_key(const config& c, std::vector<config_error>& out) {
    bool exists = false;
    const std::string why = secret_box::inspect_key_file(c.host_key_file, exists);
    if (why.empty()) {
        return;
    }
    const bool set_in_file = c.host_key_file_line > 0;
    const std::string key = set_in_file ? "hostKeyFile" : "hostKeyFile (not set: the default)";
    out.push_back({c.file, c.host_key_file_line, c.host_key_file_column,
                   key + ": " + c.host_key_file + " " + why});
}

void check_sqlite_path(const config& c, std::vector<config_error>& out) {
    if (c.store.backend != store_config::backend_kind::sqlite) {
        return;
    }
    const fs::path db = c.store.sqlite_path;
    const int line = c.store.sqlite_path_line;
    const int col = c.store.sqlite_path_column;
    const std::string key = line > 0 ? "store.sqlite.path" : "store.sqlite.path (not set: the default)";
    std::error_code ec;
    if (fs::exists(db, ec)) {
        if (!fs::is_regular_file(db, ec)) {
            out.push_back({c.file, line, col,
                           key + ": " + db.string() +
                               " is not a regular file: point it at a database file"});
        } else if (::access(db.c_str(), R_OK | W_OK) != 0) {
            out.push_back({c.file, line, col,
                           key + ": " + db.string() +
                               " is not readable and writable by this user: fix its owner"});
        }
        return;
    }
    if (auto why = why_not_creatable(db.parent_path()); !why.empty()) {
        out.push_back({c.file, line, col,
                       key + ": " + db.string() + " cannot be created (" + why +
                           "): create the folder for the service user or choose another path"});
    }
}

} // namespace

std::vector<config_error> check_environment(const config& c) {
    std::vector<config_error> out;
    check_host_key(c, out);
    check_sqlite_path(c, out);
    return out;
}

} // namespace wopbridge
