#include "contract/json_schema.hpp"

#include <wopbridge/http_util.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/url.hpp>

#include <pthread.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <mutex>
#include <optional>
#include <regex>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

namespace wopbridge {

namespace json = boost::json;

std::string_view to_string(schema_error_kind k) noexcept {
    switch (k) {
    case schema_error_kind::invalid:
        return "invalid";
    case schema_error_kind::unresolved_ref:
        return "unresolved_ref";
    case schema_error_kind::bad_schema:
        return "bad_schema";
    case schema_error_kind::limit:
        return "limit";
    }
    return "invalid";
}

bool has_errors(const std::vector<validation_error>& errors,
                bool tolerate_unresolved_refs) noexcept {
    for (const auto& e : errors) {
        if (!(tolerate_unresolved_refs && e.kind == schema_error_kind::unresolved_ref)) {
            return true;
        }
    }
    return false;
}

std::string format_errors(const std::vector<validation_error>& errors) {
    std::string out;
    for (const auto& e : errors) {
        out += e.instance_path.empty() ? std::string("(root)") : e.instance_path;
        out += ": ";
        out += e.message;
        if (e.kind != schema_error_kind::invalid) {
            out += " (";
            out += to_string(e.kind);
            out += ")";
        }
        out += " [at ";
        out += e.schema_path.empty() ? std::string("#") : e.schema_path;
        out += "]\n";
    }
    return out;
}

namespace {

// Base for documents without an `$id`: the reserved .invalid TLD makes clear it is never fetched.
constexpr std::string_view synthetic_base = "https://wopbridge.invalid/";
constexpr int max_walk_depth = 512; // registration walk over hostile documents

struct location {
    const json::value* node = nullptr;
    std::string outer_base; // the base URI in effect where `node` sits (before its own $id)
};

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

template <class T>
int three_way(T x, T y) noexcept {
    return x < y ? -1 : (x > y ? 1 : 0);
}

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
bool json_equal(const json::value& a, const json::value& b, int depth = 0) {
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

// ---- formats ------------------------------------------------------------------------------------

bool digits(std::string_view s, std::size_t pos, std::size_t n, int& out) {
    if (pos + n > s.size()) {
        return false;
    }
    out = 0;
    for (std::size_t i = pos; i < pos + n; ++i) {
        if (s[i] < '0' || s[i] > '9') {
            return false;
        }
        out = out * 10 + (s[i] - '0');
    }
    return true;
}

bool valid_full_date(std::string_view s) {
    int y = 0;
    int m = 0;
    int d = 0;
    if (s.size() != 10 || !digits(s, 0, 4, y) || s[4] != '-' || !digits(s, 5, 2, m) ||
        s[7] != '-' || !digits(s, 8, 2, d)) {
        return false;
    }
    if (m < 1 || m > 12 || d < 1) {
        return false;
    }
    static constexpr int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int max_d = days[m - 1];
    if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0)) {
        max_d = 29;
    }
    return d <= max_d;
}

// RFC 3339 full-time: HH:MM:SS[.frac](Z|+HH:MM|-HH:MM); a leap second only at 23:59:60 UTC.
bool valid_full_time(std::string_view s) {
    int h = 0;
    int mi = 0;
    int sec = 0;
    if (s.size() < 9 || !digits(s, 0, 2, h) || s[2] != ':' || !digits(s, 3, 2, mi) || s[5] != ':' ||
        !digits(s, 6, 2, sec)) {
        return false;
    }
    std::size_t i = 8;
    if (i < s.size() && s[i] == '.') {
        ++i;
        std::size_t start = i;
        while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
            ++i;
        }
        if (i == start) {
            return false;
        }
    }
    if (i >= s.size()) {
        return false;
    }
    int off_h = 0;
    int off_m = 0;
    int sign = 0;
    if (s[i] == 'Z' || s[i] == 'z') {
        if (i + 1 != s.size()) {
            return false;
        }
    } else if (s[i] == '+' || s[i] == '-') {
        sign = s[i] == '+' ? 1 : -1;
        if (s.size() != i + 6 || !digits(s, i + 1, 2, off_h) || s[i + 3] != ':' ||
            !digits(s, i + 4, 2, off_m)) {
            return false;
        }
        if (off_h > 23 || off_m > 59) {
            return false;
        }
    } else {
        return false;
    }
    if (h > 23 || mi > 59 || sec > 60) {
        return false;
    }
    if (sec == 60) {
        int utc = (h * 60 + mi - sign * (off_h * 60 + off_m)) % (24 * 60);
        if (utc < 0) {
            utc += 24 * 60;
        }
        return utc == 23 * 60 + 59;
    }
    return true;
}

bool valid_date_time(std::string_view s) {
    if (s.size() < 20) {
        return false;
    }
    if (s[10] != 'T' && s[10] != 't') {
        return false;
    }
    return valid_full_date(s.substr(0, 10)) && valid_full_time(s.substr(11));
}

