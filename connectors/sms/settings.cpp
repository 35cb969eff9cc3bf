#include "sms/settings.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

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
    std::vector<std::string> tokens;
    bool tokens_given = false;
    for (const auto& [key, value] : doc.as_object()) {
        const auto* s = value.if_string();
        if (key == "authToken") {
            if (s == nullptr || s->empty()) {
                error = "authToken must be a non-empty string";
                return false;
            }
            tokens.insert(tokens.begin(), std::string(s->c_str(), s->size()));
            tokens_given = true;
        } else if (key == "authTokens") {
            const auto* arr = value.if_array();
            if (arr == nullptr || arr->empty()) {
                error = "authTokens must be a non-empty array of strings";
                return false;
            }
            for (const auto& item : *arr) {
                const auto* t = item.if_string();
                if (t == nullptr || t->empty()) {
                    error = "authTokens must contain only non-empty strings";
                    return false;
                }
                tokens.emplace_back(t->c_str(), t->size());
            }
            tokens_given = true;
        } else if (key == "publicUrl") {
            const std::string_view url = s == nullptr ? std::string_view{} : std::string_view(*s);
            if (url.rfind("https://", 0) != 0 && url.rfind("http://", 0) != 0) {
                error = "publicUrl must be an absolute http(s) URL";
                return false;
            }
            out.public_url = std::string(url);
        } else if (key == "autoReply") {
            if (s == nullptr || s->empty()) {
                error = "autoReply must be a non-empty string";
                return false;
            }
            out.auto_reply = std::string(s->c_str(), s->size());
        } else if (key == "statusCallbacks") {
            if (s != nullptr && *s == "ignore") {
                out.status_callbacks = status_callback_policy::ignore;
            } else if (s != nullptr && *s == "deliver") {
                out.status_callbacks = status_callback_policy::deliver;
            } else {
                error = "statusCallbacks must be \"ignore\" or \"deliver\"";
                return false;
            }
        } else {
            error = "unknown setting \"" + std::string(key) + "\"";
            return false;
        }
    }
    if (tokens_given) {
        out.auth_tokens = std::move(tokens);
    }
    if (connector_level && out.auth_tokens.empty()) {
        error = "authToken or authTokens is required";
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

} // namespace wopbridge::sms
