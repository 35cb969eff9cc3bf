#pragma once
// The bytes and headers of one outbound delivery (CONTRACT.md (e), webhooks.md §Delivery): body
// {"runId","workspaceId","event": <RunEventDoc as persisted>} (webhook-delivery.schema.json, closed),
// OpenWOP v1 signature over "{ts}.{rawBody}", plus Standard Webhooks headers when the subscriber
// registered a whsec_ secret.

#include "contract/types.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace wopbridge::outbound {

std::string delivery_body(const std::string& workspace_id, const run_event& e);

// first 8 hex chars of sha256(secret) (webhooks.md; logs use this, never the secret).
std::string secret_fingerprint(std::string_view secret);

struct signing_input {
    std::string webhook_id;
    std::string event_type;
    std::string delivery_id;     // the Standard Webhooks webhook-id (stable across retries)
    std::int64_t timestamp_s = 0;
    std::string secret;          // v1 secret as issued
    std::string standard_secret; // optional whsec_…
    std::string version;         // User-Agent version
};

std::vector<std::pair<std::string, std::string>> delivery_headers(const signing_input& in,
                                                                  std::string_view body);

} // namespace wopbridge::outbound
