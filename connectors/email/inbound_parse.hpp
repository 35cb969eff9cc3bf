#pragma once
// Inbound-parse webhooks (Mailgun-style): a provider receives the mail and POSTs it as
// multipart/form-data with `timestamp`, `token` and `signature` = hex(HMAC-SHA256(key,
// timestamp + token)). Verification, a bounded token replay cache and the field mapping.

#include <wopbridge/multipart.hpp>

#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace wopbridge::email {

enum class parse_verdict { valid, missing, malformed, stale_timestamp, mismatch };
std::string_view to_string(parse_verdict v) noexcept;

parse_verdict verify_inbound_signature(std::string_view signing_key, std::string_view timestamp,
                                       std::string_view token, std::string_view signature,
                                       std::int64_t now_s, std::int64_t tolerance_s);
std::string sign_inbound(std::string_view signing_key, std::string_view timestamp,
                         std::string_view token); // hex, for tests and examples

// Tokens seen within the TTL, bounded (oldest evicted first). `reserve` claims a token before the
// commit; `release` gives it back when the commit was refused so the provider's retry can pass.
class token_replay_cache {
  public:
    token_replay_cache(std::size_t capacity, std::int64_t ttl_s)
        : capacity_(capacity), ttl_s_(ttl_s) {}
    bool reserve(std::string_view token, std::int64_t now_s); // false = replay
    void release(std::string_view token);

  private:
    void expire(std::int64_t now_s);
    std::mutex mu_;
    std::size_t capacity_;
    std::int64_t ttl_s_;
    std::unordered_map<std::string, std::int64_t> seen_;
    std::deque<std::pair<std::string, std::int64_t>> order_;
};

struct inbound_file {
    std::string filename;
    std::string media_type;
    std::string bytes;
};

struct inbound_mail {
    std::string timestamp;
    std::string token;
    std::string signature;
    std::string from;
    std::vector<std::string> to;
    std::string subject;
    std::string text;
    std::optional<std::string> html;
    std::string message_id;
    std::vector<inbound_file> files;
    // The message as received, for the dedup identity when there is no Message-Id: every part's
    // name, filename and raw bytes (before the UTF-8 sanitizing above), length-prefixed, except
    // the three fields the provider signs each post with afresh (timestamp, token, signature).
    std::string received_identity;
};

// Maps the multipart fields: `from` (else `sender`), `recipient` (comma-separated), `subject`,
// `body-plain`, `body-html`, `Message-Id`; file parts become files. Text is sanitized as UTF-8;
// `received_identity` keeps the bytes as they came.
std::optional<inbound_mail> inbound_mail_of(const std::vector<http::multipart_part>& parts);

} // namespace wopbridge::email
