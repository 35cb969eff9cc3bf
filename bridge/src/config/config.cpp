#include "config/config.hpp"

#include "core/scopes.hpp"
#include "schedule/cron.hpp"

#include <arpa/inet.h>
#include <boost/json.hpp>
#include <boost/url/parse.hpp>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

namespace wopbridge {

namespace fs = std::filesystem;

std::string config_error::to_string() const {
    if (line <= 0) {
        return file + ": " + message;
    }
    return file + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " + message;
}

env_lookup process_environment() {
    return [](const std::string& name) -> std::optional<std::string> {
        const char* v = std::getenv(name.c_str());
        return v ? std::optional<std::string>(v) : std::nullopt;
    };
}

namespace {

std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) {
        prev[j] = j;
    }
    for (std::size_t i = 1; i <= a.size(); ++i) {
        cur[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            char ca = static_cast<char>(std::tolower(static_cast<unsigned char>(a[i - 1])));
            char cb = static_cast<char>(std::tolower(static_cast<unsigned char>(b[j - 1])));
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca == cb ? 0 : 1)});
        }
        std::swap(prev, cur);
    }
    return prev[b.size()];
}

std::string trim(std::string s) {
    auto ws = [](unsigned char ch) { return std::isspace(ch) != 0; };
    while (!s.empty() && ws(static_cast<unsigned char>(s.back()))) {
        s.pop_back();
    }
    std::size_t i = 0;
    while (i < s.size() && ws(static_cast<unsigned char>(s[i]))) {
        ++i;
    }
    return s.substr(i);
}

bool valid_env_name(std::string_view n) {
    if (n.empty() || std::isdigit(static_cast<unsigned char>(n[0]))) {
        return false;
    }
    return std::all_of(n.begin(), n.end(), [](char ch) {
        return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_';
    });
}

using key_list = std::initializer_list<std::string_view>;

class reader {
public:
    reader(std::string file, fs::path base, const env_lookup& env)
        : file_(std::move(file)), base_(std::move(base)), env_(env) {}

    std::vector<config_error> errors;

    void error(const YAML::Mark& m, std::string msg) {
        int line = m.line >= 0 ? m.line + 1 : 0;
        int col = m.column >= 0 ? m.column + 1 : 0;
        errors.push_back({file_, line, col, std::move(msg)});
    }

    static bool present(const YAML::Node& n) { return n.IsDefined() && !n.IsNull(); }

    bool expect_map(const YAML::Node& n, const std::string& path) {
        if (!n.IsMap()) {
            error(n.Mark(), path + ": expected a mapping");
            return false;
        }
        return true;
    }

    bool expect_seq(const YAML::Node& n, const std::string& path) {
        if (!n.IsSequence()) {
            error(n.Mark(), path + ": expected a list");
            return false;
        }
        return true;
    }

    void check_keys(const YAML::Node& map, const std::string& path, key_list allowed) {
        for (auto it = map.begin(); it != map.end(); ++it) {
            if (!it->first.IsScalar()) {
                error(it->first.Mark(), path + ": keys must be plain strings");
                continue;
            }
            const std::string k = it->first.Scalar();
            if (std::find(allowed.begin(), allowed.end(), k) != allowed.end()) {
                continue;
            }
            std::string best;
            std::size_t best_d = 3;
            for (auto a : allowed) {
                std::size_t d = edit_distance(k, a);
                if (d < best_d && d <= std::max<std::size_t>(1, a.size() / 3)) {
                    best_d = d;
                    best = std::string(a);
                }
            }
            std::string where = path.empty() ? "" : path + ": ";
            error(it->first.Mark(), where + "unknown key '" + k + "'" +
                                        (best.empty() ? "" : " (did you mean '" + best + "'?)"));
        }
    }

    static std::string join(const std::string& path, std::string_view key) {
        return path.empty() ? std::string(key) : path + "." + std::string(key);
    }

    // A scalar with ${VAR} substituted.
    std::optional<std::string> scalar(const YAML::Node& n, const std::string& path,
                                      std::string_view what = "a string") {
        if (!n.IsScalar()) {
            error(n.Mark(), path + ": expected " + std::string(what));
            return std::nullopt;
        }
        const std::string& in = n.Scalar();
        std::string out;
        for (std::size_t i = 0; i < in.size(); ++i) {
            if (in[i] == '$' && in.compare(i, 3, "$${") == 0) {
                out += "${";
                i += 2;
                continue;
            }
            if (in[i] == '$' && i + 1 < in.size() && in[i + 1] == '{') {
                auto close = in.find('}', i + 2);
                if (close == std::string::npos) {
                    error(n.Mark(), path + ": unterminated '${' (write '$${' for a literal)");
                    return std::nullopt;
                }
                std::string name = in.substr(i + 2, close - i - 2);
                if (!valid_env_name(name)) {
                    error(n.Mark(), path + ": '${" + name + "}' is not a valid variable name");
                    return std::nullopt;
                }
                auto v = env_(name);
                if (!v) {
                    error(n.Mark(), path + ": environment variable " + name + " is not set");
                    return std::nullopt;
                }
                out += *v;
                i = close;
                continue;
            }
            out += in[i];
        }
        return out;
    }

    // A secret: a scalar, or `file:/path` replaced by the file's trimmed contents.
    std::optional<std::string> secret(const YAML::Node& n, const std::string& path) {
        auto v = scalar(n, path);
        if (!v || v->rfind("file:", 0) != 0) {
            return v;
        }
        fs::path p = resolve(v->substr(5));
        std::ifstream in(p, std::ios::binary);
        if (!in) {
            // The path is configuration, not the secret: it may be named.
            error(n.Mark(), path + ": cannot read secret file " + p.string());
            return std::nullopt;
        }
        std::stringstream ss;
        ss << in.rdbuf();
        return trim(ss.str());
    }

