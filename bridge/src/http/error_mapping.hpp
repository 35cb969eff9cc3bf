#pragma once
// The one place where bridge errors become HTTP statuses and error-envelope codes. Every error
// response of the HTTP surface is the closed envelope {"error","message","details"?}.

#include "app/bridge.hpp"
#include "core/error.hpp"
#include "http/http_message.hpp"

#include <boost/json/object.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace wopbridge::http {

struct mapped_error {
    int status = 500;
    std::string_view code; // envelope `error`
    int retry_after_seconds = 0; // > 0: send Retry-After (and details.retryAfter)
};

mapped_error map_error(errc e) noexcept;
mapped_error map_error(const boost::system::error_code& ec) noexcept;
mapped_error map_submit_status(submit_status s) noexcept;

// {"error":code,"message":message,"details"?:details}; adds Retry-After when retry_after > 0.
http_response error_response(int status, std::string_view code, std::string_view message,
                             std::optional<boost::json::object> details = std::nullopt,
                             int retry_after_seconds = 0);
http_response error_response(const mapped_error& m, std::string_view message,
                             std::optional<boost::json::object> details = std::nullopt);
// From a bridge error code; the message is the code's content-free description.
http_response error_response(const boost::system::error_code& ec);

// validation_error naming the offending field in details.field.
http_response validation_error(std::string_view field, std::string_view message);

} // namespace wopbridge::http
