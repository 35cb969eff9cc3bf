// Keywords on numbers (bounds, multipleOf) and strings (lengths, pattern, format).
#include "contract/json_schema_internal.hpp"

#include <boost/json/serialize.hpp>

#include <algorithm>
#include <cmath>

namespace wopbridge::schema_detail {

bool evaluator::number_keyword(const json::value& inst, std::string_view k, const json::value& v) {
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

bool evaluator::string_keyword(std::string_view str, std::string_view k, const json::value& v) {
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

int evaluator::search(std::string_view pattern, std::string_view subject) {
    auto c = reg_.patterns.get(std::string(pattern), reg_.limits.max_pattern_length);
    if (!c.re) {
        report(schema_error_kind::bad_schema, c.error);
        return -1;
    }
    switch (search_pattern(*c.re, subject, reg_.limits.max_pattern_subject)) {
    case match_result::match:
        return 1;
    case match_result::no_match:
        return 0;
    case match_result::too_large:
        report(schema_error_kind::limit,
               "string of " + std::to_string(subject.size()) +
                   " bytes is too long to match against this pattern safely");
        return -1;
    case match_result::backtrack_limit:
        report(schema_error_kind::limit,
               "pattern matching stopped at the regex engine's backtracking limit");
        return -1;
    case match_result::failed:
        break;
    }
    report(schema_error_kind::limit, "pattern matching failed (regex engine limit)");
    return -1;
}

} // namespace wopbridge::schema_detail
