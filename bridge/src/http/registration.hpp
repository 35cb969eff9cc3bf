#pragma once
// TriggerSubscriptionRegistration (RFC 0099 §F.2, closed) plus the wopbridge extensions
// `schedule` {cron, timeZone} and `connector` + `settings`, parsed into a registration_request.

#include "app/bridge.hpp"

#include <string>
#include <string_view>
#include <variant>

namespace wopbridge::http {

struct registration_error {
    std::string field;   // JSON pointer-ish name of the offending field, e.g. "retryPolicy.backoff"
    std::string message; // content-free
};

std::variant<registration_request, registration_error> parse_registration(std::string_view body,
                                                                           const std::string& tenant);

} // namespace wopbridge::http
