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

} // namespace wopbridge::store_codec
