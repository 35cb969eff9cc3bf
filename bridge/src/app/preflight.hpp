#pragma once
// What `serve` checks before it serves, shared with `check-config` so the two refuse the same
// configurations with the same message (file:line:col, the key, the fix).

#include "config/config.hpp"
#include "core/error.hpp"
#include "store/store.hpp"
#include "store/store_backend.hpp"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace wopbridge {

// Opens the configured store as `mode` says (store/store_backend.hpp). A damaged SQLite file is
// refused; so is a 0-byte one unless serve --init.
result<std::unique_ptr<store>, error_info> open_configured_store(const config& c,
                                                                 store_open_mode mode);

// "<file>: store: cannot open the <backend> store: <why>" (never the PostgreSQL URL).
config_error store_open_error(const config& c, const error_info& why);

// The host key file against the store: absent while the store was sealed with a key, or another
// key than the store's. nullopt when they agree (or the store is bound to no key yet).
std::optional<config_error> check_host_key_against_store(const config& c, store& st);

// check-config (and serve before it opens anything): the file, the machine (environment_check), then the store when it exists (a
// SQLite file not there yet is created by serve: nothing to compare). Problems, in that order.
// Each connector's module loads, its settings match the module's declared schema and pass its
// validate(), and each config subscription's settings match the subscription schema. Modules are
// loaded, never created or started (no ports opened). serve runs it too, before its host starts.
void check_connectors(const config& c, const std::vector<std::string>& module_dirs,
                      std::vector<config_error>& problems);

// `module_dirs` as serve's --module-path (empty: the default): each connector's module must load,
// and its settings and its subscriptions' settings match the module's schemas and pass validate().
std::vector<config_error> preflight_for_check(const std::string& path, std::optional<config>& out,
                                              const env_lookup& env = process_environment(),
                                              const std::vector<std::string>& module_dirs = {});

} // namespace wopbridge
