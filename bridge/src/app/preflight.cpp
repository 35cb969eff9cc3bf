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

// "/a/0/b~1c" under "connectors[0].settings" -> "connectors[0].settings.a[0].b/c".
std::string settings_key_path(const std::string& settings_path, const std::string& pointer) {
    std::string out = settings_path;
    std::size_t at = 0;
    while (at < pointer.size()) {
        const std::size_t end = std::min(pointer.find('/', at + 1), pointer.size());
        std::string token;
        for (std::size_t i = at + 1; i < end; ++i) {
            const bool escape = pointer[i] == '~' && i + 1 < end;
            token += escape ? (pointer[++i] == '1' ? '/' : '~') : pointer[i];
        }
        const bool index = !token.empty() && token.find_first_not_of("0123456789") == std::string::npos;
        out += index ? "[" + token + "]" : "." + token;
        at = end;
    }
    return out;
}

// Where the offending value was written (its key, for a key the schema does not declare), else
// its nearest ancestor's place.
source_position settings_value_position(const settings_positions& at, std::string pointer,
                                        bool key) {
    for (;;) {
        if (auto it = at.find(pointer); it != at.end()) {
            if (key && it->second.key.line > 0) {
                return it->second.key;
            }
            if (it->second.value.line > 0) {
                return it->second.value;
            }
        }
        if (pointer.empty()) {
            return {};
        }
        pointer.resize(pointer.rfind('/'));
    }
}

// A schema refusal at the value's place, with the fix; the value itself is never quoted (it may
// be a secret).
config_error settings_refusal(const config& c, const std::string& section,
                              const settings_positions& at, const std::string& settings_path,
                              const settings_violation& v, const std::string& module,
                              std::string message) {
    const std::string key = settings_key_path(settings_path, v.instance_path);
    if (v.keyword == "additionalProperties") {
        message += "; fix: remove " + key + " (module " + module + "'s schema does not declare it)";
    } else if (v.keyword == "required") {
        message += "; fix: add the missing setting under " + key;
    } else {
        message += "; fix: change " + key + " to a value module " + module + "'s schema allows";
    }
    const auto pos = settings_value_position(at, v.instance_path, v.keyword == "additionalProperties");
    return {c.file, pos.line, pos.column, section + ": " + message};
}

} // namespace

result<std::unique_ptr<store>, error_info> open_configured_store(const config& c,
                                                                 store_open_mode mode) {
    return c.store.backend->open(mode);
}

config_error store_open_error(const config& c, const error_info& why) {
    return {c.file, 0, 0,
            "store: cannot open the " + std::string(c.store.backend->backend_name()) +
                " store: " + why.message};
}

std::optional<config_error> check_host_key_against_store(const config& c, store& st) {
    std::error_code ec;
    if (!std::filesystem::exists(c.host_key_file, ec)) {
        auto kept = st.host_key_check();
        // A node sharing this key file may have created it (atomically, link(2)) and bound the
        // store between the two reads: then the file is there now, and the bridge compares it
        // with the store when it binds (bridge::bind_host_key).
        if (kept && !kept->empty() && !std::filesystem::exists(c.host_key_file, ec)) {
            return at_host_key(c, c.host_key_file +
                                      " does not exist, but the store was sealed with a host key: "
                                      "restore that key file (every node of a store shares one); "
                                      "a new key would make every stored signature and dedup key "
                                      "unusable");
        }
        return std::nullopt; // serve creates it (or opens the one just made) and binds
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
    for (std::size_t i = 0; i < c.connectors.size(); ++i) {
        const auto& cc = c.connectors[i];
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
        settings_violation where;
        if (auto r = s->check_config(settings, cc.name, &where); !r) {
            problems.push_back(settings_refusal(c, "connectors", cc.settings_at,
                                                "connectors[" + std::to_string(i) + "].settings",
                                                where, s->module_name(), r.error().message));
            continue;
        }
        if (auto r = m->validate(settings); !r) {
            problems.push_back({c.file, 0, 0, "connectors: " + cc.name + ": " + r.error().message});
            continue;
        }
        schemas.emplace(cc.name, std::move(*s));
    }
    for (std::size_t i = 0; i < c.subscriptions.size(); ++i) {
        const auto& sc = c.subscriptions[i];
        auto it = schemas.find(sc.connector);
        if (sc.connector.empty() || it == schemas.end()) {
            continue;
        }
        settings_violation where;
        if (auto r = it->second.check_subscription(sc.settings_json.empty() ? "{}" : sc.settings_json,
                                                   sc.id, &where);
            !r) {
            problems.push_back(settings_refusal(c, "subscriptions", sc.settings_at,
                                                "subscriptions[" + std::to_string(i) + "].settings",
                                                where, it->second.module_name(),
                                                r.error().message));
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
    if (problems.empty() && c.store.backend->exists()) {
        auto st = open_configured_store(c, store_open_mode::check);
        if (!st) {
            problems.push_back(store_open_error(c, st.error()));
        } else if (auto wrong = check_host_key_against_store(c, **st)) {
            problems.push_back(std::move(*wrong));
        }
    }
    out = std::move(loaded.value);
    return problems;
}

} // namespace wopbridge
