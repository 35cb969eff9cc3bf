// The SQLite backend's registration: `store.sqlite` in the config file, the checks of its path on
// this machine, how serve and check-config open it, and the node's files beside the database.
#include "store/sqlite/sqlite_backend.hpp"

#include "config/config_reader.hpp"
#include "core/paths.hpp"
#include "store/store_backend.hpp"

#include <unistd.h>

namespace wopbridge {
namespace {

namespace fs = std::filesystem;
using config_detail::reader;

class configured_sqlite_store final : public configured_store {
public:
    explicit configured_sqlite_store(sqlite_store_settings s) : s_(std::move(s)) {}

    const sqlite_store_settings& settings() const { return s_; }

    std::string_view backend_name() const override { return "sqlite"; }
    std::string display_name() const override { return s_.path; }

    void check_environment(const config& c, std::vector<config_error>& out) const override {
        const fs::path db = s_.path;
        const std::string key = s_.path_line > 0 ? "store.sqlite.path"
                                                 : "store.sqlite.path (not set: the default)";
        auto finding = [&](const std::string& msg) {
            out.push_back({c.file, s_.path_line, s_.path_column, key + ": " + db.string() + msg});
        };
        std::error_code ec;
        if (fs::exists(db, ec)) {
            if (!fs::is_regular_file(db, ec)) {
                finding(" is not a regular file: point it at a database file");
            } else if (::access(db.c_str(), R_OK | W_OK) != 0) {
                finding(" is not readable and writable by this user: fix its owner");
            }
            return;
        }
        if (auto why = why_not_creatable(db.parent_path()); !why.empty()) {
            finding(" cannot be created (" + why +
                    "): create the folder for the service user or choose another path");
        }
    }

    bool exists() const override {
        std::error_code ec;
        return fs::exists(s_.path, ec);
    }

    result<std::unique_ptr<store>, error_info> open(store_open_mode mode) const override {
        if (mode != store_open_mode::check) {
            std::error_code ec;
            fs::create_directories(fs::path(s_.path).parent_path(), ec);
        }
        sqlite_options so;
        so.path = s_.path;
        so.init = mode == store_open_mode::serve_init;
        so.commit_window_us = static_cast<int>(s_.commit_window_ms * 1000);
        so.startup_check = s_.quick_startup_check ? sqlite_startup_check::quick
                                                  : sqlite_startup_check::integrity;
        return open_sqlite_store(so);
    }

    fs::path node_files_directory(const config&) const override {
        return fs::path(s_.path).parent_path();
    }
    bool one_process_per_store() const override { return true; }
    millis node_timeout() const override { return default_node_timeout_ms; }
    std::optional<std::string> checkable_file() const override { return s_.path; }

private:
    sqlite_store_settings s_;
};

std::shared_ptr<const configured_store> read_sqlite_section(reader& r, const YAML::Node& sq) {
    sqlite_store_settings s;
    s.path = r.resolve("var/wopbridge.db");
    if (!reader::present(sq) || !r.expect_map(sq, "store.sqlite")) {
        return std::make_shared<configured_sqlite_store>(std::move(s));
    }
    r.check_keys(sq, "store.sqlite", {"path", "commitWindow", "startupCheck"});
    std::string check;
    if (r.str(sq, "startupCheck", "store.sqlite", check, false, false)) {
        if (check == "quick") {
            s.quick_startup_check = true;
        } else if (check != "integrity") {
            r.error(sq["startupCheck"].Mark(),
                    "store.sqlite.startupCheck: expected integrity (every index checked "
                    "against its table, the default) or quick (pages only, about a tenth "
                    "of the time)");
        }
    }
    // Longer than a fraction of the 2xx latency budget buys nothing more: the batch fills.
    if (r.duration(sq, "commitWindow", "store.sqlite", s.commit_window_ms) &&
        s.commit_window_ms > 50) {
        r.error(sq["commitWindow"].Mark(),
                "store.sqlite.commitWindow: at most 50ms (every acknowledgement waits for it "
                "under load; 0 turns it off)");
    }
    std::string p;
    if (r.str(sq, "path", "store.sqlite", p, false, true)) {
        s.path = r.resolve(p);
        s.path_line = sq["path"].Mark().line + 1;
        s.path_column = sq["path"].Mark().column + 1;
    }
    return std::make_shared<configured_sqlite_store>(std::move(s));
}

} // namespace

const store_backend sqlite_store_backend{"sqlite", &read_sqlite_section};

const sqlite_store_settings* sqlite_settings_of(const store_config& s) {
    const auto* sq = dynamic_cast<const configured_sqlite_store*>(s.backend.get());
    return sq != nullptr ? &sq->settings() : nullptr;
}

} // namespace wopbridge