bool ascii_only(std::string_view s) {
    return std::all_of(s.begin(), s.end(),
                       [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

bool valid_uri(std::string_view s) {
    return ascii_only(s) && boost::urls::parse_uri(s).has_value();
}

bool valid_uri_reference(std::string_view s) {
    return ascii_only(s) && boost::urls::parse_uri_reference(s).has_value();
}

// Returns nullopt for a format this validator does not assert (annotation only).
std::optional<bool> check_format(std::string_view format, std::string_view s) {
    if (format == "date-time") {
        return valid_date_time(s);
    }
    if (format == "date") {
        return valid_full_date(s);
    }
    if (format == "time") {
        return valid_full_time(s);
    }
    if (format == "uri") {
        return valid_uri(s);
    }
    if (format == "uri-reference") {
        return valid_uri_reference(s);
    }
    return std::nullopt;
}

// ---- regex matching with a bounded stack
// ---------------------------------------------------------
//
// libstdc++'s ECMAScript std::regex matches depth-first, recursing for every NFA state it passes,
// so stack use grows with subject length times pattern size (measured: ~90 bytes per subject
// character per pattern character for nested groups; a 24-character pattern overflows an 8 MiB
// stack at 4000 characters). A hostile schema must not be able to crash the host that way: small
// matches run inline, larger ones on a short-lived thread with a big (lazily committed) stack, and
// anything larger than that budget is refused with a `limit` error.

enum class match_result { match, no_match, too_large, failed };

constexpr std::size_t bytes_per_unit = 256;               // generous: debug builds use more
constexpr std::size_t inline_stack_budget = 512 * 1024;   // assumed free on any caller's stack
constexpr std::size_t big_stack_size = 256 * 1024 * 1024; // virtual; committed as touched

struct search_job {
    const std::regex* re;
    std::string_view subject;
    match_result result = match_result::failed;
    void operator()() noexcept {
        try {
            result = std::regex_search(subject.begin(), subject.end(), *re)
                         ? match_result::match
                         : match_result::no_match;
        } catch (...) {
            result = match_result::failed;
        }
    }
};

void* run_search_job(void* p) {
    (*static_cast<search_job*>(p))();
    return nullptr;
}

match_result safe_search(const std::regex& re, std::size_t pattern_size, std::string_view subject,
                         std::size_t max_subject) {
    if (subject.size() > max_subject) {
        return match_result::too_large;
    }
    std::size_t units = (subject.size() + 1) * (pattern_size + 1);
    search_job job{&re, subject};
    if (units * bytes_per_unit <= inline_stack_budget) {
        job();
        return job.result;
    }
    if (units * bytes_per_unit > big_stack_size) {
        return match_result::too_large;
    }
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) != 0) {
        return match_result::failed;
    }
    pthread_t thread;
    int rc = pthread_attr_setstacksize(&attr, big_stack_size);
    if (rc == 0) {
        rc = pthread_create(&thread, &attr, &run_search_job, &job);
    }
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        return match_result::failed;
    }
    pthread_join(thread, nullptr);
    return job.result;
}

} // namespace

// ---- the registry -------------------------------------------------------------------------------

struct schema_registry::impl {
    schema_limits limits;
    std::vector<std::unique_ptr<json::value>> documents; // stable addresses
    std::unordered_map<std::string, location> by_uri;    // resource URIs and "uri#anchor"
    std::unordered_map<std::string, location> by_name;

    struct compiled_regex {
        std::shared_ptr<const std::regex> re; // null: `error` says why
        std::string error;
    };
    mutable std::mutex regex_mutex;
    mutable std::unordered_map<std::string, compiled_regex> regex_cache;

    compiled_regex regex_for(const std::string& pattern) const {
        std::lock_guard lock(regex_mutex);
        auto it = regex_cache.find(pattern);
        if (it != regex_cache.end()) {
            return it->second;
        }
        compiled_regex c;
        if (pattern.size() > limits.max_pattern_length) {
            c.error =
                "pattern longer than " + std::to_string(limits.max_pattern_length) + " characters";
        } else {
            try {
                c.re = std::make_shared<const std::regex>(pattern, std::regex::ECMAScript);
            } catch (const std::exception& e) {
                c.error = std::string("invalid pattern: ") + e.what();
            }
        }
        if (regex_cache.size() < 4096) {
            regex_cache.emplace(pattern, c);
        }
        return c;
    }

    // Registers embedded $id resources and $anchors below `node`.
    void walk(const json::value& node, const std::string& outer_base, int depth) {
        if (depth > max_walk_depth) {
            return;
        }
        if (node.is_array()) {
            for (const auto& e : node.get_array()) {
                walk(e, outer_base, depth + 1);
            }
            return;
        }
        if (!node.is_object()) {
            return;
        }
        const auto& obj = node.get_object();
        std::string base = outer_base;
        if (auto it = obj.find("$id"); it != obj.end() && it->value().is_string()) {
            if (auto r = resolve_uri(outer_base, it->value().get_string())) {
                base = split_fragment(*r).first;
                by_uri.try_emplace(base, location{&node, outer_base});
            }
        }
        if (auto it = obj.find("$anchor"); it != obj.end() && it->value().is_string()) {
            by_uri.try_emplace(base + "#" + std::string(it->value().get_string()),
                               location{&node, outer_base});
        }
        for (const auto& kv : obj) {
            auto k = kv.key();
            if (k == "enum" || k == "const" || k == "default" || k == "examples") {
                continue; // data, not schemas: an "$id" in there identifies nothing
            }
            walk(kv.value(), base, depth + 1);
        }
    }

