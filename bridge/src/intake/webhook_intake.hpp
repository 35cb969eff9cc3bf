#pragma once
// Standard Webhooks intake helpers (RFC 0230): verification under the subscription's mode and the
// per-source TriggerEvent object. No I/O here; the bridge does the store work.

#include "contract/intake.hpp"
#include "contract/types.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wopbridge::intake {

struct webhook_verification {
    bool refused = false;    // `required` mode refused the request: dead-letter it, answer 401
    bool verified = false;   // the signature checked out
    std::string webhook_id;  // the sender's webhook-id when present and well-formed, else empty
    std::string refusal;     // content-free reason (a sig::verdict name)
    // When refused because a header is present but not of its form (a request error, answered
    // 400 rather than 401): what the sender must fix, content-free.
    std::string malformed_header;
    // A verified handshake: answer this and store nothing.
    std::optional<handshake_reply> answer; // sent as it is
};

// Header lookup by lower-case name; the first occurrence wins.
std::optional<std::string_view> find_header(const inbound_http_request& req, std::string_view name);

// Splits the unsealed secret text (one "whsec_…" per whitespace- or comma-separated item: rotation).
std::vector<std::string> split_secrets(std::string_view text);

webhook_verification verify_webhook(verification_mode mode, const std::vector<std::string>& secrets,
                                    const inbound_http_request& req, std::int64_t now_s);

// {"webhook":{"method","headers":{allow-listed only},"body": parsed JSON or raw text}}. `also`:
// more lower-case header names the run may see (a catalogue provider's delivery id and event type).
std::string webhook_content_json(const inbound_http_request& req,
                                 const std::vector<std::string>& also = {});

// The headers that may reach the run (never authorization, cookie, proxy-authorization or the
// signature).
bool header_allowed(std::string_view lower_name) noexcept;

} // namespace wopbridge::intake
