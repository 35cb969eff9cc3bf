#pragma once
// The little JSON a connector needs without pulling a JSON library into its module: quoting
// strings for the content it submits, and reading flat settings objects
// ({"key": "text" | number | true | false | null, ...}). Implemented in sdk/src/json_util.cpp.

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace wopbridge::json {

// A JSON string literal, quotes included. Control characters are escaped; invalid UTF-8 bytes
// become U+FFFD so the result is always valid JSON.
std::string quote(std::string_view text);

// True when `text` is well-formed UTF-8 (no overlongs, surrogates or code points past U+10FFFF).
bool valid_utf8(std::string_view text) noexcept;

// `text` with every byte that is not part of a valid UTF-8 sequence replaced by U+FFFD, for
// fields whose schema requires a string (the exact bytes are then carried elsewhere).
std::string lossy_utf8(std::string_view text);

struct flat_value {
    enum class kind { string, number, boolean, null } type = kind::null;
    std::string text; // decoded string, or the number/true/false literal as written
};

using flat_object = std::map<std::string, flat_value>;

// Parses a JSON object whose values are all scalars. Nested objects/arrays, duplicate keys,
// trailing data and malformed text give nullopt with `error` set to a one-line reason.
std::optional<flat_object> parse_flat_object(std::string_view text, std::string* error = nullptr);

} // namespace wopbridge::json
