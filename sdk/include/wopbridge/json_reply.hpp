#pragma once
// The JSON error replies HTTP connectors answer with (header-only, needs Boost.JSON like
// json_bytes.hpp): one envelope shape, so every connector's refusals look alike on the wire.

#include <wopbridge/connector.hpp>

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace wopbridge {

// {"error":code,"message":message}, plus "details":{"retryAfter":n} when retry_after_s is given.
inline std::string error_envelope(std::string_view code, std::string_view message,
                                  std::optional<int> retry_after_s = std::nullopt) {
    boost::json::object obj;
    obj["error"] = code;
    obj["message"] = message;
    if (retry_after_s) {
        obj["details"] = boost::json::object{{"retryAfter", *retry_after_s}};
    }
    return boost::json::serialize(obj);
}

// Where a reply's retry hint goes besides the Retry-After header.
enum class retry_hint { header_only, header_and_details };

// Answers `status` with the envelope as application/json; a positive retry_after_seconds adds a
// Retry-After header (and, with header_and_details, the envelope's details).
inline void respond_error(request_handle& req, int status, std::string_view code,
                          std::string_view message, int retry_after_seconds = 0,
                          retry_hint hint = retry_hint::header_only) {
    const bool retry = retry_after_seconds > 0;
    header_list headers{{"content-type", "application/json"}};
    if (retry) {
        headers.emplace_back("retry-after", std::to_string(retry_after_seconds));
    }
    const bool details = retry && hint == retry_hint::header_and_details;
    req.respond(status, headers,
                error_envelope(code, message,
                               details ? std::optional<int>(retry_after_seconds) : std::nullopt));
}

} // namespace wopbridge
