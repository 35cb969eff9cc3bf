#pragma once
// Small helpers shared by the handler files (not part of the public HTTP API).

#include "http/api.hpp"
#include "http/error_mapping.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <string>
#include <string_view>

namespace wopbridge::http::detail {

inline void reply_json(http_api::context& ctx, int status, const boost::json::value& body) {
    ctx.sink->send(http_response::json(status, boost::json::serialize(body)));
}

inline void reply_error(http_api::context& ctx, const boost::system::error_code& ec) {
    ctx.sink->send(error_response(ec));
}

// A page of a listing: {"<items_key>": items, "nextCursor"?: cursor} (no cursor on the last page).
inline boost::json::object page_body(std::string_view items_key, boost::json::array items,
                                     const std::string& next_cursor) {
    boost::json::object body{{items_key, std::move(items)}};
    if (!next_cursor.empty()) {
        body["nextCursor"] = next_cursor;
    }
    return body;
}

// Parses a decimal integer; false on anything else (no sign unless allow_negative).
bool parse_int(std::string_view text, long long& out, bool allow_negative = false);

} // namespace wopbridge::http::detail
