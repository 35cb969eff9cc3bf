#pragma once
// application/x-www-form-urlencoded decoding (WHATWG rules: '+' is a space, %XX escapes).
// Kept inside the connector until the SDK's http_util.hpp is available to every module.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace wopbridge::sms {

using form_fields = std::vector<std::pair<std::string, std::string>>;

// Decodes one component; nullopt on a broken %-escape.
std::optional<std::string> form_decode(std::string_view text);
// Splits and decodes "a=1&b=2" in order (repeated names kept); nullopt when any escape is broken.
std::optional<form_fields> parse_form(std::string_view body);
// The first value of `name`, or nullopt.
std::optional<std::string_view> form_value(const form_fields& fields, std::string_view name);

} // namespace wopbridge::sms