    std::string resolve(const std::string& p) const {
        fs::path path(p);
        if (path.is_relative()) {
            path = base_ / path;
        }
        return path.lexically_normal().string();
    }

    bool str(const YAML::Node& map, std::string_view key, const std::string& path, std::string& out,
             bool is_secret = false, bool required = false) {
        YAML::Node n = map[std::string(key)];
        if (!present(n)) {
            if (required) {
                error(map.Mark(), join(path, key) + ": required");
            }
            return false;
        }
        auto v = is_secret ? secret(n, join(path, key)) : scalar(n, join(path, key));
        if (!v) {
            return false;
        }
        if (required && v->empty()) {
            error(n.Mark(), join(path, key) + ": must not be empty");
            return false;
        }
        out = *v;
        return true;
    }

    bool integer(const YAML::Node& map, std::string_view key, const std::string& path, long long& out,
                 long long min, long long max) {
        YAML::Node n = map[std::string(key)];
        if (!present(n)) {
            return false;
        }
        auto v = scalar(n, join(path, key), "an integer");
        if (!v) {
            return false;
        }
        long long x = 0;
        std::size_t used = 0;
        try {
            x = std::stoll(*v, &used, 10);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used == 0 || used != v->size()) {
            error(n.Mark(), join(path, key) + ": expected an integer, got '" + *v + "'");
            return false;
        }
        if (x < min || x > max) {
            error(n.Mark(), join(path, key) + ": " + std::to_string(x) + " is out of range " +
                                std::to_string(min) + "-" + std::to_string(max));
            return false;
        }
        out = x;
        return true;
    }

    template <class Int>
    void integer_into(const YAML::Node& map, std::string_view key, const std::string& path, Int& out,
                      long long min, long long max) {
        long long v = 0;
        if (integer(map, key, path, v, min, max)) {
            out = static_cast<Int>(v);
        }
    }

    void boolean(const YAML::Node& map, std::string_view key, const std::string& path, bool& out) {
        YAML::Node n = map[std::string(key)];
        if (!present(n)) {
            return;
        }
        auto v = scalar(n, join(path, key), "true or false");
        if (!v) {
            return;
        }
        if (*v == "true") {
            out = true;
        } else if (*v == "false") {
            out = false;
        } else {
            error(n.Mark(), join(path, key) + ": expected true or false, got '" + *v + "'");
        }
    }

    bool duration(const YAML::Node& map, std::string_view key, const std::string& path, millis& out,
                  millis min = 0) {
        YAML::Node n = map[std::string(key)];
        if (!present(n)) {
            return false;
        }
        auto v = scalar(n, join(path, key), "a duration");
        if (!v) {
            return false;
        }
        millis d = 0;
        if (!parse_duration(*v, d)) {
            error(n.Mark(), join(path, key) + ": '" + *v +
                                "' is not a duration (use e.g. 500ms, 30s, 10m, 24h, 1h30m)");
            return false;
        }
        if (d < min) {
            error(n.Mark(), join(path, key) + ": must be at least " + format_min(min));
            return false;
        }
        out = d;
        return true;
    }

    static std::string format_min(millis m) {
        if (m % (3600 * 1000) == 0) {
            return std::to_string(m / (3600 * 1000)) + "h";
        }
        if (m % 1000 == 0) {
            return std::to_string(m / 1000) + "s";
        }
        return std::to_string(m) + "ms";
    }

    // One of `choices`; returns the index.
    std::optional<std::size_t> choice(const YAML::Node& map, std::string_view key,
                                      const std::string& path, key_list choices) {
        YAML::Node n = map[std::string(key)];
        if (!present(n)) {
            return std::nullopt;
        }
        auto v = scalar(n, join(path, key));
        if (!v) {
            return std::nullopt;
        }
        std::size_t i = 0;
        std::string list;
        for (auto c : choices) {
            if (*v == c) {
                return i;
            }
            list += (list.empty() ? "" : ", ") + std::string(c);
            ++i;
        }
        error(n.Mark(), join(path, key) + ": invalid value '" + *v + "' (expected one of: " + list + ")");
        return std::nullopt;
    }

    // YAML -> JSON for connector settings; string scalars get ${VAR} and file: resolution.
    std::optional<boost::json::value> to_json(const YAML::Node& n, const std::string& path,
                                              const std::string& pointer = {}) {
        if (positions_ != nullptr) {
            (*positions_)[pointer].value = position_of(n.Mark());
        }
        switch (n.Type()) {
        case YAML::NodeType::Null:
        case YAML::NodeType::Undefined:
            return boost::json::value(nullptr);
        case YAML::NodeType::Sequence: {
            boost::json::array a;
            for (std::size_t i = 0; i < n.size(); ++i) {
                auto v = to_json(n[i], path + "[" + std::to_string(i) + "]",
                                 pointer + "/" + std::to_string(i));
                if (!v) {
                    return std::nullopt;
                }
                a.push_back(std::move(*v));
            }
            return boost::json::value(std::move(a));
        }
        case YAML::NodeType::Map: {
            boost::json::object o;
            bool ok = true;
            for (auto it = n.begin(); it != n.end(); ++it) {
                if (!it->first.IsScalar()) {
                    error(it->first.Mark(), path + ": keys must be plain strings");
                    ok = false;
                    continue;
                }
                if (it->first.Scalar() == "$sealed") {
                    error(it->first.Mark(),
                          path + ": the key $sealed is reserved (secrets sealed at rest)");
                    ok = false;
                    continue;
                }
                const std::string member = pointer + "/" + pointer_token(it->first.Scalar());
                if (positions_ != nullptr) {
                    (*positions_)[member].key = position_of(it->first.Mark());
                }
                auto v = to_json(it->second, join(path, it->first.Scalar()), member);
                if (!v) {
                    ok = false;
                    continue;
                }
                o[it->first.Scalar()] = std::move(*v);
            }
            if (!ok) {
                return std::nullopt;
            }
            return boost::json::value(std::move(o));
        }
        case YAML::NodeType::Scalar:
            break;
        }
        // Plain (untagged, unquoted) scalars keep their YAML type; quoted ones are strings.
        if (n.Tag() == "?") {
            const std::string& s = n.Scalar();
            if (s == "true" || s == "false") {
                return boost::json::value(s == "true");
            }
            if (s == "null" || s == "~") {
                return boost::json::value(nullptr);
            }
            try {
                std::size_t used = 0;
                long long i = std::stoll(s, &used, 10);
                if (used == s.size()) {
                    return boost::json::value(static_cast<std::int64_t>(i));
                }
                double d = std::stod(s, &used);
                if (used == s.size()) {
                    return boost::json::value(d);
                }
            } catch (const std::exception&) {
                // not a number: a string
            }
        }
        auto v = secret(n, path);
        if (!v) {
            return std::nullopt;
        }
        return boost::json::value(*v);
    }

