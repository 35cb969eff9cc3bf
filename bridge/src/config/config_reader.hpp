#pragma once
// The YAML side of config loading (config.cpp): a reader that turns nodes into typed values and
// collects every refusal as "file:line:col: key.path: message", and the section readers that fill
// `config` with it. Internal to config/ and the store backends' section readers
// (store/<backend>/<backend>_backend.cpp).

#include "config/config.hpp"

#include <boost/json/value.hpp>
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace wopbridge::config_detail {

using key_list = std::initializer_list<std::string_view>;

std::string trim(std::string s);
bool valid_env_name(std::string_view n);
// Letters, digits, '-', '_' and '.', at most 128 (connector names, subscription ids).
bool valid_id(const std::string& s);
bool valid_http_url(const std::string& s);
bool parse_listen_address(const std::string& s, std::string& host, std::uint16_t& port);

class reader {
public:
    reader(std::string file, std::filesystem::path base, const env_lookup& env)
        : file_(std::move(file)), base_(std::move(base)), env_(env) {}

    std::vector<config_error> errors;

    void error(const YAML::Mark& m, std::string msg);

    bool expect_map(const YAML::Node& n, const std::string& path);

    bool expect_seq(const YAML::Node& n, const std::string& path);

    void check_keys(const YAML::Node& map, const std::string& path, key_list allowed);
    void check_keys(const YAML::Node& map, const std::string& path,
                    std::span<const std::string_view> allowed);

    static std::string join(const std::string& path, std::string_view key);

    // A scalar with ${VAR} substituted.
    std::optional<std::string> scalar(const YAML::Node& n, const std::string& path,
                                      std::string_view what = "a string");

    // A secret: a scalar, or `file:/path` replaced by the file's trimmed contents.
    std::optional<std::string> secret(const YAML::Node& n, const std::string& path);

    std::string resolve(const std::string& p) const;

    bool str(const YAML::Node& map, std::string_view key, const std::string& path, std::string& out,
             bool is_secret = false, bool required = false);

    bool integer(const YAML::Node& map, std::string_view key, const std::string& path, long long& out,
                 long long min, long long max);

    void boolean(const YAML::Node& map, std::string_view key, const std::string& path, bool& out);

    bool duration(const YAML::Node& map, std::string_view key, const std::string& path, millis& out,
                  millis min = 0);

    static std::string format_min(millis m);

    // One of `choices`; returns the index.
    std::optional<std::size_t> choice(const YAML::Node& map, std::string_view key,
                                      const std::string& path, key_list choices);

    // YAML -> JSON for connector settings; string scalars get ${VAR} and file: resolution.
    std::optional<boost::json::value> to_json(const YAML::Node& n, const std::string& path,
                                              const std::string& pointer = {});

    std::string settings_json(const YAML::Node& map, std::string_view key, const std::string& path,
                              settings_positions& where);

    static source_position position_of(const YAML::Mark& m);

    static bool present(const YAML::Node& n) { return n.IsDefined() && !n.IsNull(); }

    template <class Int>
    void integer_into(const YAML::Node& map, std::string_view key, const std::string& path, Int& out,
                      long long min, long long max) {
        long long v = 0;
        if (integer(map, key, path, v, min, max)) {
            out = static_cast<Int>(v);
        }
    }

private:
    // A key as a JSON Pointer reference token (RFC 6901: '~' is "~0", '/' is "~1").
    static std::string pointer_token(const std::string& key);

    settings_positions* positions_ = nullptr; // set while settings_json() converts a mapping
    std::string file_;
    std::filesystem::path base_;
    const env_lookup& env_;
};

// ---- sections (config_sections.cpp, config_subscriptions.cpp) --------------------------------

void read_retry(reader& r, const YAML::Node& n, const std::string& path, retry_policy& out);
void read_rate_limit(reader& r, const YAML::Node& n, const std::string& path, rate_limit& out);
// The same, where `off` is also allowed (no limit); an absent key leaves `out` as it is.
void read_rate_limit_or_off(reader& r, const YAML::Node& n, const std::string& path,
                            rate_limit& out);
void read_server(reader& r, const YAML::Node& n, config& c);
void read_auth(reader& r, const YAML::Node& n, config& c);
void read_store(reader& r, const YAML::Node& n, config& c);
void read_runs(reader& r, const YAML::Node& n, config& c);
void read_delivery(reader& r, const YAML::Node& n, config& c);
void read_dead_letter(reader& r, const YAML::Node& n, config& c);
void read_attachments(reader& r, const YAML::Node& n, config& c); // after delivery and deadLetter
void read_connectors(reader& r, const YAML::Node& n, config& c);
void read_subscriptions(reader& r, const YAML::Node& n, config& c); // after connectors and runs

} // namespace wopbridge::config_detail