    // Resolves an absolute URI with optional fragment to a schema location.
    // Returns nullopt with `why` set; `unresolved` tells a missing document from a bad fragment.
    std::optional<location> lookup(const std::unordered_map<std::string, location>& map,
                                   std::string_view uri, std::string& why, bool& unresolved) const {
        auto [doc, fragment_raw] = split_fragment(uri);
        auto it = map.find(doc);
        if (it == map.end()) {
            unresolved = true;
            why = "no schema document '" + doc + "' in the registry";
            return std::nullopt;
        }
        auto fragment = http::percent_decode(fragment_raw);
        if (!fragment) {
            why = "malformed percent-encoding in fragment";
            return std::nullopt;
        }
        if (fragment->empty()) {
            return it->second;
        }
        if (fragment->front() != '/') {
            auto a = by_uri.find(base_of(it->second) + "#" + *fragment);
            if (a == by_uri.end()) {
                unresolved = true;
                why = "no anchor '" + *fragment + "' in '" + doc + "'";
                return std::nullopt;
            }
            return a->second;
        }
        auto tokens = pointer_tokens(*fragment);
        if (!tokens) {
            why = "malformed JSON Pointer '" + *fragment + "'";
            return std::nullopt;
        }
        location loc = it->second;
        for (const auto& t : *tokens) {
            loc.outer_base = base_of(loc);
            const json::value* next = nullptr;
            if (loc.node->is_object()) {
                auto f = loc.node->get_object().find(t);
                if (f != loc.node->get_object().end()) {
                    next = &f->value();
                }
            } else if (loc.node->is_array()) {
                const auto& arr = loc.node->get_array();
                bool ok =
                    !t.empty() && t.size() < 19 &&
                    std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
                    (t.size() == 1 || t[0] != '0');
                if (ok) {
                    auto idx = std::stoull(t);
                    if (idx < arr.size()) {
                        next = &arr[idx];
                    }
                }
            }
            if (next == nullptr) {
                why = "JSON Pointer '" + *fragment + "' does not exist in '" + doc + "'";
                return std::nullopt;
            }
            loc.node = next;
        }
        return loc;
    }

    // The base URI in effect inside `loc.node` (after its own $id).
    static std::string base_of(const location& loc) {
        if (loc.node->is_object()) {
            const auto& obj = loc.node->get_object();
            if (auto it = obj.find("$id"); it != obj.end() && it->value().is_string()) {
                if (auto r = resolve_uri(loc.outer_base, it->value().get_string())) {
                    return split_fragment(*r).first;
                }
            }
        }
        return loc.outer_base;
    }
};

// ---- evaluation ---------------------------------------------------------------------------------

namespace {

class evaluator {
public:
    evaluator(const schema_registry::impl& reg, std::vector<validation_error>& out)
        : reg_(reg), out_(&out) {}

    bool eval(const json::value& inst, const location& at, int depth) {
        // Once a limit is hit the outcome is a `limit` error whatever else happens: stop all
        // work. The work budget exists because branching $ref cycles (anyOf of two refs back to
        // itself) are exponential within any depth limit.
        if (exhausted_) {
            return false;
        }
        if (++steps_ > reg_.limits.max_evaluations) {
            return stop("validation stopped after " +
                        std::to_string(reg_.limits.max_evaluations) + " subschema evaluations");
        }
        if (depth > reg_.limits.max_depth) {
            return stop("schema nesting deeper than " + std::to_string(reg_.limits.max_depth) +
                        " (a recursive $ref?)");
        }
        const json::value& schema = *at.node;
        if (schema.is_bool()) {
            if (!schema.get_bool()) {
                report(schema_error_kind::invalid, "the schema 'false' allows no value");
                return false;
            }
            return true;
        }
        if (!schema.is_object()) {
            report(schema_error_kind::bad_schema, "a schema must be an object or a boolean");
            return false;
        }
        const auto& s = schema.get_object();
        std::string base = at.outer_base;
        if (auto it = s.find("$id"); it != s.end()) {
            if (!it->value().is_string()) {
                report(schema_error_kind::bad_schema, "$id must be a string");
                return false;
            }
            auto r = resolve_uri(at.outer_base, it->value().get_string());
            if (!r) {
                report(schema_error_kind::bad_schema, "$id is not a valid URI reference");
                return false;
            }
            base = split_fragment(*r).first;
        }

        bool ok = true;
        for (const auto& kv : s) {
            ok = keyword(inst, s, kv.key(), kv.value(), base, depth) && ok;
        }
        return ok;
    }

private:
    struct path_mark {
        std::string& path;
        std::size_t size;
        path_mark(std::string& p, std::string_view token) : path(p), size(p.size()) {
            append_token(path, token);
        }
        path_mark(std::string& p, std::size_t index) : path(p), size(p.size()) {
            append_token(path, std::to_string(index));
        }
        ~path_mark() { path.resize(size); }
        path_mark(const path_mark&) = delete;
        path_mark& operator=(const path_mark&) = delete;
    };

    bool stop(std::string message) {
        exhausted_ = true;
        report(schema_error_kind::limit, std::move(message));
        return false;
    }

    void report(schema_error_kind kind, std::string message) {
        out_->push_back({instance_path_, schema_path_, std::move(message), kind});
    }

