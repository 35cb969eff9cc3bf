#include "config/config_reader.hpp"

#include "schedule/cron.hpp"

#include <arpa/inet.h>
#include <boost/json.hpp>
#include <boost/url/parse.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace wopbridge::config_detail {

namespace fs = std::filesystem;

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

} // namespace

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

void reader::error(const YAML::Mark& m, std::string msg) {
    int line = m.line >= 0 ? m.line + 1 : 0;
    int col = m.column >= 0 ? m.column + 1 : 0;
    errors.push_back({file_, line, col, std::move(msg)});
}

bool reader::expect_map(const YAML::Node& n, const std::string& path) {
    if (!n.IsMap()) {
        error(n.Mark(), path + ": expected a mapping");
        return false;
    }
    return true;
}

bool reader::expect_seq(const YAML::Node& n, const std::string& path) {
    if (!n.IsSequence()) {
        error(n.Mark(), path + ": expected a list");
        return false;
    }
    return true;
}

void reader::check_keys(const YAML::Node& map, const std::string& path, key_list allowed) {
    check_keys(map, path, std::span<const std::string_view>(allowed.begin(), allowed.size()));
}

void reader::check_keys(const YAML::Node& map, const std::string& path,
                        std::span<const std::string_view> allowed) {
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

std::string reader::join(const std::string& path, std::string_view key) {
    return path.empty() ? std::string(key) : path + "." + std::string(key);
}

// A scalar with ${VAR} substituted.
std::optional<std::string> reader::scalar(const YAML::Node& n, const std::string& path,
                                          std::string_view what) {
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
std::optional<std::string> reader::secret(const YAML::Node& n, const std::string& path) {
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

std::string reader::resolve(const std::string& p) const {
    fs::path path(p);
    if (path.is_relative()) {
        path = base_ / path;
    }
    return path.lexically_normal().string();
}

bool reader::str(const YAML::Node& map, std::string_view key, const std::string& path,
                 std::string& out, bool is_secret, bool required) {
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

bool reader::integer(const YAML::Node& map, std::string_view key, const std::string& path,
                     long long& out, long long min, long long max) {
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

void reader::boolean(const YAML::Node& map, std::string_view key, const std::string& path,
                     bool& out) {
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

bool reader::duration(const YAML::Node& map, std::string_view key, const std::string& path,
                      millis& out, millis min) {
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

std::string reader::format_min(millis m) {
    if (m % (3600 * 1000) == 0) {
        return std::to_string(m / (3600 * 1000)) + "h";
    }
    if (m % 1000 == 0) {
        return std::to_string(m / 1000) + "s";
    }
    return std::to_string(m) + "ms";
}

// One of `choices`; returns the index.
std::optional<std::size_t> reader::choice(const YAML::Node& map, std::string_view key,
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
std::optional<boost::json::value> reader::to_json(const YAML::Node& n, const std::string& path,
                                                  const std::string& pointer) {
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

std::string reader::settings_json(const YAML::Node& map, std::string_view key,
                                  const std::string& path, settings_positions& where) {
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

source_position reader::position_of(const YAML::Mark& m) {
    if (m.line < 0 || m.column < 0) {
        return {};
    }
    return {m.line + 1, m.column + 1};
}

// A key as a JSON Pointer reference token (RFC 6901: '~' is "~0", '/' is "~1").
std::string reader::pointer_token(const std::string& key) {
    std::string out;
    for (char ch : key) {
        out += ch == '~' ? "~0" : ch == '/' ? "~1" : std::string(1, ch);
    }
    return out;
}

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

} // namespace wopbridge::config_detail
