#include "http/error_mapping.hpp"

#include <boost/json/serialize.hpp>

namespace wopbridge::http {

namespace json = boost::json;

mapped_error map_error(errc e) noexcept {
    switch (e) {
    case errc::ok: return {200, "ok"};
    case errc::not_found: return {404, "not_found"};
    case errc::invalid_argument: return {400, "validation_error"};
    case errc::conflict: return {409, "conflict"};
    case errc::already_exists: return {409, "already_exists"};
    case errc::signature_invalid: return {401, "signature_invalid"};
    case errc::store_unavailable: return {503, "service_unavailable", 5};
    case errc::overloaded: return {503, "service_unavailable", 1};
    case errc::unsupported: return {501, "capability_not_provided"};
    case errc::shutting_down: return {503, "service_unavailable", 5};
    case errc::permanent_failure:
    case errc::transient_failure:
    case errc::internal: break;
    }
    return {500, "internal_error"};
}

mapped_error map_error(const boost::system::error_code& ec) noexcept {
    if (ec.category() == bridge_category()) {
        return map_error(static_cast<errc>(ec.value()));
    }
    return {500, "internal_error"};
}

mapped_error map_submit_status(submit_status s) noexcept {
    switch (s) {
    case submit_status::accepted: return {202, "accepted"};
    case submit_status::duplicate: return {200, "duplicate"};
    case submit_status::held: return {202, "held"};
    case submit_status::not_active: return {409, "subscription_not_active"};
    case submit_status::signature_invalid: return {401, "signature_invalid"};
    case submit_status::not_found: return {404, "not_found"};
    case submit_status::invalid: return {400, "validation_error"};
    case submit_status::overloaded: return {503, "service_unavailable", 1};
    case submit_status::unavailable: return {503, "service_unavailable", 5};
    }
    return {500, "internal_error"};
}

http_response error_response(int status, std::string_view code, std::string_view message,
                             std::optional<json::object> details, int retry_after_seconds) {
    json::object body;
    body["error"] = code;
    body["message"] = message;
    if (retry_after_seconds > 0) {
        if (!details) {
            details.emplace();
        }
        (*details)["retryAfter"] = retry_after_seconds;
    }
    if (details) {
        body["details"] = std::move(*details);
    }
    auto res = http_response::json(status, json::serialize(body));
    if (retry_after_seconds > 0) {
        res.set_header("retry-after", std::to_string(retry_after_seconds));
    }
    if (code == "unauthenticated") {
        res.set_header("www-authenticate", "Bearer");
    }
    return res;
}

http_response error_response(const mapped_error& m, std::string_view message,
                             std::optional<json::object> details) {
    return error_response(m.status, m.code, message, std::move(details), m.retry_after_seconds);
}

http_response error_response(const boost::system::error_code& ec) {
    auto m = map_error(ec);
    std::string message = ec.category() == bridge_category() ? ec.message() : "internal error";
    return error_response(m, message);
}

http_response validation_error(std::string_view field, std::string_view message) {
    json::object details;
    details["field"] = field;
    return error_response(400, "validation_error", message, std::move(details));
}

} // namespace wopbridge::http
