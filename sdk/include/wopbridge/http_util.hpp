#pragma once
// Small HTTP helpers connectors need: percent/plus decoding, application/x-www-form-urlencoded
// bodies, query strings, case-insensitive header lookup. Implemented in sdk/src/http_util.cpp.
// Nothing here throws on bad input: malformed text gives nullopt.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace wopbridge::http {

using param_list = std::vector<std::pair<std::string, std::string>>;

// ASCII case-insensitive equality (header names).
bool iequals(std::string_view a, std::string_view b) noexcept;

// `text` with its letters lower-cased byte by byte (std::tolower, so ASCII in the C locale).
std::string to_lower(std::string_view text);

// `text` without leading and trailing spaces, tabs, CRs and LFs (header values, MIME parameters).
std::string_view trim_whitespace(std::string_view text) noexcept;

// The value of one hexadecimal digit (either case), or -1.
int hex_digit(char c) noexcept;

// Decodes %XX escapes (and '+' as a space when plus_as_space). nullopt on a truncated or non-hex
// escape. Decoded bytes are returned as-is (no UTF-8 validation).
std::optional<std::string> percent_decode(std::string_view text, bool plus_as_space = false);
// The same, but a '%' that does not start a well-formed escape is kept as it is (what servers do
// with request paths, lenient form bodies and RFC 8187 values); never fails.
std::string percent_decode_lenient(std::string_view text, bool plus_as_space = false);

// Encodes everything outside unreserved (A-Z a-z 0-9 - . _ ~) as %XX; with space_as_plus, ' ' ->
// '+'.
std::string percent_encode(std::string_view text, bool space_as_plus = false);

// "a=1&b=x+y&c" -> {{"a","1"},{"b","x y"},{"c",""}} in order, repeats kept. Empty segments
// ("a=1&&b=2") are skipped. nullopt when any name or value has a malformed escape.
std::optional<param_list> parse_form_urlencoded(std::string_view body);
std::string format_form_urlencoded(const param_list& params);
// Without decoding or allocating: how many fields parse_form_urlencoded would return. Lets a
// connector refuse a flood of fields before building them (and before a signature is checked).
std::size_t form_field_count(std::string_view body) noexcept;
// The decoded value of the first field called `name`, the rest of the body left unparsed (a
// token checked before the form is). nullopt when absent or when that field's escapes are broken.
std::optional<std::string> find_form_field(std::string_view body, std::string_view name);

// The query part of a request target ("/path?x=1#frag" -> "x=1"); empty when there is none.
std::string_view query_of(std::string_view target) noexcept;
// The path part of a request target ("/path?x=1" -> "/path").
std::string_view path_of(std::string_view target) noexcept;
// Parses the query of a target (or of a full URL) like a form body.
std::optional<param_list> parse_query(std::string_view target);

// First value for `name` in ordered pairs; case-insensitive for headers, exact for parameters.
std::optional<std::string_view>
find_header(const std::vector<std::pair<std::string, std::string>>& headers,
            std::string_view name) noexcept;
std::optional<std::string_view> find_param(const param_list& params,
                                           std::string_view name) noexcept;

// The media type of a Content-Type value, lower-cased, parameters dropped:
// "Application/JSON; charset=utf-8" -> "application/json".
std::string media_type(std::string_view content_type);

} // namespace wopbridge::http