    std::string settings_json(const YAML::Node& map, std::string_view key, const std::string& path,
                              settings_positions& where) {
        YAML::Node n = map[std::string(key)];
        where[""].value = position_of(map.Mark());
        if (!present(n)) {
            return "{}";
        }
        if (!expect_map(n, join(path, key))) {
            return "{}";
        }
        positions_ = &where;
        auto v = to_json(n, join(path, key));
        positions_ = nullptr;
        return v ? boost::json::serialize(*v) : "{}";
    }

    static source_position position_of(const YAML::Mark& m) {
        if (m.line < 0 || m.column < 0) {
            return {};
        }
        return {m.line + 1, m.column + 1};
    }

private:
    // A key as a JSON Pointer reference token (RFC 6901: '~' is "~0", '/' is "~1").
    static std::string pointer_token(const std::string& key) {
        std::string out;
        for (char ch : key) {
            out += ch == '~' ? "~0" : ch == '/' ? "~1" : std::string(1, ch);
        }
        return out;
    }

    settings_positions* positions_ = nullptr; // set while settings_json() converts a mapping
    std::string file_;
    fs::path base_;
    const env_lookup& env_;
};

bool parse_listen_address(const std::string& s, std::string& host, std::uint16_t& port) {
    auto colon = s.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 >= s.size()) {
        return false;
    }
    std::string h = s.substr(0, colon);
    std::string p = s.substr(colon + 1);
    if (p.size() > 5 || !std::all_of(p.begin(), p.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        return false;
    }
    long v = std::stol(p);
    if (v > 65535) {
        return false;
    }
    unsigned char buf[16];
    if (h.front() == '[') {
        if (h.back() != ']') {
            return false;
        }
        h = h.substr(1, h.size() - 2);
        if (inet_pton(AF_INET6, h.c_str(), buf) != 1) {
            return false;
        }
    } else if (h.find(':') != std::string::npos) {
        return false; // IPv6 needs brackets
    } else if (inet_pton(AF_INET, h.c_str(), buf) != 1) {
        // A host name: letters, digits, '-', '.'.
        bool name_ok = std::all_of(h.begin(), h.end(), [](char c) {
            return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.';
        });
        bool all_digits_dots = std::all_of(h.begin(), h.end(), [](char c) {
            return (c >= '0' && c <= '9') || c == '.';
        });
        if (!name_ok || all_digits_dots) {
            return false;
        }
    }
    host = h;
    port = static_cast<std::uint16_t>(v);
    return true;
}

bool valid_http_url(const std::string& s) {
    auto u = boost::urls::parse_absolute_uri(s);
    if (!u) {
        return false;
    }
    return (u->scheme() == "http" || u->scheme() == "https") && u->has_authority() &&
           !u->host().empty();
}

bool valid_id(const std::string& s) {
    return !s.empty() && s.size() <= 128 && std::all_of(s.begin(), s.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
    });
}

void read_retry(reader& r, const YAML::Node& n, const std::string& path, retry_policy& out) {
    if (!r.expect_map(n, path)) {
        return;
    }
    r.check_keys(n, path, {"maxAttempts", "backoff", "baseDelay", "maxDelay", "jitter"});
    r.integer_into(n, "maxAttempts", path, out.max_attempts, 1, 1000);
    if (auto b = r.choice(n, "backoff", path, {"none", "fixed", "exponential"})) {
        out.backoff = *b == 0 ? backoff_kind::none : *b == 1 ? backoff_kind::fixed : backoff_kind::exponential;
    }
    r.duration(n, "baseDelay", path, out.base_delay_ms);
    r.duration(n, "maxDelay", path, out.max_delay_ms);
    r.boolean(n, "jitter", path, out.jitter);
}

