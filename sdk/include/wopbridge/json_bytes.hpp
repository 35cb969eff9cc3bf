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
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

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