    // Keeps the non-`invalid` errors of a discarded branch: they say the schema could not be
    // fully evaluated, which the caller must hear whatever the branch's outcome.
    void keep_hard_errors(std::vector<validation_error>& branch, bool* had_unresolved = nullptr) {
        for (auto& e : branch) {
            if (e.kind != schema_error_kind::invalid) {
                if (e.kind == schema_error_kind::unresolved_ref && had_unresolved) {
                    *had_unresolved = true;
                }
                out_->push_back(std::move(e));
            }
        }
    }

    // Evaluates a subschema into a private error list (for anyOf/oneOf/not/if/contains).
    bool probe(const json::value& inst, const json::value& sub, const std::string& base, int depth,
               std::vector<validation_error>& errors) {
        auto* saved = out_;
        out_ = &errors;
        bool ok = eval(inst, location{&sub, base}, depth + 1);
        out_ = saved;
        return ok;
    }

    bool sub(const json::value& inst, const json::value& schema, const std::string& base,
             int depth) {
        return eval(inst, location{&schema, base}, depth + 1);
    }

    bool bad(std::string message) {
        report(schema_error_kind::bad_schema, std::move(message));
        return false;
    }

    bool keyword(const json::value& inst, const json::object& s, std::string_view k,
                 const json::value& v, const std::string& base, int depth) {
        path_mark kw(schema_path_, k);
        if (k == "$ref") {
            return ref(inst, v, base, depth);
        }
        if (k == "type") {
            return type(inst, v);
        }
        if (k == "enum") {
            if (!v.is_array()) {
                return bad("enum must be an array");
            }
            for (const auto& e : v.get_array()) {
                if (json_equal(inst, e)) {
                    return true;
                }
            }
            report(schema_error_kind::invalid, "value is not one of the enum values");
            return false;
        }
        if (k == "const") {
            if (json_equal(inst, v)) {
                return true;
            }
            report(schema_error_kind::invalid, "value does not equal the const value");
            return false;
        }
        if (k == "allOf" || k == "anyOf" || k == "oneOf") {
            return combinator(inst, k, v, base, depth);
        }
        if (k == "not") {
            std::vector<validation_error> branch;
            bool matched = probe(inst, v, base, depth, branch);
            bool unresolved = false;
            keep_hard_errors(branch, &unresolved);
            if (matched && !unresolved) {
                report(schema_error_kind::invalid, "value matches the schema in 'not'");
                return false;
            }
            return true;
        }
        if (k == "if") {
            return conditional(inst, s, v, base, depth);
        }
        if (k == "then" || k == "else") {
            return true; // evaluated by "if"
        }
        if (is_numeric(inst)) {
            return number_keyword(inst, k, v);
        }
        if (inst.is_string()) {
            return string_keyword(inst.get_string(), k, v);
        }
        if (inst.is_array()) {
            return array_keyword(inst.get_array(), s, k, v, base, depth);
        }
        if (inst.is_object()) {
            return object_keyword(inst.get_object(), s, k, v, base, depth);
        }
        return true;
    }

    bool ref(const json::value& inst, const json::value& v, const std::string& base, int depth) {
        if (!v.is_string()) {
            return bad("$ref must be a string");
        }
        auto target = resolve_uri(base, v.get_string());
        if (!target) {
            return bad("$ref is not a valid URI reference");
        }
        std::string why;
        bool unresolved = false;
        auto loc = reg_.lookup(reg_.by_uri, *target, why, unresolved);
        if (!loc) {
            if (unresolved) {
                // Reported distinctly and treated as passing: see the header.
                report(schema_error_kind::unresolved_ref, "unresolved $ref: " + why);
                return true;
            }
            return bad("bad $ref: " + why);
        }
        return eval(inst, *loc, depth + 1);
    }

    bool type(const json::value& inst, const json::value& v) {
        auto matches = [&](std::string_view t, bool& known) {
            known = true;
            if (t == "null") {
                return inst.is_null();
            }
            if (t == "boolean") {
                return inst.is_bool();
            }
            if (t == "object") {
                return inst.is_object();
            }
            if (t == "array") {
                return inst.is_array();
            }
            if (t == "number") {
                return is_numeric(inst);
            }
            if (t == "integer") {
                return is_integral(inst);
            }
            if (t == "string") {
                return inst.is_string();
            }
            known = false;
            return false;
        };
        bool known = true;
        if (v.is_string()) {
            if (matches(v.get_string(), known)) {
                return true;
            }
            if (!known) {
                return bad("unknown type name");
            }
            report(schema_error_kind::invalid,
                   "expected type " + std::string(v.get_string()) + ", got " + kind_name(inst));
            return false;
        }
        if (!v.is_array()) {
            return bad("type must be a string or an array of strings");
        }
        std::string names;
        for (const auto& t : v.get_array()) {
            if (!t.is_string()) {
                return bad("type must be a string or an array of strings");
            }
            if (matches(t.get_string(), known)) {
                return true;
            }
            if (!known) {
                return bad("unknown type name");
            }
            names += names.empty() ? "" : "|";
            names += t.get_string();
        }
        report(schema_error_kind::invalid, "expected type " + names + ", got " + kind_name(inst));
        return false;
    }

    static std::string kind_name(const json::value& inst) {
        switch (inst.kind()) {
        case json::kind::null:
            return "null";
        case json::kind::bool_:
            return "boolean";
        case json::kind::string:
            return "string";
        case json::kind::array:
            return "array";
        case json::kind::object:
            return "object";
        default:
            return is_integral(inst) ? "integer" : "number";
        }
    }

