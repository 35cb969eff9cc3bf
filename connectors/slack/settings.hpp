#pragma once
// Slack connector settings: the connector-level object (config_schema_json) and the per-subscription
// overrides (subscription_schema_json). Parsing is strict (unknown keys are refused) so a typo never
// silently disables a filter; reasons are one line and never contain a secret.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wopbridge::slack {

struct settings {
    std::vector<std::string> signing_secrets; // any may match (rotation)
    std::int64_t tolerance_seconds = 300;      // timestamp window, both directions
    std::optional<std::vector<std::string>> event_types; // allow-list; nullopt = everything
    std::optional<std::vector<std::string>> channels;    // allow-list; nullopt = everything
};

extern const char* const config_schema_json;
extern const char* const subscription_schema_json;

// Connector-level settings. `signingSecret` or `signingSecrets` is required.
std::optional<settings> parse_connector_settings(std::string_view json, std::string& error);

// Per-subscription settings layered over `base`: `signingSecret(s)` replace the connector's secrets,
// `eventTypes` / `channels` replace its filters. An empty text is the empty object.
std::optional<settings> apply_subscription_settings(const settings& base, std::string_view json,
                                                    std::string& error);

} // namespace wopbridge::slack
