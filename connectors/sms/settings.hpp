#pragma once
// SMS (Twilio-compatible) connector settings: the connector-level object (config_schema_json) and
// per-subscription overrides (subscription_schema_json). Strict parsing; reasons never carry a secret.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wopbridge::sms {

enum class status_callback_policy { ignore, deliver };

struct settings {
    std::vector<std::string> auth_tokens; // any may match (rotation)
    std::string public_url;               // "" = the URL the host reports for the request
    std::optional<std::string> auto_reply; // TwiML <Message> text for inbound messages
    status_callback_policy status_callbacks = status_callback_policy::ignore;
};

extern const char* const config_schema_json;
extern const char* const subscription_schema_json;

// Connector-level settings. `authToken` or `authTokens` is required.
std::optional<settings> parse_connector_settings(std::string_view json, std::string& error);

// Per-subscription settings layered over `base`: every key may be overridden; `authToken(s)`
// replace the connector's tokens. An empty text is the empty object.
std::optional<settings> apply_subscription_settings(const settings& base, std::string_view json,
                                                    std::string& error);

} // namespace wopbridge::sms