    bool combinator(const json::value& inst, std::string_view k, const json::value& v,
                    const std::string& base, int depth) {
        if (!v.is_array() || v.get_array().empty()) {
            return bad(std::string(k) + " must be a non-empty array of schemas");
        }
        const auto& arr = v.get_array();
        if (k == "allOf") {
            bool ok = true;
            for (std::size_t i = 0; i < arr.size(); ++i) {
                path_mark m(schema_path_, i);
                ok = sub(inst, arr[i], base, depth) && ok;
            }
            return ok;
        }
        std::size_t passed = 0;
        std::size_t first_passed = 0;
        std::size_t second_passed = 0;
        for (std::size_t i = 0; i < arr.size(); ++i) {
            path_mark m(schema_path_, i);
            std::vector<validation_error> branch;
            bool ok = probe(inst, arr[i], base, depth, branch);
            keep_hard_errors(branch);
            if (ok) {
                ++passed;
                if (passed == 1) {
                    first_passed = i;
                } else if (passed == 2) {
                    second_passed = i;
                }
                if (k == "anyOf") {
                    return true; // no annotation collection, so short-circuit is fine
                }
            }
        }
        if (k == "anyOf") {
            report(schema_error_kind::invalid,
                   "value matches none of the " + std::to_string(arr.size()) + " anyOf schemas");
            return false;
        }
        if (passed == 1) {
            return true;
        }
        if (passed == 0) {
            report(schema_error_kind::invalid,
                   "value matches none of the " + std::to_string(arr.size()) + " oneOf schemas");
        } else {
            report(schema_error_kind::invalid, "value matches more than one oneOf schema (" +
                                                   std::to_string(first_passed) + " and " +
                                                   std::to_string(second_passed) + ")");
        }
        return false;
    }

    bool conditional(const json::value& inst, const json::object& s, const json::value& v,
                     const std::string& base, int depth) {
        std::vector<validation_error> branch;
        bool cond = probe(inst, v, base, depth, branch);
        keep_hard_errors(branch);
        std::string_view next = cond ? "then" : "else";
        auto it = s.find(next);
        if (it == s.end()) {
            return true;
        }
        // Errors point at then/else, not at if.
        auto saved = schema_path_;
        schema_path_.resize(schema_path_.size() - 3); // drop "/if"
        append_token(schema_path_, next);
        bool ok = sub(inst, it->value(), base, depth);
        schema_path_ = std::move(saved);
        return ok;
    }

    bool number_keyword(const json::value& inst, std::string_view k, const json::value& v) {
        bool is_min = k == "minimum";
        bool is_max = k == "maximum";
        bool is_xmin = k == "exclusiveMinimum";
        bool is_xmax = k == "exclusiveMaximum";
        if (is_min || is_max || is_xmin || is_xmax) {
            if (!is_numeric(v)) {
                return bad(std::string(k) + " must be a number");
            }
            int c = compare_numbers(inst, v);
            bool ok = is_min ? c >= 0 : is_max ? c <= 0 : is_xmin ? c > 0 : c < 0;
            if (!ok) {
                report(schema_error_kind::invalid,
                       std::string("value violates ") + std::string(k) + " " + json::serialize(v));
            }
            return ok;
        }
        if (k == "multipleOf") {
            if (!is_numeric(v) || !(as_double(v) > 0)) {
                return bad("multipleOf must be a number greater than 0");
            }
            bool ok = false;
            if ((inst.is_int64() || inst.is_uint64()) && (v.is_int64() || v.is_uint64())) {
                auto d = v.is_int64() ? static_cast<std::uint64_t>(v.get_int64()) : v.get_uint64();
                auto x = inst.is_int64()
                             ? (inst.get_int64() < 0
                                    ? static_cast<std::uint64_t>(-(inst.get_int64() + 1)) + 1
                                    : static_cast<std::uint64_t>(inst.get_int64()))
                             : inst.get_uint64();
                ok = x % d == 0;
            } else {
                double q = as_double(inst) / as_double(v);
                if (std::isfinite(q)) {
                    // Decimal fractions are inexact in binary (19.99 / 0.01 is 1998.9999...):
                    // allow the rounding error of the division, relative for large quotients.
                    ok = std::fabs(q - std::round(q)) <= std::max(1e-9, std::fabs(q) * 1e-12);
                }
            }
            if (!ok) {
                report(schema_error_kind::invalid,
                       "value is not a multiple of " + json::serialize(v));
            }
            return ok;
        }
        return true;
    }

    bool string_keyword(std::string_view str, std::string_view k, const json::value& v) {
        if (k == "minLength" || k == "maxLength") {
            auto n = non_negative_int(v);
            if (!n) {
                return bad(std::string(k) + " must be a non-negative integer");
            }
            auto len = code_points(str);
            bool ok = k == "minLength" ? len >= *n : len <= *n;
            if (!ok) {
                report(schema_error_kind::invalid, std::string("string length ") +
                                                       std::to_string(len) + " violates " +
                                                       std::string(k) + " " + std::to_string(*n));
            }
            return ok;
        }
        if (k == "pattern") {
            if (!v.is_string()) {
                return bad("pattern must be a string");
            }
            int r = search(v.get_string(), str);
            if (r < 0) {
                return false;
            }
            if (r == 0) {
                report(schema_error_kind::invalid,
                       "string does not match pattern " + json::serialize(v));
                return false;
            }
            return true;
        }
        if (k == "format") {
            if (!v.is_string()) {
                return bad("format must be a string");
            }
            auto ok = check_format(v.get_string(), str);
            if (ok && !*ok) {
                report(schema_error_kind::invalid,
                       "string is not a valid " + std::string(v.get_string()));
                return false;
            }
            return true;
        }
        return true;
    }

