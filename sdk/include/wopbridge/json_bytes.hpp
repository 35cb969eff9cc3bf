#pragma once
// Carrying bytes that are not UTF-8 inside submitted content (header-only, needs Boost.JSON).
//
// JSON text is UTF-8, so a raw `\xff` in a form field, a Slack `text=%FF` or a Twilio `Body=%FF`
// cannot be a JSON string. Rather than refuse the event (a provider would retry it forever) or
// drop bytes, content carries such a string losslessly as
//
//     {"$base64": "<standard base64, padded>"}     (a value that is not valid UTF-8)
//     "$base64:<standard base64, padded>"           (an object key, or a value whose schema
//                                                    allows only a string, e.g. an AttachmentRef
//                                                    filename, that is not valid UTF-8)
//
// Valid UTF-8 strings are left as they are, so the marker appears only where bytes needed it.
// A run decodes the marker with any base64 decoder. Content stays untrusted: a JSON sender can
// write the marker itself, which gains it nothing it could not send as raw bytes.
// Documented in docs/writing-a-connector.md ("Bytes that are not UTF-8").

#include <wopbridge/json_util.hpp>
#include <wopbridge/signatures.hpp>

#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace wopbridge::json {

inline constexpr std::string_view bytes_marker = "$base64";

inline boost::json::value carried_bytes(std::string_view raw) {
    return boost::json::object{{bytes_marker, sig::base64_encode(raw)}};
}

// For a place that must hold a string: `raw` itself when it is valid UTF-8, else the string form
// of the marker.
inline std::string carried_text(std::string_view raw) {
    if (valid_utf8(raw)) {
        return std::string(raw);
    }
    return std::string(bytes_marker) + ":" + sig::base64_encode(raw);
}

// Rewrites every string value and object key in `v` that is not valid UTF-8 into the marker.
// Returns true when anything was rewritten.
inline bool carry_invalid_utf8(boost::json::value& v) {
    bool changed = false;
    if (v.is_string()) {
        const auto& s = v.get_string();
        if (!valid_utf8(std::string_view(s.data(), s.size()))) {
            v = carried_bytes(std::string_view(s.data(), s.size()));
            changed = true;
        }
    } else if (v.is_array()) {
        for (auto& e : v.get_array()) {
            changed = carry_invalid_utf8(e) || changed;
        }
    } else if (v.is_object()) {
        auto& o = v.get_object();
        bool bad_key = false;
        for (auto& kv : o) {
            changed = carry_invalid_utf8(kv.value()) || changed;
            bad_key = bad_key || !valid_utf8(kv.key());
        }
        if (bad_key) {
            // Keys are immutable in place: rebuild the object in its original order.
            boost::json::object fixed;
            for (auto& kv : o) {
                const std::string_view k = kv.key();
                fixed.emplace(carried_text(k), std::move(kv.value()));
            }
            v = std::move(fixed);
            changed = true;
        }
    }
    return changed;
}

// Whether every number in `parsed` (parsed from `text`) is what its text says. Boost.JSON reads
// 1e400 or a 400-digit integer as an infinite double (serialized as `Infinity`, which is not
// JSON: not_finite) and a 30-digit integer as a rounded one (rounded); exact means finite, and
// every integer literal within int64/uint64.
enum class number_fidelity { exact, rounded, not_finite };
inline number_fidelity numbers_in(std::string_view text, const boost::json::value& parsed) {
    bool finite = true;
    auto walk = [&finite](auto& self, const boost::json::value& v) -> void {
        if (v.is_double()) {
            const double d = v.get_double();
            finite = finite && d - d == 0.0; // false for inf and NaN
        } else if (v.is_array()) {
            for (const auto& e : v.get_array()) {
                self(self, e);
            }
        } else if (v.is_object()) {
            for (const auto& kv : v.get_object()) {
                self(self, kv.value());
            }
        }
    };
    walk(walk, parsed);
    if (!finite) {
        return number_fidelity::not_finite;
    }
    // Integer literals outside strings: more digits than 64 bits hold, or past the range.
    bool in_string = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            i += c == '\\' ? 1 : 0;
            in_string = c != '"';
            continue;
        }
        if (c == '"') {
            in_string = true;
            continue;
        }
        if (c != '-' && (c < '0' || c > '9')) {
            continue;
        }
        std::size_t end = i + (c == '-' ? 1 : 0);
        while (end < text.size() && text[end] >= '0' && text[end] <= '9') {
            ++end;
        }
        const bool integer = end == text.size() ||
                             (text[end] != '.' && text[end] != 'e' && text[end] != 'E');
        const std::string_view digits = text.substr(i + (c == '-' ? 1 : 0), end - i - (c == '-' ? 1 : 0));
        if (integer && (digits.size() > 20 ||
                        (digits.size() == 20 && (c == '-' || digits > "18446744073709551615")) ||
                        (digits.size() == 19 && c == '-' && digits > "9223372036854775808"))) {
            return number_fidelity::rounded;
        }
        while (end < text.size() && (text[end] == '.' || text[end] == 'e' || text[end] == 'E' ||
                                     text[end] == '+' || text[end] == '-' ||
                                     (text[end] >= '0' && text[end] <= '9'))) {
            ++end;
        }
        i = end - 1;
    }
    return number_fidelity::exact;
}

// Parses submitted JSON the way content carries it: strings that are not UTF-8 kept (then
// carried by the marker), and nullopt when it is not JSON or its numbers are not exact, for the
// caller to carry the raw text instead (a JSON string: lossless, never refused).
inline std::optional<boost::json::value> parse_content_json(std::string_view text) {
    boost::json::parse_options opts;
    opts.allow_invalid_utf8 = true;
    boost::system::error_code ec;
    auto v = boost::json::parse(text, ec, {}, opts);
    if (ec || numbers_in(text, v) != number_fidelity::exact) {
        return std::nullopt;
    }
    carry_invalid_utf8(v);
    return v;
}

// A provider's POST as event content: {"webhook":{"method":"POST","headers":…,"body":…}}, with
// every string in `body` that is not UTF-8 carried as the marker (a form field `%FF` is taken, not
// refused). Serialized, ready for content_json.
inline std::string posted_webhook_content(boost::json::object headers, boost::json::value body) {
    carry_invalid_utf8(body);
    boost::json::object webhook{{"method", "POST"}};
    webhook["headers"] = std::move(headers);
    webhook["body"] = std::move(body);
    return boost::json::serialize(boost::json::object{{"webhook", std::move(webhook)}});
}

} // namespace wopbridge::json