// {rate, burst}: rate in requests per second (may be fractional), burst a whole number >= 1.
void read_rate_limit(reader& r, const YAML::Node& n, const std::string& path, rate_limit& out) {
    if (!r.expect_map(n, path)) {
        return;
    }
    r.check_keys(n, path, {"rate", "burst"});
    YAML::Node rate = n["rate"];
    if (!reader::present(rate)) {
        r.error(n.Mark(), path + ".rate: required");
        return;
    }
    double v = -1;
    std::size_t used = 0;
    const std::string text = rate.IsScalar() ? rate.Scalar() : std::string();
    try {
        v = std::stod(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used == 0 || used != text.size() || !(v > 0) || v > 1e9) {
        r.error(rate.Mark(), path +
                                 ".rate: expected a number of requests per second above 0, got '" +
                                 text + "'");
        return;
    }
    out.rate = v;
    out.burst = std::max(1.0, std::ceil(v));
    long long burst = 0;
    if (r.integer(n, "burst", path, burst, 1, 1000000000)) {
        out.burst = static_cast<double>(burst);
    }
}

void read_server(reader& r, const YAML::Node& n, config& c) {
    const std::string path = "server";
    if (!r.expect_map(n, path)) {
        return;
    }
    r.check_keys(n, path,
                 {"listen", "publicUrl", "maxBodyBytes", "threads", "tls", "maxConnections",
                  "maxInFlightRequests", "reservedInFlightRequests", "maxConnectionsPerAddress",
                  "minBodyBytesPerSecond", "bodyGraceSeconds", "rateLimits"});
    auto& s = c.server;
    std::string listen;
    if (r.str(n, "listen", path, listen)) {
        if (parse_listen_address(listen, s.listen_host, s.listen_port)) {
            s.listen = listen;
        } else {
            r.error(n["listen"].Mark(), "server.listen: '" + listen +
                                            "' is not a valid address (expected host:port, e.g. "
                                            "127.0.0.1:8080 or [::1]:8080)");
        }
    }
    std::string url;
    if (r.str(n, "publicUrl", path, url)) {
        if (valid_http_url(url)) {
            while (!url.empty() && url.back() == '/') {
                url.pop_back();
            }
            s.public_url = url;
        } else {
            r.error(n["publicUrl"].Mark(), "server.publicUrl: '" + url + "' is not an http(s) URL");
        }
    }
    r.integer_into(n, "maxBodyBytes", path, s.max_body_bytes, 1, 1LL << 32);
    r.integer_into(n, "threads", path, s.threads, 1, 256);
    r.integer_into(n, "maxConnections", path, s.max_connections, 1, 1000000);
    r.integer_into(n, "maxInFlightRequests", path, s.max_in_flight_requests, 1, 1000000);
    r.integer_into(n, "reservedInFlightRequests", path, s.reserved_in_flight_requests, 0, 100000);
    r.integer_into(n, "maxConnectionsPerAddress", path, s.max_connections_per_address, 1, 1000000);
    r.integer_into(n, "minBodyBytesPerSecond", path, s.min_body_bytes_per_second, 0, 1LL << 32);
    r.integer_into(n, "bodyGraceSeconds", path, s.body_grace_seconds, 0, 3600);
    YAML::Node limits = n["rateLimits"];
    if (reader::present(limits) && r.expect_map(limits, "server.rateLimits")) {
        r.check_keys(limits, "server.rateLimits", {"perSubscription", "perSourceAddress"});
        if (reader::present(limits["perSubscription"])) {
            read_rate_limit(r, limits["perSubscription"], "server.rateLimits.perSubscription",
                            s.per_subscription);
        }
        YAML::Node per_address = limits["perSourceAddress"];
        if (reader::present(per_address) && per_address.IsScalar() &&
            per_address.Scalar() == "off") {
            s.per_source_address = rate_limit{}; // behind a proxy every post has one address
        } else if (reader::present(per_address)) {
            read_rate_limit(r, limits["perSourceAddress"], "server.rateLimits.perSourceAddress",
                            s.per_source_address);
        }
    }
    YAML::Node tls = n["tls"];
    if (reader::present(tls) && r.expect_map(tls, "server.tls")) {
        r.check_keys(tls, "server.tls", {"certFile", "keyFile"});
        tls_config t;
        bool ok = r.str(tls, "certFile", "server.tls", t.cert_file, false, true);
        ok = r.str(tls, "keyFile", "server.tls", t.key_file, false, true) && ok;
        if (ok) {
            t.cert_file = r.resolve(t.cert_file);
            t.key_file = r.resolve(t.key_file);
            s.tls = t;
        }
    }
}

void read_auth(reader& r, const YAML::Node& n, config& c) {
    if (!r.expect_map(n, "auth")) {
        return;
    }
    r.check_keys(n, "auth", {"apiKeys"});
    YAML::Node keys = n["apiKeys"];
    if (!reader::present(keys) || !r.expect_seq(keys, "auth.apiKeys")) {
        return;
    }
    for (std::size_t i = 0; i < keys.size(); ++i) {
        const std::string path = "auth.apiKeys[" + std::to_string(i) + "]";
        YAML::Node k = keys[i];
        if (!r.expect_map(k, path)) {
            continue;
        }
        r.check_keys(k, path, {"key", "tenant", "scopes"});
        api_key_config a;
        r.str(k, "key", path, a.key, true, true);
        r.str(k, "tenant", path, a.tenant);
        YAML::Node scopes = k["scopes"];
        if (reader::present(scopes) && r.expect_seq(scopes, path + ".scopes")) {
            for (std::size_t j = 0; j < scopes.size(); ++j) {
                const std::string sp = path + ".scopes[" + std::to_string(j) + "]";
                auto v = r.scalar(scopes[j], sp);
                if (!v) {
                    continue;
                }
                // Only the scopes a route checks: an unknown one (a typo) grants nothing, so a
                // key carrying it would load and then answer 403 where access was meant.
                if (!is_known_scope(*v)) {
                    std::string valid;
                    for (auto k : known_scopes) {
                        valid += (valid.empty() ? "" : ", ") + std::string(k);
                    }
                    // Quoted as written: a ${VAR} here is not expanded into the message.
                    r.error(scopes[j].Mark(), sp + ": '" + scopes[j].Scalar() +
                                                  "' is not a scope (expected one of " + valid +
                                                  ")");
                    continue;
                }
                a.scopes.push_back(*v);
            }
        }
        c.api_keys.push_back(std::move(a));
    }
}

void read_store(reader& r, const YAML::Node& n, config& c) {
    if (!r.expect_map(n, "store")) {
        return;
    }
    r.check_keys(n, "store", {"sqlite", "postgres"});
    YAML::Node sq = n["sqlite"];
    YAML::Node pg = n["postgres"];
    if (reader::present(sq) && reader::present(pg)) {
        r.error(n.Mark(), "store: set either sqlite or postgres, not both");
        return;
    }
    if (reader::present(pg)) {
        c.store.backend = store_config::backend_kind::postgres;
        if (r.expect_map(pg, "store.postgres")) {
            r.check_keys(pg, "store.postgres", {"url", "nodeTimeout"});
            // Past this silence a node's claims are freed for the others: at least a few beats.
            r.duration(pg, "nodeTimeout", "store.postgres", c.store.node_timeout_ms, 3000);
            std::string url;
            if (r.str(pg, "url", "store.postgres", url, true, true)) {
                if (url.rfind("postgresql://", 0) != 0 && url.rfind("postgres://", 0) != 0) {
                    r.error(pg["url"].Mark(), "store.postgres.url: expected a postgresql:// URL");
                } else {
                    c.store.postgres_url = url;
                }
            }
        }
        return;
    }
    if (reader::present(sq) && r.expect_map(sq, "store.sqlite")) {
        r.check_keys(sq, "store.sqlite", {"path"});
        std::string p;
        if (r.str(sq, "path", "store.sqlite", p, false, true)) {
            c.store.sqlite_path = r.resolve(p);
            c.store.sqlite_path_line = sq["path"].Mark().line + 1;
            c.store.sqlite_path_column = sq["path"].Mark().column + 1;
        }
    }
}

void read_runs(reader& r, const YAML::Node& n, config& c) {
    if (!r.expect_map(n, "runs")) {
        return;
    }
    r.check_keys(n, "runs", {"local", "upstream"});
    YAML::Node local = n["local"];
    YAML::Node up = n["upstream"];
    if (reader::present(local) && reader::present(up)) {
        r.error(n.Mark(), "runs: set either local or upstream, not both");
        return;
    }
    if (reader::present(up)) {
        c.runs.mode = runs_config::mode_kind::upstream;
        if (!r.expect_map(up, "runs.upstream")) {
            return;
        }
        const std::string path = "runs.upstream";
        r.check_keys(up, path, {"baseUrl", "apiKey", "timeout"});
        std::string url;
        if (r.str(up, "baseUrl", path, url, false, true)) {
            if (valid_http_url(url)) {
                while (!url.empty() && url.back() == '/') {
                    url.pop_back();
                }
                c.runs.upstream.base_url = url;
            } else {
                r.error(up["baseUrl"].Mark(), path + ".baseUrl: '" + url + "' is not an http(s) URL");
            }
        }
        r.str(up, "apiKey", path, c.runs.upstream.api_key, true);
        r.duration(up, "timeout", path, c.runs.upstream.timeout_ms, 1);
        return;
    }
    if (!reader::present(local) || !r.expect_map(local, "runs.local")) {
        return;
    }
    r.check_keys(local, "runs.local", {"workflows"});
    YAML::Node wfs = local["workflows"];
    if (!reader::present(wfs) || !r.expect_seq(wfs, "runs.local.workflows")) {
        return;
    }
    std::set<std::string> seen;
    for (std::size_t i = 0; i < wfs.size(); ++i) {
        const std::string path = "runs.local.workflows[" + std::to_string(i) + "]";
        YAML::Node w = wfs[i];
        if (!r.expect_map(w, path)) {
            continue;
        }
        r.check_keys(w, path, {"id", "command", "timeout", "env"});
        local_workflow wf;
        if (r.str(w, "id", path, wf.id, false, true) && !seen.insert(wf.id).second) {
            r.error(w["id"].Mark(), path + ".id: duplicate workflow id '" + wf.id + "'");
        }
        YAML::Node cmd = w["command"];
        if (reader::present(cmd)) {
            if (cmd.IsScalar()) {
                if (auto v = r.scalar(cmd, path + ".command")) {
                    wf.command.push_back(*v);
                }
            } else if (r.expect_seq(cmd, path + ".command")) {
                for (std::size_t j = 0; j < cmd.size(); ++j) {
                    if (auto v = r.scalar(cmd[j], path + ".command[" + std::to_string(j) + "]")) {
                        wf.command.push_back(*v);
                    }
                }
                if (cmd.size() == 0) {
                    r.error(cmd.Mark(), path + ".command: must not be empty (omit it instead)");
                }
            }
            if (!wf.command.empty() && wf.command[0].find('/') != std::string::npos) {
                wf.command[0] = r.resolve(wf.command[0]);
            }
        }
        r.duration(w, "timeout", path, wf.timeout_ms, 1);
        YAML::Node env = w["env"];
        if (reader::present(env) && r.expect_map(env, path + ".env")) {
            for (auto it = env.begin(); it != env.end(); ++it) {
                std::string name = it->first.Scalar();
                if (!valid_env_name(name)) {
                    r.error(it->first.Mark(), path + ".env: '" + name + "' is not a valid variable name");
                    continue;
                }
                if (auto v = r.secret(it->second, path + ".env." + name)) {
                    wf.env.emplace_back(name, *v);
                }
            }
        }
        c.runs.workflows.push_back(std::move(wf));
    }
}

void read_delivery(reader& r, const YAML::Node& n, config& c) {
    const std::string path = "delivery";
    if (!r.expect_map(n, path)) {
        return;
    }
    r.check_keys(n, path, {"retryPolicy", "dedupRetention", "concurrency", "maxInFlight",
                           "batchSize", "maxPendingIntake", "attemptTimeout", "lease", "breaker"});
    auto& d = c.delivery;
    if (reader::present(n["retryPolicy"])) {
        read_retry(r, n["retryPolicy"], "delivery.retryPolicy", d.retry);
    }
    r.duration(n, "dedupRetention", path, d.dedup_retention_ms, 24LL * 3600 * 1000);
    // `maxInFlight` is the earlier name of `concurrency`: still read, never both.
    if (reader::present(n["concurrency"]) && reader::present(n["maxInFlight"])) {
        r.error(n["maxInFlight"].Mark(),
                "delivery.maxInFlight: the earlier name of delivery.concurrency; set only "
                "concurrency");
    }
    r.integer_into(n, "maxInFlight", path, d.max_in_flight, 1, 100000);
    r.integer_into(n, "concurrency", path, d.max_in_flight, 1, 100000);
    r.integer_into(n, "batchSize", path, d.batch_size, 1, 10000);
    r.integer_into(n, "maxPendingIntake", path, d.max_pending_intake, 1, 100000000);
    r.duration(n, "attemptTimeout", path, d.attempt_timeout_ms, 1);
    r.duration(n, "lease", path, d.lease_ms, 1000);
    YAML::Node b = n["breaker"];
    if (reader::present(b) && r.expect_map(b, "delivery.breaker")) {
        r.check_keys(b, "delivery.breaker", {"failureThreshold", "probeInterval"});
        r.integer_into(b, "failureThreshold", "delivery.breaker", d.breaker.failure_threshold, 1, 1000000);
        r.duration(b, "probeInterval", "delivery.breaker", d.breaker.probe_interval_ms, 1);
    }
}

void read_dead_letter(reader& r, const YAML::Node& n, config& c) {
    if (!r.expect_map(n, "deadLetter")) {
        return;
    }
    r.check_keys(n, "deadLetter", {"retentionDays", "maxPageSize", "refusedSignatureRetention"});
    r.duration(n, "refusedSignatureRetention", "deadLetter",
               c.dead_letter.refused_signature_retention_ms, 60 * 1000);
    r.integer_into(n, "retentionDays", "deadLetter", c.dead_letter.retention_days, 1, 36500);
    r.integer_into(n, "maxPageSize", "deadLetter", c.dead_letter.max_page_size, 1, 1000);
}

// attachments.retention is checked against the retentions it must outlast: a dead letter can be
// replayed (and a provider's repeat answered from dedup) until they end, and the event that comes
// back refers to the attachment's bytes.
void read_attachments(reader& r, const YAML::Node& n, config& c) {
    constexpr millis day = 24LL * 3600 * 1000;
    const millis floor = std::max<millis>(c.dead_letter.retention_days * day,
                                          std::max<millis>(c.delivery.dedup_retention_ms, day));
    c.attachments.retention_ms = std::max<millis>(14 * day, floor + 7 * day);
    if (!reader::present(n) || !r.expect_map(n, "attachments")) {
        return;
    }
    r.check_keys(n, "attachments", {"retention"});
    millis retention = 0;
    if (!r.duration(n, "retention", "attachments", retention, 3600 * 1000)) {
        return;
    }
    if (retention < floor) {
        r.error(n["retention"].Mark(),
                "attachments.retention: must be at least " + std::to_string(floor / 3600000) +
                    "h, the longer of deadLetter.retentionDays and delivery.dedupRetention (a "
                    "replayed dead letter must still find its attachments)");
        return;
    }
    c.attachments.retention_ms = retention;
    c.attachments.retention_set = true;
}

void read_connectors(reader& r, const YAML::Node& n, config& c) {
    if (!r.expect_seq(n, "connectors")) {
        return;
    }
    std::set<std::string> seen;
    for (std::size_t i = 0; i < n.size(); ++i) {
        const std::string path = "connectors[" + std::to_string(i) + "]";
        YAML::Node k = n[i];
        if (!r.expect_map(k, path)) {
            continue;
        }
        r.check_keys(k, path, {"name", "module", "settings"});
        connector_config cc;
        if (r.str(k, "name", path, cc.name, false, true)) {
            if (!valid_id(cc.name)) {
                r.error(k["name"].Mark(), path + ".name: '" + cc.name +
                                              "' may only contain letters, digits, '-', '_' and '.'");
            } else if (!seen.insert(cc.name).second) {
                r.error(k["name"].Mark(), path + ".name: duplicate connector name '" + cc.name + "'");
            }
        }
        r.str(k, "module", path, cc.module, false, true);
        cc.settings_json = r.settings_json(k, "settings", path, cc.settings_at);
        c.connectors.push_back(std::move(cc));
    }
}

void read_subscriptions(reader& r, const YAML::Node& n, config& c) {
    if (!r.expect_seq(n, "subscriptions")) {
        return;
    }
    std::set<std::string> seen;
    std::set<std::string> connectors;
    for (const auto& k : c.connectors) {
        connectors.insert(k.name);
    }
    std::set<std::string> workflows;
    for (const auto& w : c.runs.workflows) {
        workflows.insert(w.id);
    }
    for (std::size_t i = 0; i < n.size(); ++i) {
        const std::string path = "subscriptions[" + std::to_string(i) + "]";
        YAML::Node s = n[i];
        if (!r.expect_map(s, path)) {
            continue;
        }
        r.check_keys(s, path,
                     {"id", "tenant", "source", "connector", "workflowId", "schedule",
                      "verification", "signingSecret", "retryPolicy", "dedup", "settings",
                      "whenNotActive", "rateLimit", "maxConcurrency", "ordering"});
        subscription_config sc;
        sc.line = s.Mark().line + 1;
        sc.column = s.Mark().column + 1;
        if (r.str(s, "id", path, sc.id, false, true)) {
            if (!valid_id(sc.id)) {
                r.error(s["id"].Mark(), path + ".id: '" + sc.id +
                                            "' may only contain letters, digits, '-', '_' and '.'");
            } else if (!seen.insert(sc.id).second) {
                r.error(s["id"].Mark(), path + ".id: duplicate subscription id '" + sc.id + "'");
            }
        }
        r.str(s, "tenant", path, sc.tenant);
        bool source_given = false;
        if (auto src = r.choice(s, "source", path, {"webhook", "schedule", "queue", "email", "form"})) {
            static constexpr source_kind kinds[] = {source_kind::webhook, source_kind::schedule,
                                                    source_kind::queue, source_kind::email,
                                                    source_kind::form};
            sc.source = kinds[*src];
            source_given = true;
        }
        if (r.str(s, "connector", path, sc.connector) && !connectors.count(sc.connector)) {
            r.error(s["connector"].Mark(), path + ".connector: unknown connector '" + sc.connector +
                                               "' (not declared under connectors)");
        }
        if (r.str(s, "workflowId", path, sc.workflow_id, false, true) &&
            c.runs.mode == runs_config::mode_kind::local && !workflows.count(sc.workflow_id)) {
            r.error(s["workflowId"].Mark(), path + ".workflowId: unknown workflow '" + sc.workflow_id +
                                                "' (not declared under runs.local.workflows)");
        }
        YAML::Node sched = s["schedule"];
        if (reader::present(sched)) {
            if (!source_given) {
                sc.source = source_kind::schedule;
            } else if (sc.source != source_kind::schedule) {
                r.error(sched.Mark(), path + ".schedule: only valid with source: schedule");
            }
            if (r.expect_map(sched, path + ".schedule")) {
                r.check_keys(sched, path + ".schedule", {"cron", "timeZone"});
                schedule_spec spec;
                r.str(sched, "timeZone", path + ".schedule", spec.time_zone);
                if (r.str(sched, "cron", path + ".schedule", spec.cron, false, true)) {
                    auto parsed = cron_expr::parse(spec.cron, spec.time_zone);
                    if (!parsed) {
                        YAML::Node at = parsed.error().message.find("time zone") != std::string::npos &&
                                                reader::present(sched["timeZone"])
                                            ? sched["timeZone"]
                                            : sched["cron"];
                        r.error(at.Mark(), path + ".schedule: " + parsed.error().message);
                    } else {
                        sc.schedule = spec;
                    }
                }
            }
        } else if (sc.source == source_kind::schedule) {
            r.error(s.Mark(), path + ": source schedule needs a schedule: {cron: ...}");
        }
        YAML::Node ver = s["verification"];
        if (reader::present(ver) && r.expect_map(ver, path + ".verification")) {
            r.check_keys(ver, path + ".verification", {"mode"});
            if (auto m = r.choice(ver, "mode", path + ".verification", {"required", "best-effort", "none"})) {
                static constexpr verification_mode modes[] = {verification_mode::required,
                                                              verification_mode::best_effort,
                                                              verification_mode::none};
                sc.verification = modes[*m];
            }
        }
        r.str(s, "signingSecret", path, sc.signing_secret, true);
        if (reader::present(s["retryPolicy"])) {
            retry_policy rp = c.delivery.retry;
            std::size_t before = r.errors.size();
            read_retry(r, s["retryPolicy"], path + ".retryPolicy", rp);
            if (r.errors.size() == before) {
                sc.retry = rp;
            }
        }
        r.boolean(s, "dedup", path, sc.dedup);
        if (reader::present(s["whenNotActive"])) {
            if (auto m = r.choice(s, "whenNotActive", path, {"refuse", "hold"})) {
                sc.hold_when_not_active = *m == 1;
            }
        }
        r.integer_into(s, "maxConcurrency", path, sc.max_concurrency, 1, 100000);
        if (reader::present(s["ordering"])) {
            if (auto m = r.choice(s, "ordering", path, {"none", "perSubscription"}); m && *m == 1) {
                if (reader::present(s["maxConcurrency"]) && sc.max_concurrency != 1) {
                    r.error(s["maxConcurrency"].Mark(),
                            path + ".maxConcurrency: ordering: perSubscription starts one run at a "
                                   "time; drop maxConcurrency or set it to 1");
                }
                sc.max_concurrency = 1;
            }
        }
        if (reader::present(s["rateLimit"])) {
            rate_limit rl;
            std::size_t before = r.errors.size();
            read_rate_limit(r, s["rateLimit"], path + ".rateLimit", rl);
            if (r.errors.size() == before) {
                sc.rate_limit_override = rl;
            }
        }
        sc.settings_json = r.settings_json(s, "settings", path, sc.settings_at);
        c.subscriptions.push_back(std::move(sc));
    }
}

} // namespace