    // 1 match, 0 no match, -1 error (already reported).
    int search(std::string_view pattern, std::string_view subject) {
        auto c = reg_.regex_for(std::string(pattern));
        if (!c.re) {
            report(schema_error_kind::bad_schema, c.error);
            return -1;
        }
        switch (safe_search(*c.re, pattern.size(), subject, reg_.limits.max_pattern_subject)) {
        case match_result::match:
            return 1;
        case match_result::no_match:
            return 0;
        case match_result::too_large:
            report(schema_error_kind::limit,
                   "string of " + std::to_string(subject.size()) +
                       " bytes is too long to match against this pattern safely");
            return -1;
        case match_result::failed:
            break;
        }
        report(schema_error_kind::limit, "pattern matching failed (regex engine limit)");
        return -1;
    }

    bool array_keyword(const json::array& arr, const json::object& s, std::string_view k,
                       const json::value& v, const std::string& base, int depth) {
        if (k == "minItems" || k == "maxItems") {
            auto n = non_negative_int(v);
            if (!n) {
                return bad(std::string(k) + " must be a non-negative integer");
            }
            bool ok = k == "minItems" ? arr.size() >= *n : arr.size() <= *n;
            if (!ok) {
                report(schema_error_kind::invalid, "array has " + std::to_string(arr.size()) +
                                                       " items, violating " + std::string(k) + " " +
                                                       std::to_string(*n));
            }
            return ok;
        }
        if (k == "uniqueItems") {
            if (!v.is_bool()) {
                return bad("uniqueItems must be a boolean");
            }
            if (!v.get_bool()) {
                return true;
            }
            std::unordered_map<std::string, std::size_t> seen;
            for (std::size_t i = 0; i < arr.size(); ++i) {
                std::string key;
                canonical(arr[i], key, 0);
                auto [it, inserted] = seen.emplace(std::move(key), i);
                if (!inserted) {
                    report(schema_error_kind::invalid, "items " + std::to_string(it->second) +
                                                           " and " + std::to_string(i) +
                                                           " are equal (uniqueItems)");
                    return false;
                }
            }
            return true;
        }
        if (k == "prefixItems") {
            if (!v.is_array()) {
                return bad("prefixItems must be an array of schemas");
            }
            const auto& ps = v.get_array();
            bool ok = true;
            for (std::size_t i = 0; i < ps.size() && i < arr.size(); ++i) {
                path_mark sm(schema_path_, i);
                path_mark im(instance_path_, i);
                ok = sub(arr[i], ps[i], base, depth) && ok;
            }
            return ok;
        }
        if (k == "items") {
            if (v.is_array()) {
                return bad("items must be a schema (the array form is prefixItems in 2020-12)");
            }
            std::size_t start = 0;
            if (auto it = s.find("prefixItems"); it != s.end() && it->value().is_array()) {
                start = it->value().get_array().size();
            }
            bool ok = true;
            for (std::size_t i = start; i < arr.size(); ++i) {
                path_mark im(instance_path_, i);
                ok = sub(arr[i], v, base, depth) && ok;
            }
            return ok;
        }
        if (k == "contains") {
            std::optional<std::uint64_t> min_c = 1;
            std::optional<std::uint64_t> max_c;
            if (auto it = s.find("minContains"); it != s.end()) {
                min_c = non_negative_int(it->value());
                if (!min_c) {
                    return bad("minContains must be a non-negative integer");
                }
            }
            if (auto it = s.find("maxContains"); it != s.end()) {
                max_c = non_negative_int(it->value());
                if (!max_c) {
                    return bad("maxContains must be a non-negative integer");
                }
            }
            std::uint64_t count = 0;
            for (std::size_t i = 0; i < arr.size(); ++i) {
                std::vector<validation_error> branch;
                path_mark im(instance_path_, i);
                if (probe(arr[i], v, base, depth, branch)) {
                    ++count;
                }
                keep_hard_errors(branch);
            }
            if (count < *min_c) {
                report(schema_error_kind::invalid, "array contains " + std::to_string(count) +
                                                       " matching items, fewer than " +
                                                       std::to_string(*min_c));
                return false;
            }
            if (max_c && count > *max_c) {
                report(schema_error_kind::invalid, "array contains " + std::to_string(count) +
                                                       " matching items, more than maxContains " +
                                                       std::to_string(*max_c));
                return false;
            }
            return true;
        }
        return true;
    }

