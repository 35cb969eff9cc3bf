#include "intake/provider_verify.hpp"

#include <wopbridge/http_util.hpp>
#include <wopbridge/signatures.hpp>

#include <boost/json.hpp>

#include <charconv>
#include <optional>

namespace wopbridge::intake {
namespace json = boost::json;
using providers::value_source;

namespace {

// The body parsed once, on first use by a json source.
class request_view {
public:
    explicit request_view(const inbound_http_request& req) : req_(req) {}
    const inbound_http_request& req() const { return req_; }

    const json::value* body_json() {
        if (!parsed_) {
            parsed_ = true;
            boost::system::error_code ec;
            body_ = json::parse(req_.body, ec);
            ok_ = !ec;
        }
        return ok_ ? &body_ : nullptr;
    }

    // A string or an integer at the pointer, as text.
    std::optional<std::string> json_text(const std::string& pointer) {
        const auto* v = body_json();
        if (v == nullptr) {
            return std::nullopt;
        }
        boost::system::error_code ec;
        const auto* at = v->find_pointer(pointer, ec);
        if (at == nullptr) {
            return std::nullopt;
        }
        if (at->is_string()) {
            return std::string(at->get_string());
        }
        if (at->is_int64()) {
            return std::to_string(at->get_int64());
        }
        if (at->is_uint64()) {
            return std::to_string(at->get_uint64());
        }
        return std::nullopt;
    }

private:
    const inbound_http_request& req_;
    bool parsed_ = false;
    bool ok_ = false;
    json::value body_;
};

// The values of `key` in "k=v,k=v" (Stripe's t=…,v1=…,v1=…).
std::vector<std::string> params_of(std::string_view list, std::string_view key) {
    std::vector<std::string> out;
    while (!list.empty()) {
        auto comma = list.find(',');
        auto item = http::trim_whitespace(list.substr(0, comma));
        list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
        auto eq = item.find('=');
        if (eq != std::string_view::npos && http::trim_whitespace(item.substr(0, eq)) == key) {
            out.emplace_back(http::trim_whitespace(item.substr(eq + 1)));
        }
    }
    return out;
}

std::optional<std::string> read(request_view& r, const value_source& s,
                                std::optional<std::string_view> signature_header) {
    switch (s.from) {
    case value_source::kind::none: return std::nullopt;
    case value_source::kind::header:
        if (auto h = find_header(r.req(), s.name)) {
            return std::string(*h);
        }
        return std::nullopt;
    case value_source::kind::json: return r.json_text(s.name);
    case value_source::kind::param: {
        if (!signature_header) {
            return std::nullopt;
        }
        auto v = params_of(*signature_header, s.name);
        return v.size() == 1 ? std::optional<std::string>(v.front()) : std::nullopt;
    }
    }
    return std::nullopt;
}

std::optional<std::int64_t> parse_integer(std::string_view text) {
    std::int64_t v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || v < 0) {
        return std::nullopt;
    }
    return v;
}

webhook_verification refused(webhook_verification v, verification_mode mode, sig::verdict why) {
    v.verified = false;
    v.refusal = std::string(sig::to_string(why));
    v.refused = mode == verification_mode::required;
    return v;
}

// Only a request whose own signature verified gets here, so the answer signs nothing for a
// stranger (a Zoom handler that hashed any plainToken would be a signing oracle).
std::optional<handshake_reply> handshake_of(const providers::provider& p, request_view& r,
                                             const std::string& secret) {
    using providers::handshake;
    if (p.handshake == handshake::discord_ping) {
        auto type = r.json_text("/type");
        if (type && *type == "1") {
            return handshake_reply{200, "application/json", R"({"type":1})"};
        }
    }
    if (p.handshake == handshake::zoom_url_validation) {
        auto event = r.json_text("/event");
        auto plain = r.json_text("/payload/plainToken");
        if (event && *event == "endpoint.url_validation" && plain) {
            json::object reply{{"plainToken", *plain},
                               {"encryptedToken", sig::to_hex(sig::hmac_sha256(secret, *plain))}};
            return handshake_reply{200, "application/json", json::serialize(reply)};
        }
    }
    return std::nullopt;
}

} // namespace

bool valid_delivery_id(std::string_view id) noexcept {
    if (id.empty() || id.size() > 128) {
        return false;
    }
    for (char c : id) {
        if (c <= ' ' || c > '~') {
            return false;
        }
    }
    return true;
}

