#pragma once
// Where a backend's keyed page read starts, shared by the SQLite and PostgreSQL listings.

#include "core/error.hpp"
#include "store/store_codec.hpp"
#include "store/store_page.hpp"

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace wopbridge::store_codec {

// Just below the cursor's key, or the top for the first page. A cursor minted for another list
// or another subscription is invalid_argument.
inline result<std::int64_t> page_start(const page_request& req, std::string_view list,
                                       const std::string& subscription_id) {
    if (req.cursor.empty()) {
        return std::numeric_limits<std::int64_t>::max();
    }
    auto key = decode_cursor(req.cursor, list, subscription_id);
    if (!key) {
        return errc::invalid_argument;
    }
    return *key;
}

// The outbound dead-letter list pages by "<webhook id>:<seq>" instead: just below that seq, or
// the top for the first page; a cursor of another webhook or not of that shape is
// invalid_argument.
inline result<std::int64_t> outbound_page_start(const page_request& req,
                                                const std::string& webhook_id) {
    if (req.cursor.empty()) {
        return std::numeric_limits<std::int64_t>::max();
    }
    auto colon = req.cursor.rfind(':');
    if (colon == std::string::npos || req.cursor.substr(0, colon) != webhook_id) {
        return errc::invalid_argument;
    }
    try {
        return static_cast<std::int64_t>(std::stoll(req.cursor.substr(colon + 1)));
    } catch (...) {
        return errc::invalid_argument;
    }
}

inline std::string outbound_cursor(const std::string& webhook_id, std::int64_t seq) {
    return webhook_id + ":" + std::to_string(seq);
}

} // namespace wopbridge::store_codec
