#include "slack/settings.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

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

std::optional<std::vector<std::string>> string_list(const boost::json::value& v, const char* key,
                                                    std::string& error) {
    const auto* arr = v.if_array();
    if (arr == nullptr || arr->empty()) {
        error = std::string(key) + " must be a non-empty array of strings";
        return std::nullopt;
    }
    std::vector<std::string> out;
    for (const auto& item : *arr) {
        const auto* s = item.if_string();
        if (s == nullptr || s->empty()) {
            error = std::string(key) + " must contain only non-empty strings";
            return std::nullopt;
        }
        out.emplace_back(s->c_str(), s->size());
    }
    return out;
}

// Applies the keys of `json` to `out`; `allow_tolerance` is false for subscriptions.
bool apply(settings& out, std::string_view json, bool connector_level, std::string& error) {
    if (json.find_first_not_of(" \t\r\n") == std::string_view::npos) {
        json = "{}";
    }
    boost::system::error_code ec;
    const auto doc = boost::json::parse(json, ec);
    if (ec || !doc.is_object()) {
        error = "settings must be a JSON object";
        return false;
    }
    std::vector<std::string> secrets;
    bool secrets_given = false;
    for (const auto& [key, value] : doc.as_object()) {
        if (key == "signingSecret") {
            const auto* s = value.if_string();
            if (s == nullptr || s->empty()) {
                error = "signingSecret must be a non-empty string";
                return false;
            }
            secrets.insert(secrets.begin(), std::string(s->c_str(), s->size()));
            secrets_given = true;
        } else if (key == "signingSecrets") {
            auto list = string_list(value, "signingSecrets", error);
            if (!list) {
                return false;
            }
            secrets.insert(secrets.end(), list->begin(), list->end());
            secrets_given = true;
        } else if (key == "toleranceSeconds" && connector_level) {
            if (!value.is_int64() && !value.is_uint64()) {
                error = "toleranceSeconds must be an integer";
                return false;
            }
            const auto t = value.is_int64() ? value.as_int64()
                                            : static_cast<std::int64_t>(value.as_uint64());
            if (t < 1 || t > 3600) {
                error = "toleranceSeconds must be between 1 and 3600";
                return false;
            }
            out.tolerance_seconds = t;
        } else if (key == "eventTypes") {
            auto list = string_list(value, "eventTypes", error);
            if (!list) {
                return false;
            }
            out.event_types = std::move(*list);
        } else if (key == "channels") {
            auto list = string_list(value, "channels", error);
            if (!list) {
                return false;
            }
            out.channels = std::move(*list);
        } else {
            error = "unknown setting \"" + std::string(key) + "\"";
            return false;
        }
    }
    if (secrets_given) {
        out.signing_secrets = std::move(secrets);
    }
    if (connector_level && out.signing_secrets.empty()) {
        error = "signingSecret or signingSecrets is required";
        return false;
    }
    return true;
}

} // namespace

std::optional<settings> parse_connector_settings(std::string_view json, std::string& error) {
    settings out;
    if (!apply(out, json, true, error)) {
        return std::nullopt;
    }
    return out;
}

std::optional<settings> apply_subscription_settings(const settings& base, std::string_view json,
                                                    std::string& error) {
    settings out = base;
    if (!apply(out, json, false, error)) {
        return std::nullopt;
    }
    return out;
}

} // namespace wopbridge::slack
