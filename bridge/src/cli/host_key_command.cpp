// `wopbridge host-key`: rotate the host key of a store while every node keeps serving. The store's
// data key is wrapped under each allowed host key (app/host_key_check.hpp): `add` wraps it under a
// new key too, nodes move to the new key one at a time, `retire` drops every other wrap.
#include "app/host_key_check.hpp"
#include "app/preflight.hpp"
#include "cli/commands.hpp"
#include "config/config.hpp"
#include "core/secret_box.hpp"

#include <cstdio>
#include <filesystem>
#include <optional>

namespace wopbridge::cli {
namespace {

constexpr const char* host_key_usage =
    "usage: wopbridge host-key status --config FILE\n"
    "       wopbridge host-key add --config FILE --key-file NEW\n"
    "       wopbridge host-key retire --config FILE\n"
    "Rotates the host key of the store FILE names, with every node serving throughout:\n"
    "  add     lets the store open with NEW as well (NEW is created, mode 0600, when absent);\n"
    "          FILE's hostKeyFile must be a key the store opens with\n"
    "  then    point hostKeyFile at NEW (or put NEW in its place) on every node and restart\n"
    "          them one at a time\n"
    "  retire  keeps only FILE's hostKeyFile (now NEW): the old key no longer opens the store\n"
    "  status  lists how many keys open the store and whether FILE's key is one of them\n"
    "Sealed secrets and dedup keys are not rewritten: they depend on the store's data key, which\n"
    "the host key only wraps (docs/guarantees/host-key.md).\n";

struct opened_store {
    config cfg;
    std::unique_ptr<store> st;
    secret_box key;
    secret_box data_key;
};

// The config, its store and its key, which must open the store's data key. Prints why not.
std::optional<opened_store> open_with_config_key(const std::string& path, random_source& random,
                                                 bool bind, int& exit_code) {
    exit_code = 2;
    auto loaded = load_config(path);
    for (const auto& e : loaded.errors) {
        std::fprintf(stderr, "%s\n", e.to_string().c_str());
    }
    if (!loaded.errors.empty() || !loaded.value) {
        return std::nullopt;
    }
    config cfg = *loaded.value;
    if (cfg.host_key_file.empty()) {
        std::fprintf(stderr, "%s: hostKeyFile: not set; nothing to rotate\n", path.c_str());
        return std::nullopt;
    }
    bool exists = false;
    if (auto why = secret_box::inspect_key_file(cfg.host_key_file, exists); !why.empty() || !exists) {
        std::fprintf(stderr, "%s: hostKeyFile: %s %s\n", path.c_str(), cfg.host_key_file.c_str(),
                     exists ? why.c_str() : "does not exist: run serve once, or restore it");
        return std::nullopt;
    }
    auto key = secret_box::load(cfg.host_key_file);
    if (!key) {
        std::fprintf(stderr, "%s: hostKeyFile: %s cannot be read\n", path.c_str(),
                     cfg.host_key_file.c_str());
        return std::nullopt;
    }
    auto st = open_configured_store(cfg, store_open_mode::check);
    if (!st) {
        std::fprintf(stderr, "%s\n", store_open_error(cfg, st.error()).to_string().c_str());
        exit_code = 1;
        return std::nullopt;
    }
    auto unlocked = unlock_data_key(**st, *key, random, bind);
    if (!unlocked) {
        std::fprintf(stderr, "%s: store: cannot read its host keys: %s\n", path.c_str(),
                     unlocked.error().message().c_str());
        exit_code = 1;
        return std::nullopt;
    }
    if (unlocked->verdict == host_key_verdict::differs) {
        std::fprintf(stderr, "%s: hostKeyFile: %s\n", path.c_str(),
                     wrong_host_key_message(cfg.host_key_file).c_str());
        return std::nullopt;
    }
    exit_code = 0;
    return opened_store{std::move(cfg), std::move(*st), std::move(*key),
                        std::move(*unlocked->data_key)};
}

int add_key(const std::string& path, const std::string& new_file, random_source& random) {
    if (new_file.empty()) {
        std::fprintf(stderr, "wopbridge host-key add: --key-file NEW is required\n");
        return 2;
    }
    int code = 0;
    auto s = open_with_config_key(path, random, true, code);
    if (!s) {
        return code;
    }
    std::error_code ec;
    if (std::filesystem::equivalent(s->cfg.host_key_file, new_file, ec)) {
        std::fprintf(stderr, "wopbridge host-key add: %s is the key in use; give a new file\n",
                     new_file.c_str());
        return 2;
    }
    bool exists = false;
    if (auto why = secret_box::inspect_key_file(new_file, exists); !why.empty()) {
        std::fprintf(stderr, "wopbridge host-key add: %s %s\n", new_file.c_str(), why.c_str());
        return 2;
    }
    auto fresh = secret_box::open(new_file, random); // creates it (0600) when absent
    if (!fresh) {
        std::fprintf(stderr, "wopbridge host-key add: %s cannot be %s\n", new_file.c_str(),
                     exists ? "read" : "created");
        return 1;
    }
    if (fresh->key_check() == s->key.key_check()) {
        std::fprintf(stderr, "wopbridge host-key add: %s holds the key in use; give a new key\n",
                     new_file.c_str());
        return 2;
    }
    if (auto r = s->st->add_data_key_wrap(fresh->key_check(), fresh->wrap(s->data_key, random)); !r) {
        std::fprintf(stderr, "wopbridge host-key add: cannot write to the store: %s\n",
                     r.error().message().c_str());
        return 1;
    }
    std::printf("%s %s: the store opens with it as well as with %s.\n"
                "Next: point hostKeyFile at it (or put it in place of the old file) on every node "
                "and restart them one at a time; then run\n"
                "  wopbridge host-key retire --config %s\n",
                exists ? "added" : "created and added", new_file.c_str(),
                s->cfg.host_key_file.c_str(), path.c_str());
    return 0;
}

int retire_keys(const std::string& path, random_source& random) {
    int code = 0;
    auto s = open_with_config_key(path, random, true, code);
    if (!s) {
        return code;
    }
    auto dropped = s->st->retire_data_key_wraps(s->key.key_check());
    if (!dropped) {
        std::fprintf(stderr, "wopbridge host-key retire: cannot write to the store: %s\n",
                     dropped.error().message().c_str());
        return 1;
    }
    std::printf("retired %d other key%s: the store opens only with %s. Nodes still running with "
                "a retired key serve on until they restart, and then are refused.\n",
                *dropped, *dropped == 1 ? "" : "s", s->cfg.host_key_file.c_str());
    return 0;
}

int show_status(const std::string& path, random_source& random) {
    int code = 0;
    auto s = open_with_config_key(path, random, false, code);
    if (!s) {
        return code;
    }
    auto wraps = s->st->data_key_wraps();
    if (!wraps) {
        std::fprintf(stderr, "wopbridge host-key status: %s\n", wraps.error().message().c_str());
        return 1;
    }
    std::printf("%s opens the store; %zu key%s open%s it%s\n", s->cfg.host_key_file.c_str(),
                wraps->size(), wraps->size() == 1 ? "" : "s", wraps->size() == 1 ? "s" : "",
                wraps->size() > 1 ? " (a rotation is under way: retire when every node moved)"
                                  : "");
    return 0;
}

} // namespace

int run_host_key(const std::vector<std::string>& args) {
    arg_parser p(args);
    const auto& verb = p.positional();
    if (p.flag("help")) {
        std::fputs(host_key_usage, stdout);
        return 0;
    }
    const std::string path = p.value("config");
    if (!p.error.empty() || verb.size() != 1 || path.empty()) {
        std::fputs(p.error.empty() ? host_key_usage : (p.error + "\n").c_str(), stderr);
        return 2;
    }
    system_random_source random;
    if (verb.front() == "add") {
        return add_key(path, p.value("key-file"), random);
    }
    if (verb.front() == "retire") {
        return retire_keys(path, random);
    }
    if (verb.front() == "status") {
        return show_status(path, random);
    }
    std::fputs(host_key_usage, stderr);
    return 2;
}

} // namespace wopbridge::cli
