#pragma once
// A store backend as the rest of the process sees it. Each backend registers one `store_backend`
// row from its own folder (store/<backend>/<backend>_backend.cpp; store_backends.cpp lists them):
// the section it reads under `store:`, what it checks on the machine before serving, how it opens,
// and where a node keeps its files. Config, preflight (check-config), check-store and serve ask the
// configured backend; none of them branches on which one it is.

#include "config/config.hpp"
#include "core/error.hpp"
#include "store/store.hpp"

#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace YAML {
class Node;
}

namespace wopbridge {

namespace config_detail {
class reader;
}

// How long a silent node keeps its claims unless the backend's section says otherwise.
inline constexpr millis default_node_timeout_ms = 10000;

enum class store_open_mode {
    check,      // check-config, host-key: opens an existing store, creates nothing
    serve,      // serve: creates what a first start needs (the SQLite folder)
    serve_init, // serve --init: also takes an empty (0-byte) SQLite file as a new store
};

// A backend with the settings the config file gave it.
class configured_store {
public:
    virtual ~configured_store() = default;

    // The key under `store:` ("sqlite", "postgres").
    virtual std::string_view backend_name() const = 0;
    // What logs and the startup banner may name: the SQLite path, "postgres" (never a URL).
    virtual std::string display_name() const = 0;
    // What on this machine would make serving fail later (a path, its permissions), as findings
    // with file:line:col. check-config and serve report the same ones.
    virtual void check_environment(const config& c, std::vector<config_error>& out) const = 0;
    // Whether check-config has a store to open and compare with the host key (a SQLite file that
    // is not there yet is created by serve: nothing to compare).
    virtual bool exists() const = 0;
    // The reason never carries credentials.
    virtual result<std::unique_ptr<store>, error_info> open(store_open_mode mode) const = 0;
    // Where this node keeps its files beside the store: attachments, run output, the pid file.
    virtual std::filesystem::path node_files_directory(const config& c) const = 0;
    // One serve per store: serve holds its pid file locked for its life, and the claims a killed
    // predecessor held are freed at start. Otherwise several nodes share the store.
    virtual bool one_process_per_store() const = 0;
    // How long a silent node keeps its claims before the other nodes take them.
    virtual millis node_timeout() const = 0;
    // The file `wopbridge check-store` reads; nullopt when the backend checks itself, and then
    // `own_checks()` names its tools.
    virtual std::optional<std::string> checkable_file() const = 0;
    virtual std::string_view own_checks() const { return {}; }
};

struct store_backend {
    std::string_view name; // the key under `store:`
    // Reads store.<name>. An undefined `section`: the defaults (for the first, default backend
    // when the file has no store section).
    std::shared_ptr<const configured_store> (*read)(config_detail::reader& r,
                                                   const YAML::Node& section);
};

// Every backend of this build; the first is the default.
std::span<const store_backend> store_backends();

// The backends registered by store/<backend>/ (store_backends.cpp puts them in order).
extern const store_backend sqlite_store_backend;
extern const store_backend postgres_store_backend;

} // namespace wopbridge
