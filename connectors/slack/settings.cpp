#include "slack/settings.hpp"

#include <wopbridge/json_config.hpp>

namespace wopbridge::slack {

const char* const config_schema_json = R"({
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "slack connector settings",
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "signingSecret": {"type": "string", "minLength": 1, "writeOnly": true,
      "description": "The app's Signing Secret (Basic Information page)."},
    "signingSecrets": {"type": "array", "minItems": 1, "writeOnly": true,
      "items": {"type": "string", "minLength": 1},
      "description": "Several signing secrets during a rotation; a request matching any is accepted."},
    "toleranceSeconds": {"type": "integer", "minimum": 1, "maximum": 3600, "default": 300,
      "description": "Largest accepted distance between X-Slack-Request-Timestamp and now, past or future."},
    "eventTypes": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1},
      "description": "Allow-list: Events API event.type, interactivity payload type, slash_command or a /command."},
    "channels": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1},
      "description": "Allow-list of channel ids; requests without a channel are filtered out when set."}
  },
  "anyOf": [{"required": ["signingSecret"]}, {"required": ["signingSecrets"]}]
})";

const char* const subscription_schema_json = R"({
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "slack subscription settings",
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "signingSecret": {"type": "string", "minLength": 1, "writeOnly": true},
    "signingSecrets": {"type": "array", "minItems": 1, "writeOnly": true,
      "items": {"type": "string", "minLength": 1}},
    "eventTypes": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}},
    "channels": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}}
  }
})";

namespace {

// Applies the keys of `o` to `out` (throws config_error); subscriptions may not set
// toleranceSeconds. The JSON Schemas above say the same; this is what the module relies on.
void apply(settings& out, const boost::json::object& o, bool connector_level) {
    using namespace json_config;
    if (connector_level) {
        check_keys(
            o, {"signingSecret", "signingSecrets", "toleranceSeconds", "eventTypes", "channels"},
            "settings");
        out.tolerance_seconds = get_int(o, "toleranceSeconds", out.tolerance_seconds, 1, 3600);
    } else {
        check_keys(o, {"signingSecret", "signingSecrets", "eventTypes", "channels"},
                   "subscription settings");
    }
    if (auto secrets = get_rotating_secrets(o, "signingSecret", "signingSecrets")) {
        out.signing_secrets = std::move(*secrets);
    }
    if (auto list = get_string_list(o, "eventTypes")) {
        out.event_types = std::move(list);
    }
    if (auto list = get_string_list(o, "channels")) {
        out.channels = std::move(list);
    }
    if (connector_level && out.signing_secrets.empty()) {
        throw config_error("signingSecret or signingSecrets is required");
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

} // namespace wopbridge::slack