bool parse_listen(const std::string& text, std::string& host, std::uint16_t& port) {
    return parse_listen_address(text, host, port);
}

config_load_result parse_config(std::string_view text, const std::string& file_name,
                                const fs::path& base_dir, const env_lookup& env) {
    config_load_result out;
    reader r(file_name, fs::absolute(base_dir).lexically_normal(), env);
    YAML::Node root;
    try {
        root = YAML::Load(std::string(text));
    } catch (const YAML::ParserException& e) {
        r.error(e.mark, "YAML syntax error: " + e.msg);
        out.errors = std::move(r.errors);
        return out;
    } catch (const YAML::Exception& e) {
        r.error(e.mark, "YAML error: " + e.msg);
        out.errors = std::move(r.errors);
        return out;
    }
    config c;
    c.file = file_name;
    c.base_dir = fs::absolute(base_dir).lexically_normal();
    c.host_key_file = r.resolve("var/host.key");
    c.store.sqlite_path = r.resolve("var/wopbridge.db");
    if (!root.IsMap()) {
        if (root.IsNull() || !root.IsDefined()) {
            r.error(YAML::Mark(), "the file is empty (expected a mapping of settings)");
        } else {
            r.error(root.Mark(), "expected a mapping at the top level");
        }
        out.errors = std::move(r.errors);
        return out;
    }
    try {
        r.check_keys(root, "", {"server", "auth", "store", "runs", "delivery", "deadLetter",
                                "attachments", "connectors", "subscriptions", "hostKeyFile",
                                "logging", "testSeams", "webhooks"});
        if (reader::present(root["server"])) {
            read_server(r, root["server"], c);
        }
        if (reader::present(root["auth"])) {
            read_auth(r, root["auth"], c);
        }
        if (reader::present(root["store"])) {
            read_store(r, root["store"], c);
        }
        if (reader::present(root["runs"])) {
            read_runs(r, root["runs"], c);
        }
        if (reader::present(root["delivery"])) {
            read_delivery(r, root["delivery"], c);
        }
        if (reader::present(root["deadLetter"])) {
            read_dead_letter(r, root["deadLetter"], c);
        }
        read_attachments(r, root["attachments"], c); // after delivery and deadLetter
        if (reader::present(root["connectors"])) {
            read_connectors(r, root["connectors"], c);
        }
        if (reader::present(root["subscriptions"])) {
            read_subscriptions(r, root["subscriptions"], c);
        }
        std::string hk;
        if (r.str(root, "hostKeyFile", "", hk)) {
            c.host_key_file = r.resolve(hk);
            const auto mark = root["hostKeyFile"].Mark();
            c.host_key_file_line = mark.line + 1;
            c.host_key_file_column = mark.column + 1;
        }
        YAML::Node logging = root["logging"];
        if (reader::present(logging) && r.expect_map(logging, "logging")) {
            r.check_keys(logging, "logging", {"level"});
            static constexpr const char* levels[] = {"trace", "debug", "info", "warn", "error"};
            if (auto l = r.choice(logging, "level", "logging", {"trace", "debug", "info", "warn", "error"})) {
                c.logging.level = levels[*l];
            }
        }
        r.boolean(root, "testSeams", "", c.test_seams);
        YAML::Node webhooks = root["webhooks"];
        if (reader::present(webhooks) && r.expect_map(webhooks, "webhooks")) {
            r.check_keys(webhooks, "webhooks", {"durable", "allowLoopbackHttp"});
            r.boolean(webhooks, "durable", "webhooks", c.webhooks.durable);
            r.boolean(webhooks, "allowLoopbackHttp", "webhooks", c.webhooks.allow_loopback_http);
        }
    } catch (const YAML::Exception& e) {
        // Defensive: yaml-cpp throws on odd node shapes (e.g. a sequence indexed by key).
        r.error(e.mark, "YAML error: " + e.msg);
    }
    if (c.server.public_url.empty()) {
        c.server.public_url = (c.server.tls ? "https://" : "http://") + c.server.listen;
    }
    out.errors = std::move(r.errors);
    if (out.errors.empty()) {
        out.value = std::move(c);
    }
    return out;
}

