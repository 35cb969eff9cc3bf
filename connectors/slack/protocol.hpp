#pragma once
// The Slack HTTP protocol without the ABI: request verification (v0 signatures), classification of
// the three request kinds Slack sends to one URL (Events API JSON, interactivity payloads, slash
// commands), filters, and the TriggerEvent content built from allow-listed parts.

#include "slack/settings.hpp"

#include <wopbridge/signatures.hpp>

#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace wopbridge::slack {

// Headers copied into the submitted content; everything else (the signature above all) stays out.
inline constexpr std::string_view forwarded_headers[] = {
    "content-type", "x-slack-request-timestamp", "x-slack-retry-num", "x-slack-retry-reason"};

// v0 signature over the raw body with the settings' secrets and tolerance (past and future).
sig::verdict verify_request(const settings& s, std::string_view timestamp,
                            std::string_view signature, std::string_view body, std::int64_t now_s);

enum class request_kind {
    url_verification, // answer {"challenge": ...}; not a delivery
    event,            // Events API event_callback
    interaction,      // interactivity payload (block_actions, view_submission, shortcut, ...)
    slash_command,    // slash command form post
    ignored,          // acknowledged, not submitted (ssl_check, app_rate_limited, other types)
};

struct slack_request {
    request_kind kind = request_kind::ignored;
    std::string challenge;         // url_verification
    std::string provider_event_id; // "event:<event_id>", "interaction:<trigger_id>", "command:<trigger_id>"
    std::string type;              // event.type, payload type, or "slash_command"
    std::string command;           // slash commands: the command, e.g. "/deploy"
    std::string channel;           // channel id, "" when the request names none
    boost::json::value body;       // the content body (the verification `token` field removed)
    std::string ignored_reason;    // for `ignored`: a short, content-free reason for the log
};

// Classifies a verified request. nullopt with a one-line `error` when the body is malformed.
std::optional<slack_request> parse_request(std::string_view content_type, std::string_view body,
                                           std::string& error);

// Event-type and channel allow-lists. Slash commands match "slash_command" or their "/command".
bool passes_filters(const settings& s, const slack_request& r);

// {"webhook":{"method":"POST","headers":{...allow-listed...},"body":<r.body>}}.
// `headers` are (lower-case name, value) pairs as received.
std::string content_json(const slack_request& r,
                         const std::vector<std::pair<std::string, std::string>>& headers);

} // namespace wopbridge::slack
