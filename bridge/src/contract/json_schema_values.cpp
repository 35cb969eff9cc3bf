// URI, JSON Pointer and value helpers of the JSON Schema validator.
#include "contract/json_schema_internal.hpp"

#include <boost/json/serialize.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/url.hpp>

#include <algorithm>
#include <cmath>

namespace wopbridge::schema_detail {

std::optional<std::string> resolve_uri(std::string_view base, std::string_view ref) {
    try {
        auto b = boost::urls::parse_uri(base);
        if (!b) {
            return std::nullopt;
        }
        auto r = boost::urls::parse_uri_reference(ref);
        if (!r) {
            return std::nullopt;
        }
        boost::urls::url dest;
        if (!boost::urls::resolve(*b, *r, dest)) {
            return std::nullopt;
        }
        return std::string(dest.buffer());
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

std::pair<std::string, std::string> split_fragment(std::string_view uri) {
    auto hash = uri.find('#');
    if (hash == std::string_view::npos) {
        return {std::string(uri), std::string()};
    }
    return {std::string(uri.substr(0, hash)), std::string(uri.substr(hash + 1))};
}


// Splits a decoded JSON Pointer ("/a/b~1c") into unescaped tokens; nullopt when malformed.
std::optional<std::vector<std::string>> pointer_tokens(std::string_view ptr) {
    std::vector<std::string> tokens;
    if (ptr.empty()) {
        return tokens;
    }
    if (ptr.front() != '/') {
        return std::nullopt;
    }
    std::string cur;
    for (std::size_t i = 1; i <= ptr.size(); ++i) {
        if (i == ptr.size() || ptr[i] == '/') {
            tokens.push_back(std::move(cur));
            cur.clear();
            continue;
        }
        if (ptr[i] == '~') {
            if (i + 1 >= ptr.size()) {
                return std::nullopt;
            }
            if (ptr[i + 1] == '0') {
                cur += '~';
            } else if (ptr[i + 1] == '1') {
                cur += '/';
            } else {
                return std::nullopt;
            }
            ++i;
            continue;
        }
        cur += ptr[i];
    }
    return tokens;
}

void append_token(std::string& path, std::string_view token) {
    path += '/';
    for (char c : token) {
        if (c == '~') {
            path += "~0";
        } else if (c == '/') {
            path += "~1";
        } else {
            path += c;
        }
    }
}

bool is_numeric(const json::value& v) noexcept {
    return v.is_int64() || v.is_uint64() || v.is_double();
}

double as_double(const json::value& v) noexcept {
    if (v.is_int64()) {
        return static_cast<double>(v.get_int64());
    }
    if (v.is_uint64()) {
        return static_cast<double>(v.get_uint64());
    }
    return v.get_double();
}

bool is_integral(const json::value& v) noexcept {
    if (v.is_int64() || v.is_uint64()) {
        return true;
    }
    if (v.is_double()) {
        double d = v.get_double();
        return std::isfinite(d) && std::trunc(d) == d;
    }
    return false;
}

namespace {

template <class T>
int three_way(T x, T y) noexcept {
    return x < y ? -1 : (x > y ? 1 : 0);
}

} // namespace

// -1, 0, 1; exact for two integers, through double otherwise.
int compare_numbers(const json::value& a, const json::value& b) noexcept {
    bool a_int = a.is_int64() || a.is_uint64();
    bool b_int = b.is_int64() || b.is_uint64();
    if (!a_int || !b_int) {
        return three_way(as_double(a), as_double(b));
    }
    if (a.is_int64() && b.is_int64()) {
        return three_way(a.get_int64(), b.get_int64());
    }
    // At least one is uint64, which Boost.JSON only uses above INT64_MAX.
    if (a.is_int64() && a.get_int64() < 0) {
        return -1;
    }
    if (b.is_int64() && b.get_int64() < 0) {
        return 1;
    }
    auto x = a.is_int64() ? static_cast<std::uint64_t>(a.get_int64()) : a.get_uint64();
    auto y = b.is_int64() ? static_cast<std::uint64_t>(b.get_int64()) : b.get_uint64();
    return three_way(x, y);
}

// JSON equality: numbers by value (1 == 1.0), objects regardless of key order.
bool json_equal(const json::value& a, const json::value& b, int depth) {
    if (depth > 512) {
        return false; // deeper than any sane document; treat as different rather than recurse on
    }
    if (is_numeric(a) && is_numeric(b)) {
        return compare_numbers(a, b) == 0;
    }
    if (a.kind() != b.kind()) {
        return false;
    }
    switch (a.kind()) {
    case json::kind::null:
        return true;
    case json::kind::bool_:
        return a.get_bool() == b.get_bool();
    case json::kind::string:
        return a.get_string() == b.get_string();
    case json::kind::array: {
        const auto& x = a.get_array();
        const auto& y = b.get_array();
        if (x.size() != y.size()) {
            return false;
        }
        for (std::size_t i = 0; i < x.size(); ++i) {
            if (!json_equal(x[i], y[i], depth + 1)) {
                return false;
            }
        }
        return true;
    }
    case json::kind::object: {
        const auto& x = a.get_object();
        const auto& y = b.get_object();
        if (x.size() != y.size()) {
            return false;
        }
        for (const auto& kv : x) {
            auto it = y.find(kv.key());
            if (it == y.end() || !json_equal(kv.value(), it->value(), depth + 1)) {
                return false;
            }
        }
        return true;
    }
    default:
        return false;
    }
}

// A canonical text for uniqueItems hashing: sorted keys, integral numbers without a fraction.
void canonical(const json::value& v, std::string& out, int depth) {
    if (depth > 512) {
        out += '?';
        return;
    }
    if (is_numeric(v)) {
        if (v.is_uint64()) {
            out += std::to_string(v.get_uint64());
        } else if (v.is_int64()) {
            out += std::to_string(v.get_int64());
        } else {
            double d = v.get_double();
            if (std::isfinite(d) && std::trunc(d) == d && std::fabs(d) < 9.2e18) {
                out += std::to_string(static_cast<std::int64_t>(d));
            } else {
                char buf[64];
                std::snprintf(buf, sizeof buf, "%.17g", d);
                out += buf;
            }
        }
        return;
    }
    switch (v.kind()) {
    case json::kind::array:
        out += '[';
        for (const auto& e : v.get_array()) {
            canonical(e, out, depth + 1);
            out += ',';
        }
        out += ']';
        return;
    case json::kind::object: {
        std::vector<const json::key_value_pair*> kvs;
        for (const auto& kv : v.get_object()) {
            kvs.push_back(&kv);
        }
        std::sort(kvs.begin(), kvs.end(), [](auto* l, auto* r) { return l->key() < r->key(); });
        out += '{';
        for (auto* kv : kvs) {
            out += json::serialize(json::value(kv->key()));
            out += ':';
            canonical(kv->value(), out, depth + 1);
            out += ',';
        }
        out += '}';
        return;
    }
    default:
        out += json::serialize(v);
        return;
    }
}

std::size_t code_points(std::string_view s) noexcept {
    std::size_t n = 0;
    for (unsigned char c : s) {
        if ((c & 0xC0) != 0x80) {
            ++n;
        }
    }
    return n;
}

// Non-negative integer keyword value (2 and 2.0 both accepted).
std::optional<std::uint64_t> non_negative_int(const json::value& v) noexcept {
    if (v.is_uint64()) {
        return v.get_uint64();
    }
    if (v.is_int64()) {
        if (v.get_int64() < 0) {
            return std::nullopt;
        }
        return static_cast<std::uint64_t>(v.get_int64());
    }
    if (v.is_double()) {
        double d = v.get_double();
        if (std::isfinite(d) && d >= 0 && std::trunc(d) == d && d < 1.8e19) {
            return static_cast<std::uint64_t>(d);
        }
    }
    return std::nullopt;
}

} // namespace wopbridge::schema_detail
