#include "app/preflight.hpp"

#include "app/host_key_check.hpp"
#include "config/environment_check.hpp"
#include "core/secret_box.hpp"
#include "plugins/module_loader.hpp"
#include "plugins/settings_schemas.hpp"

#include <filesystem>
#include <map>

namespace wopbridge {
namespace {

config_error at_host_key(const config& c, std::string message) {
    const std::string key = c.host_key_file_line > 0 ? "hostKeyFile" : "hostKeyFile (not set: the default)";
    return {c.file, c.host_key_file_line, c.host_key_file_column, key + ": " + std::move(message)};
}

} // namespace

std::string store_display_name(const config& c) {
    return c.store.backend == store_config::backend_kind::postgres ? "postgres"
                                                                    : c.store.sqlite_path;
}

result<std::unique_ptr<store>> open_configured_store(const config& c, bool create, error_info& why,
                                                     bool init) {
    if (c.store.backend == store_config::backend_kind::postgres) {
        postgres_options po;
        po.url = c.store.postgres_url;
        return open_postgres_store(po, why);
    }
    if (create) {
        std::error_code ec;
        std::filesystem::create_directories(std::filesystem::path(c.store.sqlite_path).parent_path(),
                                            ec);
    }
    sqlite_options so;
    so.path = c.store.sqlite_path;
    so.init = init;
    return open_sqlite_store(so, why);
}

config_error store_open_error(const config& c, const error_info& why) {
    const bool pg = c.store.backend == store_config::backend_kind::postgres;
    return {c.file, 0, 0,
            std::string("store: cannot open the ") + (pg ? "postgres" : "sqlite") +
                " store: " + why.message};
}

std::optional<config_error> check_host_key_against_store(const config& c, store& st) {
    std::error_code ec;
    if (!std::filesystem::exists(c.host_key_file, ec)) {
        auto kept = st.host_key_check();
        if (kept && !kept->empty()) {
            return at_host_key(c, c.host_key_file +
                                      " does not exist, but the store was sealed with a host key: "
                                      "restore that key file (every node of a store shares one); "
                                      "a new key would make every stored signature and dedup key "
                                      "unusable");
        }
        return std::nullopt; // serve creates it and binds the store to it
    }
    auto box = secret_box::load(c.host_key_file);
    if (!box) {
        return std::nullopt; // environment_check reported why it cannot be read
    }
    system_random_source random;
    auto verdict = unlock_data_key(st, *box, random, false);
    if (verdict && verdict->verdict == host_key_verdict::differs) {
        return at_host_key(c, wrong_host_key_message(c.host_key_file));
    }
    return std::nullopt;
}

// What serve's connector host checks before it creates an instance (module load, declared schemas,
// validate()) and before it hands a subscription over (the subscription schema). The modules are
// loaded but never created or started: check-config opens no ports.
void check_connectors(const config& c, const std::vector<std::string>& module_dirs,
                      std::vector<config_error>& problems) {
    std::map<std::string, settings_schemas> schemas;
    for (const auto& cc : c.connectors) {
        auto m = load_module(cc.module, module_dirs);
        if (!m) {
            problems.push_back({c.file, 0, 0, "connectors: " + cc.name + ": " + m.error().message});
            continue;
        }
        auto s = settings_schemas::compile(*m);
        if (!s) {
            problems.push_back({c.file, 0, 0, "connectors: " + cc.name + ": " + s.error().message});
            continue;
        }
        const std::string settings = cc.settings_json.empty() ? "{}" : cc.settings_json;
        if (auto r = s->check_config(settings, cc.name); !r) {
            problems.push_back({c.file, 0, 0, "connectors: " + r.error().message});
            continue;
        }
        if (auto r = m->validate(settings); !r) {
            problems.push_back({c.file, 0, 0, "connectors: " + cc.name + ": " + r.error().message});
            continue;
        }
        schemas.emplace(cc.name, std::move(*s));
    }
    for (const auto& sc : c.subscriptions) {
        auto it = schemas.find(sc.connector);
        if (sc.connector.empty() || it == schemas.end()) {
            continue;
        }
        if (auto r = it->second.check_subscription(sc.settings_json.empty() ? "{}" : sc.settings_json,
                                                   sc.id);
            !r) {
            problems.push_back({c.file, sc.line, sc.column, "subscriptions: " + r.error().message});
        }
    }
}

std::vector<config_error> preflight_for_check(const std::string& path, std::optional<config>& out,
                                              const env_lookup& env,
                                              const std::vector<std::string>& module_dirs) {
    auto loaded = load_config(path, env);
    if (!loaded) {
        return loaded.errors;
    }
    const config& c = *loaded.value;
    auto problems = check_environment(c);
    check_connectors(c, module_dirs, problems);
    std::error_code ec;
    const bool store_exists = c.store.backend == store_config::backend_kind::postgres ||
                              std::filesystem::exists(c.store.sqlite_path, ec);
    if (problems.empty() && store_exists) {
        error_info why;
        auto st = open_configured_store(c, false, why);
        if (!st) {
            problems.push_back(store_open_error(c, why));
        } else if (auto wrong = check_host_key_against_store(c, **st)) {
            problems.push_back(std::move(*wrong));
        }
    }
    out = std::move(loaded.value);
    return problems;
}

} // namespace wopbridge
