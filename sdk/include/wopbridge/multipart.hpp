#pragma once
// multipart/form-data (RFC 7578) and the header-parameter grammar shared with MIME (RFC 2045/2231).
// Pure functions over bytes: no host, no I/O. In the SDK so the forms connector and the email
// connector's inbound-parse webhook share one parser. Implemented in sdk/src/multipart.cpp.

#include "wopbridge/http_util.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace wopbridge::http {

// A parsed `type/subtype; k=v; ...` or `disposition; k=v` header value. Names are lower-cased;
// values are unquoted, RFC 2231 `name*=charset''pct` values decoded (charset is kept as given,
// bytes as-is).
struct header_value {
    std::string value; // lower-cased token before the first ';'
    param_list params;
    std::optional<std::string> param(std::string_view name) const;
};
header_value parse_header_value(std::string_view text);

struct multipart_limits {
    std::size_t max_parts = 100;
    std::size_t max_part_bytes = 10 * 1024 * 1024;
    std::size_t max_total_bytes = 25 * 1024 * 1024;
    std::size_t max_header_bytes = 16 * 1024; // per part
};

struct multipart_part {
    param_list headers; // lower-case names, unfolded values, in order
    std::string body;   // raw bytes (no transfer decoding)
    std::optional<std::string> header(std::string_view name) const;
};

enum class multipart_error {
    none,
    no_boundary, // Content-Type without a usable boundary parameter
    malformed,   // delimiter, header or line structure broken
    too_many_parts,
    part_too_large,
    too_large, // total body larger than max_total_bytes
};
std::string_view to_string(multipart_error e) noexcept;

struct multipart_result {
    multipart_error error = multipart_error::none;
    std::vector<multipart_part> parts;
};

// Extracts and validates the boundary (1..70 chars, RFC 2046 bchars) from a Content-Type value.
std::optional<std::string> boundary_of(std::string_view content_type);

// Splits a multipart body. CRLF is the rule, bare LF is tolerated (mail relays and hand-written
// tests produce it). `lenient` (MIME) accepts a missing close delimiter; strict (HTTP forms) treats
// it as a truncated upload.
multipart_result parse_multipart(std::string_view body, std::string_view boundary,
                                 const multipart_limits& limits, bool lenient = false);

// Parses an RFC 5322-style header block (unfolding continuation lines). Returns nullopt when a
// line is neither a header nor a continuation.
std::optional<param_list> parse_header_block(std::string_view block);

// A multipart/form-data field: name and optional filename from Content-Disposition.
struct form_part_info {
    std::string name;
    std::optional<std::string> filename;
    std::string media_type; // lower-cased; empty when the part has no Content-Type
};
std::optional<form_part_info> form_part_info_of(const multipart_part& part);

} // namespace wopbridge::http
