#pragma once
// Standard Webhooks (standard-webhooks-1) signing for tests, on OpenSSL directly so tests do not
// depend on the SDK's implementation they are checking against:
//   webhook-signature = "v1," + base64(HMAC-SHA256(base64decode(secret without "whsec_"),
//                                                  "{webhook-id}.{webhook-timestamp}.{body}"))

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace wopbridge::testing {

// "v1,<base64>"; empty when the secret is not "whsec_<base64>".
std::string sign_standard_webhook(std::string_view secret, std::string_view webhook_id,
                                  std::int64_t timestamp_s, std::string_view body);

// The three headers for a signed POST.
std::vector<std::pair<std::string, std::string>> standard_webhook_headers(
    std::string_view secret, std::string_view webhook_id, std::int64_t timestamp_s,
    std::string_view body);

// A fresh "msg_<24 hex>" id (never reused: dedup state outlives a test run).
std::string fresh_webhook_id();

} // namespace wopbridge::testing
