#include "sms/settings.hpp"

#include <wopbridge/json_config.hpp>

namespace wopbridge::sms {

namespace {

// Both schemas share the property definitions; only the connector level requires a token.
const std::string properties = R"(
    "authToken": {"type": "string", "minLength": 1, "writeOnly": true,
      "description": "The account's Auth Token (the HMAC key of X-Twilio-Signature)."},
    "authTokens": {"type": "array", "minItems": 1, "writeOnly": true,
      "items": {"type": "string", "minLength": 1},
      "description": "Several auth tokens during a rotation; a request matching any is accepted."},
    "publicUrl": {"type": "string", "pattern": "^https?://",
      "description": "The webhook URL as configured at the provider when it differs from server.publicUrl + path (proxies); the received query string is appended."},
    "autoReply": {"type": "string", "minLength": 1,
      "description": "Text answered as a TwiML <Message> to every inbound message (XML-escaped)."},
    "statusCallbacks": {"enum": ["ignore", "deliver"], "default": "ignore",
      "description": "Delivery status callbacks: acknowledged only, or delivered as events."}
)";

const std::string config_schema = R"({
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "sms connector settings",
  "type": "object",
  "additionalProperties": false,
  "properties": {)" + properties + R"(},
  "anyOf": [{"required": ["authToken"]}, {"required": ["authTokens"]}]
})";

const std::string subscription_schema = R"({
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "sms subscription settings",
  "type": "object",
  "additionalProperties": false,
  "properties": {)" + properties + R"(}
})";

} // namespace

const char* const config_schema_json = config_schema.c_str();
const char* const subscription_schema_json = subscription_schema.c_str();

namespace {

// Applies the keys of `o` to `out` (throws config_error); both levels accept the same keys (the
// schemas above).
void apply(settings& out, const boost::json::object& o, bool connector_level) {
    using namespace json_config;
    check_keys(o, {"authToken", "authTokens", "publicUrl", "autoReply", "statusCallbacks"},
               connector_level ? "settings" : "subscription settings");
    if (auto tokens = get_rotating_secrets(o, "authToken", "authTokens")) {
        out.auth_tokens = std::move(*tokens);
    }
    if (o.contains("publicUrl")) {
        const auto* url = o.at("publicUrl").if_string();
        if (url == nullptr ||
            (url->subview().rfind("https://", 0) != 0 && url->subview().rfind("http://", 0) != 0)) {
            throw config_error("publicUrl must be an absolute http(s) URL");
        }
        out.public_url = std::string(url->subview());
    }
    if (o.contains("autoReply")) {
        out.auto_reply = get_string(o, "autoReply");
    }
    if (o.contains("statusCallbacks")) {
        const auto* policy = o.at("statusCallbacks").if_string();
        if (policy != nullptr && *policy == "ignore") {
            out.status_callbacks = status_callback_policy::ignore;
        } else if (policy != nullptr && *policy == "deliver") {
            out.status_callbacks = status_callback_policy::deliver;
        } else {
            throw config_error("statusCallbacks must be \"ignore\" or \"deliver\"");
        }
    }
    if (connector_level && out.auth_tokens.empty()) {
        throw config_error("authToken or authTokens is required");
    }
}

} // namespace

std::optional<settings> parse_connector_settings(std::string_view json, std::string& error) {
    return json_config::read_settings(settings{}, json, error,
                                      [](settings& s, const auto& o) { apply(s, o, true); });
}

std::optional<settings> apply_subscription_settings(const settings& base, std::string_view json,
                                                    std::string& error) {
    return json_config::read_settings(base, json, error,
                                      [](settings& s, const auto& o) { apply(s, o, false); });
}

} // namespace wopbridge::sms
