#pragma once
// The forms connector's decisions as pure functions: body decoding, origin allow-list, signed form
// tokens, the dedup identity and the TriggerEvent content. The module (forms_connector.cpp) only
// wires these to the host.

#include <wopbridge/multipart.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace wopbridge::forms {

// application/x-www-form-urlencoded (WHATWG): '&'-separated, '+' is a space, %XX escapes.
// nullopt on a broken escape (a malformed request, answered 400). The SDK's http_util parser.
std::optional<http::param_list> parse_urlencoded(std::string_view body);

// "scheme://host[:port]" with scheme and host lower-cased and the scheme's default port dropped;
// nullopt for anything that is not an absolute http(s) origin or URL.
std::optional<std::string> normalize_origin(std::string_view url_or_origin);
// An allowedOrigins entry: exactly http(s)://host[:port] (a DNS name, or an IPv6 literal in
// brackets; no path, query, fragment or userinfo), normalized as above; nullopt for anything else.
std::optional<std::string> parse_allowed_origin(std::string_view entry);
// Origin when present, else the origin of Referer; must equal one allow-list entry exactly (after
// normalization of both sides). "null" (sandboxed/opaque) origins never match.
bool origin_allowed(std::optional<std::string_view> origin, std::optional<std::string_view> referer,
                    const std::vector<std::string>& allowed);

// Signed form token "<expiry_s>.<nonce_hex>.<hmac_hex>", HMAC-SHA256(secret,
// "<subscription_id>.<expiry_s>.<nonce_hex>"): bound to one subscription, stateless, reusable until
// it expires (dedup, not the token, stops double submits).
std::string issue_form_token(std::string_view secret, std::string_view subscription_id,
                             std::int64_t expiry_s, std::string_view nonce_hex);
enum class token_verdict { valid, missing, malformed, mismatch, expired };
std::string_view to_string(token_verdict v) noexcept;
token_verdict verify_form_token(std::string_view secret, std::string_view subscription_id,
                                std::optional<std::string_view> token, std::int64_t now_s);

struct stored_file {
    std::string ref;
    std::string filename;
    std::string media_type;
    std::uint64_t bytes = 0;
    std::string sha256_hex; // for the content hash only; never in the event
};

// The dedup identity: "submission:<value>" when the configured id field is present and non-empty,
// else "hash:<hex>" = SHA-256 over the subscription id, the sorted fields, the file hashes and the
// window bucket floor(received_at_s / window_s).
std::string provider_event_id(std::string_view subscription_id, const http::param_list& fields,
                              const std::vector<stored_file>& files,
                              std::optional<std::string_view> submission_id_field,
                              std::int64_t received_at_ms, std::int64_t window_s);

// {"form":{"fields":{name: value | [values...]},"files":[AttachmentRef...]}}; a name repeated in
// the submission becomes an array in submission order.
std::string form_content_json(const http::param_list& fields, const std::vector<stored_file>& files);

// Drops every field named `name` (the token and honeypot fields never reach the run).
void remove_field(http::param_list& fields, std::string_view name);
std::optional<std::string> field_value(const http::param_list& fields, std::string_view name);

// Does the client ask for JSON (Accept lists application/json)? Otherwise it is a browser.
bool wants_json(std::optional<std::string_view> accept);

// The closed error envelope {"error","message"[, "details"]}.
std::string error_envelope(std::string_view code, std::string_view message,
                           std::optional<int> retry_after_s = std::nullopt);

} // namespace wopbridge::forms
