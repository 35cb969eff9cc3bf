#pragma once
// The "message" of a broker listener's event content (header-only, needs Boost.JSON).
//
// Listeners submit {"stream":{"topic":..., "offset"?, "key"?, "message": <payload>}}; the broker
// hands them bytes, which become the payload as parsed JSON when they are JSON, else the text
// itself, else (not UTF-8) the {"$base64": ...} marker (json_bytes.hpp). Above
// `max_message_bytes`, or `without_payload` (the host refused it as invalid once), the payload
// is null: still one event (topic and offset name the message), never a stuck consumer.

#include <wopbridge/json_bytes.hpp>
#include <wopbridge/json_util.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <cstddef>
#include <string>
#include <string_view>

namespace wopbridge::json {

inline std::string stream_message(std::string_view data, std::size_t max_message_bytes,
                                  bool without_payload) {
    if (without_payload || data.size() > max_message_bytes) {
        return "null";
    }
    if (data.empty()) {
        return quote(data);
    }
    boost::system::error_code ec;
    // Boost.JSON refuses invalid UTF-8, so a parsed value is always valid JSON text.
    const auto parsed = boost::json::parse(data, ec);
    if (!ec) {
        return boost::json::serialize(parsed);
    }
    if (valid_utf8(data)) {
        return quote(data);
    }
    return boost::json::serialize(carried_bytes(data));
}

} // namespace wopbridge::json