std::vector<std::string> provider_headers(const providers::provider& p) {
    std::vector<std::string> out;
    for (const auto* s : {&p.delivery_id, &p.event_type}) {
        if (s->from == value_source::kind::header) {
            out.push_back(s->name);
        }
    }
    return out;
}

webhook_verification verify_provider(const providers::provider& p, verification_mode mode,
                                     const std::vector<std::string>& secrets,
                                     const inbound_http_request& req, std::int64_t now_s) {
    if (p.alg == providers::algorithm::standard_webhooks) {
        return verify_webhook(mode, secrets, req, now_s);
    }
    webhook_verification v;
    request_view r(req);
    if (auto id = read(r, p.delivery_id, std::nullopt); id && valid_delivery_id(*id)) {
        v.webhook_id = std::move(*id);
    }
    if (mode == verification_mode::none) {
        return v;
    }
    std::optional<std::string_view> sig_header;
    if (p.signature.from == value_source::kind::header) {
        sig_header = find_header(req, p.signature.name);
    }
    auto raw = read(r, p.signature, std::nullopt);
    if (!raw || raw->empty()) {
        return refused(std::move(v), mode, sig::verdict::missing_header);
    }
    std::string_view value = *raw;
    if (!p.signature_prefix.empty()) {
        if (!value.starts_with(p.signature_prefix)) {
            return refused(std::move(v), mode, sig::verdict::malformed);
        }
        value.remove_prefix(p.signature_prefix.size());
    }
    if (p.alg == providers::algorithm::token) {
        bool matched = false;
        for (const auto& s : secrets) {
            matched |= sig::constant_time_equal(s, value);
        }
        if (!matched) {
            return refused(std::move(v), mode, sig::verdict::mismatch);
        }
        v.verified = true;
        return v;
    }
    std::string timestamp;
    if (p.timestamp.present()) {
        auto ts = read(r, p.timestamp, sig_header);
        if (!ts) {
            return refused(std::move(v), mode, sig::verdict::missing_header);
        }
        auto n = parse_integer(*ts);
        if (!n) {
            return refused(std::move(v), mode, sig::verdict::malformed);
        }
        const std::int64_t seconds = p.timestamp_in_ms ? *n / 1000 : *n;
        if (!sig::within_window(now_s, seconds, p.tolerance_s)) {
            return refused(std::move(v), mode, sig::verdict::stale_timestamp);
        }
        timestamp = std::move(*ts);
    }
    std::vector<std::string> candidates;
    std::vector<std::string> texts = p.signature_param.empty()
                                         ? std::vector<std::string>{std::string(value)}
                                         : params_of(value, p.signature_param);
    for (const auto& t : texts) {
        auto decoded = p.enc == providers::encoding::hex ? sig::from_hex(t) : sig::base64_decode(t);
        if (decoded) {
            candidates.push_back(std::move(*decoded));
        }
    }
    if (candidates.empty()) {
        return refused(std::move(v), mode, sig::verdict::malformed);
    }
    std::string message;
    for (const auto& part : p.signs) {
        using k = providers::signed_part::kind;
        switch (part.what) {
        case k::literal: message += part.text; break;
        case k::body: message += req.body; break;
        case k::timestamp: message += timestamp; break;
        case k::header: {
            auto h = find_header(req, part.text);
            if (!h) {
                return refused(std::move(v), mode, sig::verdict::missing_header);
            }
            message += *h;
            break;
        }
        case k::json: {
            auto j = r.json_text(part.text);
            if (!j) {
                return refused(std::move(v), mode, sig::verdict::malformed);
            }
            message += *j;
            break;
        }
        }
    }
    const std::string* matched = nullptr;
    for (const auto& s : secrets) {
        bool this_one = false;
        if (p.alg == providers::algorithm::ed25519) {
            // The "secret" is the application's public key, hex.
            auto key = sig::from_hex(s);
            for (const auto& c : candidates) {
                this_one |= key && sig::ed25519_verify(*key, c, message);
            }
        } else {
            const auto mac = p.alg == providers::algorithm::hmac_sha1 ? sig::hmac_sha1(s, message)
                                                                      : sig::hmac_sha256(s, message);
            for (const auto& c : candidates) {
                this_one |= sig::constant_time_equal(mac, c);
            }
        }
        if (this_one && matched == nullptr) {
            matched = &s;
        }
    }
    if (matched == nullptr) {
        return refused(std::move(v), mode, sig::verdict::mismatch);
    }
    v.verified = true;
    v.answer = handshake_of(p, r, *matched);
    return v;
}

} // namespace wopbridge::intake