    bool object_keyword(const json::object& obj, const json::object& s, std::string_view k,
                        const json::value& v, const std::string& base, int depth) {
        if (k == "required") {
            if (!v.is_array()) {
                return bad("required must be an array of strings");
            }
            bool ok = true;
            for (const auto& name : v.get_array()) {
                if (!name.is_string()) {
                    return bad("required must be an array of strings");
                }
                if (!obj.contains(name.get_string())) {
                    report(schema_error_kind::invalid,
                           "missing required property '" + std::string(name.get_string()) + "'");
                    ok = false;
                }
            }
            return ok;
        }
        if (k == "properties") {
            if (!v.is_object()) {
                return bad("properties must be an object");
            }
            bool ok = true;
            for (const auto& p : v.get_object()) {
                auto it = obj.find(p.key());
                if (it == obj.end()) {
                    continue;
                }
                path_mark sm(schema_path_, p.key());
                path_mark im(instance_path_, p.key());
                ok = sub(it->value(), p.value(), base, depth) && ok;
            }
            return ok;
        }
        if (k == "patternProperties") {
            if (!v.is_object()) {
                return bad("patternProperties must be an object");
            }
            bool ok = true;
            for (const auto& p : v.get_object()) {
                path_mark sm(schema_path_, p.key());
                for (const auto& m : obj) {
                    int r = search(p.key(), m.key());
                    if (r < 0) {
                        return false;
                    }
                    if (r == 1) {
                        path_mark im(instance_path_, m.key());
                        ok = sub(m.value(), p.value(), base, depth) && ok;
                    }
                }
            }
            return ok;
        }
        if (k == "additionalProperties") {
            const json::object* props = nullptr;
            const json::object* patterns = nullptr;
            if (auto it = s.find("properties"); it != s.end() && it->value().is_object()) {
                props = &it->value().get_object();
            }
            if (auto it = s.find("patternProperties"); it != s.end() && it->value().is_object()) {
                patterns = &it->value().get_object();
            }
            bool ok = true;
            for (const auto& m : obj) {
                if (props && props->contains(m.key())) {
                    continue;
                }
                bool matched = false;
                if (patterns) {
                    for (const auto& p : *patterns) {
                        auto c = reg_.regex_for(std::string(p.key()));
                        if (!c.re) {
                            continue; // reported by patternProperties
                        }
                        if (safe_search(*c.re, p.key().size(), m.key(),
                                        reg_.limits.max_pattern_subject) == match_result::match) {
                            matched = true; // failures were reported by patternProperties
                            break;
                        }
                    }
                }
                if (matched) {
                    continue;
                }
                path_mark im(instance_path_, m.key());
                if (v.is_bool() && !v.get_bool()) {
                    report(schema_error_kind::invalid, "property is not allowed "
                                                       "(additionalProperties: false)");
                    ok = false;
                    continue;
                }
                ok = sub(m.value(), v, base, depth) && ok;
            }
            return ok;
        }
        if (k == "propertyNames") {
            bool ok = true;
            for (const auto& m : obj) {
                path_mark im(instance_path_, m.key());
                ok = sub(json::value(m.key()), v, base, depth) && ok;
            }
            return ok;
        }
        if (k == "minProperties" || k == "maxProperties") {
            auto n = non_negative_int(v);
            if (!n) {
                return bad(std::string(k) + " must be a non-negative integer");
            }
            bool ok = k == "minProperties" ? obj.size() >= *n : obj.size() <= *n;
            if (!ok) {
                report(schema_error_kind::invalid, "object has " + std::to_string(obj.size()) +
                                                       " properties, violating " + std::string(k) +
                                                       " " + std::to_string(*n));
            }
            return ok;
        }
        if (k == "dependentRequired") {
            if (!v.is_object()) {
                return bad("dependentRequired must be an object");
            }
            bool ok = true;
            for (const auto& d : v.get_object()) {
                if (!d.value().is_array()) {
                    return bad("dependentRequired values must be arrays of strings");
                }
                if (!obj.contains(d.key())) {
                    continue;
                }
                for (const auto& name : d.value().get_array()) {
                    if (!name.is_string()) {
                        return bad("dependentRequired values must be arrays of strings");
                    }
                    if (!obj.contains(name.get_string())) {
                        report(schema_error_kind::invalid,
                               "property '" + std::string(name.get_string()) +
                                   "' is required when '" + std::string(d.key()) + "' is present");
                        ok = false;
                    }
                }
            }
            return ok;
        }
        if (k == "dependentSchemas") {
            if (!v.is_object()) {
                return bad("dependentSchemas must be an object");
            }
            bool ok = true;
            for (const auto& d : v.get_object()) {
                if (!obj.contains(d.key())) {
                    continue;
                }
                path_mark sm(schema_path_, d.key());
                ok = sub(json::value(obj), d.value(), base, depth) && ok;
            }
            return ok;
        }
        return true;
    }

    const schema_registry::impl& reg_;
    std::vector<validation_error>* out_;
    std::string instance_path_;
    std::string schema_path_;
    std::size_t steps_ = 0;
    bool exhausted_ = false;
};

} // namespace

schema_registry::schema_registry(schema_limits limits) : impl_(std::make_unique<impl>()) {
    impl_->limits = limits;
}
schema_registry::~schema_registry() = default;
schema_registry::schema_registry(schema_registry&&) noexcept = default;
schema_registry& schema_registry::operator=(schema_registry&&) noexcept = default;

