#pragma once
// Signature helpers every channel needs: HMAC-SHA256/SHA1, base64, hex, constant-time compare,
// timestamp windows, and verifiers for the common schemes (Standard Webhooks, Slack v0, Twilio,
// OpenWOP v1). Implemented in sdk/src/signatures.cpp (OpenSSL); usable by connectors and the host.
// Nothing here throws; verifiers return a verdict enum so callers can count refusals by reason.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace wopbridge::sig {

std::string hmac_sha256(std::string_view key, std::string_view message); // raw 32 bytes
std::string hmac_sha1(std::string_view key, std::string_view message);   // raw 20 bytes
std::string sha256(std::string_view data);                              // raw 32 bytes

std::string to_hex(std::string_view raw);                       // lower-case
std::optional<std::string> from_hex(std::string_view hex);
std::string base64_encode(std::string_view raw);                // standard alphabet, padded
std::optional<std::string> base64_decode(std::string_view text); // standard alphabet, padding required
std::string base64url_encode(std::string_view raw);             // unpadded

// Ed25519 (RFC 8032): whether `signature` (64 raw bytes) is `public_key`'s (32 raw bytes) over
// `message`. False for keys or signatures of the wrong length. Discord interactions sign this way.
bool ed25519_verify(std::string_view public_key, std::string_view signature,
                    std::string_view message) noexcept;

// Constant-time equality (time depends only on the lengths).
bool constant_time_equal(std::string_view a, std::string_view b) noexcept;

// |now - ts| <= tolerance (both sides), in seconds.
bool within_window(std::int64_t now_s, std::int64_t ts_s, std::int64_t tolerance_s) noexcept;
// Parses a non-negative decimal Unix-seconds header value; nullopt on anything else.
std::optional<std::int64_t> parse_unix_seconds(std::string_view text) noexcept;

enum class verdict {
    valid,
    missing_header,
    malformed,        // header present but unparsable
    stale_timestamp,  // outside the tolerance window (past or future)
    mismatch,         // no signature matched
    bad_secret,       // the configured secret is unusable (e.g. not whsec_ base64)
};
std::string_view to_string(verdict v) noexcept;

// Standard Webhooks (standard-webhooks-1): signature = base64(HMAC-SHA256(key, "{id}.{ts}.{body}")),
// header "v1,<sig>" entries separated by spaces (any match accepts: rotation). `secrets` are
// "whsec_<base64>" strings (several during rotation). Tolerance 300 s either way.
verdict verify_standard_webhooks(const std::vector<std::string>& secrets, std::string_view webhook_id,
                                 std::string_view webhook_timestamp, std::string_view webhook_signature,
                                 std::string_view body, std::int64_t now_s,
                                 std::int64_t tolerance_s = 300);
// Produces the "v1,<base64>" value for one secret (for tests, examples and outbound signing).
std::optional<std::string> sign_standard_webhooks(std::string_view secret, std::string_view webhook_id,
                                                  std::int64_t timestamp_s, std::string_view body);
// `webhook-id` must match ^[A-Za-z0-9_-]{16,128}$.
bool valid_webhook_id(std::string_view id) noexcept;

// Slack v0: "v0=" + hex(HMAC-SHA256(signing_secret, "v0:{ts}:{body}")); refuses timestamps more than
// tolerance_s off in either direction. Several secrets are tried (rotation).
verdict verify_slack_v0(const std::vector<std::string>& signing_secrets, std::string_view timestamp,
                        std::string_view signature, std::string_view body, std::int64_t now_s,
                        std::int64_t tolerance_s = 300);
std::string sign_slack_v0(std::string_view signing_secret, std::string_view timestamp,
                          std::string_view body);

// Twilio: base64(HMAC-SHA1(auth_token, url + concat(sorted(name + value)))) for form posts; for JSON
// bodies `params` is empty and the URL carries bodySHA256 (hex SHA-256 of the body), which is checked.
std::string sign_twilio(std::string_view auth_token, std::string_view url,
                        std::vector<std::pair<std::string, std::string>> params);
verdict verify_twilio(const std::vector<std::string>& auth_tokens, std::string_view url,
                      const std::vector<std::pair<std::string, std::string>>& params,
                      std::string_view signature);
verdict verify_twilio_json(const std::vector<std::string>& auth_tokens, std::string_view url,
                           std::string_view body, std::string_view signature);

// OpenWOP v1 (outbound webhooks): "sha256=" + hex(HMAC-SHA256(secret, "{ts}.{body}")).
std::string sign_openwop_v1(std::string_view secret, std::int64_t timestamp_s, std::string_view body);
verdict verify_openwop_v1(std::string_view secret, std::string_view timestamp,
                          std::string_view signature, std::string_view body, std::int64_t now_s,
                          std::int64_t tolerance_s = 300);

} // namespace wopbridge::sig
