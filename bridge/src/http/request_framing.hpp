#pragma once
// How an HTTP/1.1 request's body is delimited (RFC 9112 §6), decided from its header alone before
// any body byte is read. Deliberately stricter than Beast's parser: any framing that another
// parser (a proxy in front of us) could read differently is refused, because that difference is
// what request smuggling uses. A refused request is answered 400 and its connection closed: where
// the next request would start is unknown.
//
// Accepted: no framing header (no body); exactly one `Content-Length` of plain digits; exactly one
// `Transfer-Encoding` whose value is `chunked` (any case) and nothing else, without Content-Length.

#include "core/error.hpp"

#include <cstdint>
#include <span>
#include <string_view>
#include <utility>

namespace wopbridge::http {

enum class body_framing { none, content_length, chunked };

struct request_framing {
    body_framing kind = body_framing::none;
    std::uint64_t content_length = 0; // kind == content_length
};

using header_view = std::pair<std::string_view, std::string_view>; // name (any case), value

// Errors: invalid_argument (ambiguous or unsupported framing).
result<request_framing> framing_of(std::span<const header_view> fields);

} // namespace wopbridge::http