config_load_result load_config(const std::string& path, const env_lookup& env) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        config_load_result out;
        out.errors.push_back({path, 0, 0, "cannot open the file"});
        return out;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    fs::path dir = fs::absolute(fs::path(path)).parent_path();
    return parse_config(ss.str(), path, dir, env);
}

std::map<std::string, rate_limit> subscription_rate_limits(const config& c) {
    std::map<std::string, rate_limit> out;
    for (const auto& s : c.subscriptions) {
        if (s.rate_limit_override) {
            out[s.id] = *s.rate_limit_override;
        }
    }
    return out;
}

bridge_settings make_bridge_settings(const config& c) {
    bridge_settings s;
    s.public_url = c.server.public_url;
    s.default_retry = c.delivery.retry;
    s.default_breaker = c.delivery.breaker;
    s.dedup_retention_ms = std::max<millis>(c.delivery.dedup_retention_ms, 24LL * 3600 * 1000);
    s.node_timeout_ms = c.store.node_timeout_ms;
    s.dead_letter_retention_days = c.dead_letter.retention_days;
    s.dead_letter_max_page_size = c.dead_letter.max_page_size;
    s.refused_signature_retention_ms = c.dead_letter.refused_signature_retention_ms;
    s.max_in_flight_deliveries = c.delivery.max_in_flight;
    s.delivery_batch_size = c.delivery.batch_size;
    s.max_pending_intake = c.delivery.max_pending_intake;
    s.delivery_lease_ms = c.delivery.lease_ms;
    s.attempt_timeout_ms = c.delivery.attempt_timeout_ms;
    s.test_seams = c.test_seams;
    if (c.runs.mode == runs_config::mode_kind::local) {
        for (const auto& w : c.runs.workflows) {
            s.local_workflows.push_back(w.id);
        }
    }
    s.host_key_file = c.host_key_file;
    s.webhooks_durable = c.webhooks.durable;
    s.webhooks_allow_loopback_http = c.webhooks.allow_loopback_http;
    return s;
}

