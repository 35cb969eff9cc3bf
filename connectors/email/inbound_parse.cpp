#include "inbound_parse.hpp"

#include "mime.hpp"

#include <wopbridge/signatures.hpp>

#include <algorithm>
#include <cctype>

namespace wopbridge::email {

std::string_view to_string(parse_verdict v) noexcept {
    switch (v) {
    case parse_verdict::valid:
        return "valid";
    case parse_verdict::missing:
        return "missing";
    case parse_verdict::malformed:
        return "malformed";
    case parse_verdict::stale_timestamp:
        return "stale_timestamp";
    case parse_verdict::mismatch:
        return "mismatch";
    }
    return "unknown";
}

std::string sign_inbound(std::string_view signing_key, std::string_view timestamp,
                         std::string_view token) {
    std::string message(timestamp);
    message.append(token);
    return sig::to_hex(sig::hmac_sha256(signing_key, message));
}

parse_verdict verify_inbound_signature(std::string_view signing_key, std::string_view timestamp,
                                       std::string_view token, std::string_view signature,
                                       std::int64_t now_s, std::int64_t tolerance_s) {
    if (timestamp.empty() || token.empty() || signature.empty()) {
        return parse_verdict::missing;
    }
    auto ts = sig::parse_unix_seconds(timestamp);
    if (!ts || token.size() > 256 || signature.size() != 64) {
        return parse_verdict::malformed;
    }
    std::string sig_lower(signature);
    std::transform(sig_lower.begin(), sig_lower.end(), sig_lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (!sig::constant_time_equal(sign_inbound(signing_key, timestamp, token), sig_lower)) {
        return parse_verdict::mismatch;
    }
    if (!sig::within_window(now_s, *ts, tolerance_s)) {
        return parse_verdict::stale_timestamp;
    }
    return parse_verdict::valid;
}

void token_replay_cache::expire(std::int64_t now_s) {
    while (!order_.empty() &&
           (order_.front().second + ttl_s_ < now_s || order_.size() > capacity_)) {
        auto it = seen_.find(order_.front().first);
        if (it != seen_.end() && it->second == order_.front().second) {
            seen_.erase(it);
        }
        order_.pop_front();
    }
}

bool token_replay_cache::reserve(std::string_view token, std::int64_t now_s) {
    std::lock_guard lock(mu_);
    expire(now_s);
    std::string key(token);
    if (auto it = seen_.find(key); it != seen_.end() && it->second + ttl_s_ >= now_s) {
        return false;
    }
    seen_[key] = now_s;
    order_.emplace_back(std::move(key), now_s);
    expire(now_s);
    return true;
}

void token_replay_cache::release(std::string_view token) {
    std::lock_guard lock(mu_);
    seen_.erase(std::string(token));
}

namespace {

// Length-prefixed, so ("ab", "c") and ("a", "bc") never read alike.
void put_counted(std::string& out, std::string_view s) {
    out += std::to_string(s.size());
    out += ':';
    out += s;
}

} // namespace

std::optional<inbound_mail> inbound_mail_of(const std::vector<http::multipart_part>& parts) {
    inbound_mail m;
    std::string sender;
    for (const auto& part : parts) {
        auto info = http::form_part_info_of(part);
        if (!info) {
            return std::nullopt;
        }
        if (info->name != "timestamp" && info->name != "token" && info->name != "signature") {
            put_counted(m.received_identity, info->name);
            put_counted(m.received_identity, info->filename ? "f" + *info->filename : "-");
            put_counted(m.received_identity, part.body);
        }
        if (info->filename) {
            if (info->filename->empty() && part.body.empty()) {
                continue;
            }
            m.files.push_back(
                {sanitize_utf8(*info->filename),
                 info->media_type.empty() ? "application/octet-stream" : info->media_type,
                 part.body});
            continue;
        }
        const auto& n = info->name;
        auto value = sanitize_utf8(part.body);
        if (n == "timestamp") {
            m.timestamp = value;
        } else if (n == "token") {
            m.token = value;
        } else if (n == "signature") {
            m.signature = value;
        } else if (n == "from" || n == "From") {
            m.from = value;
        } else if (n == "sender") {
            sender = value;
        } else if (n == "recipient") {
            for (auto& a : split_address_list(value)) {
                m.to.push_back(std::move(a));
            }
        } else if (n == "subject" || n == "Subject") {
            m.subject = value;
        } else if (n == "body-plain") {
            m.text = value;
        } else if (n == "body-html") {
            m.html = value;
        } else if (n == "Message-Id" || n == "message-id" || n == "Message-ID") {
            // A sanitized id could name two messages: one that is not UTF-8 is not used, and
            // the message is known by what was received instead.
            m.message_id = value == part.body ? value : std::string();
        }
    }
    if (m.from.empty()) {
        m.from = sender;
    }
    return m;
}

} // namespace wopbridge::email