result<void> schema_registry::add(json::value document, std::string name) {
    if (!document.is_object() && !document.is_bool()) {
        return make_error_code(errc::invalid_argument);
    }
    if (!name.empty() && impl_->by_name.count(name) != 0) {
        return make_error_code(errc::already_exists);
    }
    // An absolute-URI name is the document's retrieval URI (e.g. a well-known remote).
    std::string retrieval =
        boost::urls::parse_uri(name)
            ? split_fragment(name).first
            : std::string(synthetic_base) +
                  (name.empty() ? "doc-" + std::to_string(impl_->documents.size()) + ".json"
                                : name);
    // The retrieval URI must itself parse, or relative resolution against it fails later.
    if (!boost::urls::parse_uri(retrieval)) {
        return make_error_code(errc::invalid_argument);
    }
    location root{nullptr, retrieval};
    std::string base = retrieval;
    if (document.is_object()) {
        const auto& obj = document.get_object();
        if (auto it = obj.find("$id"); it != obj.end()) {
            if (!it->value().is_string()) {
                return make_error_code(errc::invalid_argument);
            }
            auto r = resolve_uri(retrieval, it->value().get_string());
            if (!r) {
                return make_error_code(errc::invalid_argument);
            }
            base = split_fragment(*r).first;
        }
    }
    if (impl_->by_uri.count(base) != 0) {
        return make_error_code(errc::already_exists);
    }
    auto doc = std::make_unique<json::value>(std::move(document));
    root.node = doc.get();
    impl_->by_uri.emplace(base, root);
    if (base != retrieval) {
        impl_->by_uri.try_emplace(retrieval, root);
    }
    if (!name.empty()) {
        impl_->by_name.emplace(name, root);
    }
    impl_->walk(*doc, retrieval, 0);
    impl_->documents.push_back(std::move(doc));
    return {};
}

result<void> schema_registry::add_file(const std::filesystem::path& file, std::string name) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
        return make_error_code(errc::not_found);
    }
    std::stringstream ss;
    ss << in.rdbuf();
    boost::system::error_code ec;
    json::parse_options opts;
    opts.max_depth = 1000;
    auto doc = json::parse(ss.str(), ec, {}, opts);
    if (ec) {
        return make_error_code(errc::invalid_argument);
    }
    return add(std::move(doc), name.empty() ? file.filename().string() : std::move(name));
}

result<std::size_t> schema_registry::add_directory(const std::filesystem::path& dir) {
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) {
        return make_error_code(errc::not_found);
    }
    std::vector<std::filesystem::path> files;
    for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
        auto fname = it->path().filename().string();
        constexpr std::string_view suffix = ".schema.json";
        if (it->is_regular_file() && fname.size() > suffix.size() &&
            fname.compare(fname.size() - suffix.size(), suffix.size(), suffix) == 0) {
            files.push_back(it->path());
        }
    }
    if (ec) {
        return make_error_code(errc::internal);
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
        auto r = add_file(f, std::filesystem::relative(f, dir).generic_string());
        if (!r) {
            return r.error();
        }
    }
    return files.size();
}

namespace {

// Turns a validate() reference into an absolute URI: a registered name maps to its document's
// base; anything else must already be an absolute URI.
std::optional<std::pair<location, std::string>> entry_point(const schema_registry::impl& reg,
                                                            std::string_view ref) {
    auto [doc, fragment] = split_fragment(ref);
    if (auto it = reg.by_name.find(doc); it != reg.by_name.end()) {
        return std::pair{it->second, fragment};
    }
    return std::nullopt;
}

} // namespace

bool schema_registry::contains(std::string_view ref) const {
    std::string why;
    bool unresolved = false;
    if (auto named = entry_point(*impl_, ref)) {
        std::string uri = impl::base_of(named->first);
        return impl_->lookup(impl_->by_uri, uri + "#" + named->second, why, unresolved).has_value();
    }
    return impl_->lookup(impl_->by_uri, ref, why, unresolved).has_value();
}

std::vector<validation_error> schema_registry::validate(const json::value& instance,
                                                        std::string_view ref) const {
    std::vector<validation_error> errors;
    std::string why;
    bool unresolved = false;
    std::optional<location> start;
    if (auto named = entry_point(*impl_, ref)) {
        std::string uri = impl::base_of(named->first);
        start = impl_->lookup(impl_->by_uri, uri + "#" + named->second, why, unresolved);
    } else {
        start = impl_->lookup(impl_->by_uri, ref, why, unresolved);
    }
    if (!start) {
        errors.push_back(
            {"", "", "cannot resolve schema '" + std::string(ref) + "': " + why,
             unresolved ? schema_error_kind::unresolved_ref : schema_error_kind::bad_schema});
        return errors;
    }
    try {
        evaluator ev(*impl_, errors);
        ev.eval(instance, *start, 0);
    } catch (const std::exception& e) {
        // Only allocation failures can get here; never let them escape into a caller.
        errors.push_back(
            {"", "", std::string("validation aborted: ") + e.what(), schema_error_kind::limit});
    }
    return errors;
}

std::vector<validation_error> validate_against(const json::value& instance,
                                               const json::value& schema, schema_limits limits) {
    schema_registry reg(limits);
    if (auto r = reg.add(schema, "schema.json"); !r) {
        return {{"", "", "not a schema (must be an object or a boolean, with a valid $id)",
                 schema_error_kind::bad_schema}};
    }
    return reg.validate(instance, "schema.json");
}

} // namespace wopbridge