std::vector<subscription> make_subscriptions(const config& c, std::map<std::string, std::string>& secrets) {
    std::vector<subscription> out;
    for (const auto& sc : c.subscriptions) {
        subscription s;
        s.id = sc.id;
        s.tenant = sc.tenant;
        s.source = sc.source;
        s.state = sub_state::active;
        s.workflow_id = sc.workflow_id;
        s.dedup_enabled = sc.dedup;
        s.retry = sc.retry.value_or(c.delivery.retry);
        s.breaker = c.delivery.breaker;
        s.verification = sc.verification;
        s.schedule = sc.schedule;
        s.connector = sc.connector;
        s.connector_settings_json = sc.settings_json;
        s.hold_when_not_active = sc.hold_when_not_active;
        s.max_concurrency = sc.max_concurrency;
        s.origin = subscription::origin_kind::config;
        if (!sc.signing_secret.empty()) {
            secrets[sc.id] = sc.signing_secret;
        }
        out.push_back(std::move(s));
    }
    return out;
}

std::string run_working_directory(const config& c) {
    return c.base_dir.string();
}

std::string run_output_directory(const config& c) {
    if (c.runs.mode != runs_config::mode_kind::local) {
        return {};
    }
    const fs::path beside = c.store.backend == store_config::backend_kind::sqlite
                                ? fs::path(c.store.sqlite_path).parent_path()
                                : c.base_dir;
    return (beside / "run-output").string();
}

std::unique_ptr<run_starter> make_run_starter(const config& c) {
    if (c.runs.mode == runs_config::mode_kind::upstream) {
        return make_upstream_run_starter(c.runs.upstream);
    }
    local_run_options o;
    o.output_dir = run_output_directory(c);
    // Owner only, like the store beside it: output may carry what the workflow printed of its input.
    std::error_code ec;
    if (fs::create_directories(o.output_dir, ec)) {
        fs::permissions(o.output_dir, fs::perms::owner_all, ec);
    }
    return make_local_run_starter(c.runs.workflows, run_working_directory(c), o);
}

} // namespace wopbridge
