#pragma once
// Provider signatures built by the tests themselves (OpenSSL directly, never the SDK under test):
// Slack v0, Twilio's X-Twilio-Signature (form and bodySHA256 variants) and the Mailgun-style
// inbound-parse signature.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace wopbridge::testing {

// "v0=" + hex HMAC-SHA256(secret, "v0:{timestamp}:{body}")
std::string slack_signature(std::string_view secret, std::int64_t timestamp_s,
                            std::string_view body);

// base64 HMAC-SHA1(token, url + every parameter sorted by name, name then value)
std::string twilio_signature(std::string_view auth_token, std::string_view url,
                             const std::multimap<std::string, std::string>& params);

// hex HMAC-SHA256(key, data) (the hello connector, Mailgun-style inbound parse)
std::string hmac_sha256_hex(std::string_view key, std::string_view data);

// hex SHA-256 (Twilio's bodySHA256 query parameter)
std::string sha256_hex(std::string_view bytes);

// application/x-www-form-urlencoded with %XX for everything but unreserved characters
std::string form_encode(const std::multimap<std::string, std::string>& params);

} // namespace wopbridge::testing
