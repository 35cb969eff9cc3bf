#include "intake/webhook_intake.hpp"

#include <wopbridge/json_bytes.hpp>
#include <wopbridge/signatures.hpp>

#include <boost/json.hpp>

#include <algorithm>
#include <array>

namespace wopbridge::intake {
namespace json = boost::json;

std::optional<std::string_view> find_header(const inbound_http_request& req, std::string_view name) {
    for (const auto& [k, v] : req.headers) {
        if (k == name) {
            return std::string_view(v);
        }
    }
    return std::nullopt;
}

std::vector<std::string> split_secrets(std::string_view text) {
    std::vector<std::string> out;
    std::string cur;
    for (char c : text) {
        if (c == ' ' || c == ',' || c == '\n' || c == '\t' || c == '\r') {
            if (!cur.empty()) {
                out.push_back(std::move(cur));
                cur.clear();
            }
        } else {
            cur.push_back(c);
        }
    }
    if (!cur.empty()) {
        out.push_back(std::move(cur));
    }
    return out;
}

bool header_allowed(std::string_view name) noexcept {
    static constexpr std::array<std::string_view, 4> allowed = {"content-type", "user-agent",
                                                                "webhook-id", "webhook-timestamp"};
    for (auto a : allowed) {
        if (a == name) {
            return true;
        }
    }
    return false;
}

webhook_verification verify_webhook(verification_mode mode, const std::vector<std::string>& secrets,
                                    const inbound_http_request& req, std::int64_t now_s) {
    webhook_verification v;
    auto id = find_header(req, "webhook-id");
    if (id && sig::valid_webhook_id(*id)) {
        v.webhook_id = std::string(*id);
    }
    if (mode == verification_mode::none) {
        return v;
    }
    auto ts = find_header(req, "webhook-timestamp");
    auto signature = find_header(req, "webhook-signature");
    sig::verdict verdict = sig::verdict::missing_header;
    if (id && ts && signature) {
        verdict = v.webhook_id.empty()
                      ? sig::verdict::malformed
                      : sig::verify_standard_webhooks(secrets, *id, *ts, *signature, req.body, now_s);
    }
    v.verified = verdict == sig::verdict::valid;
    if (!v.verified) {
        v.refusal = std::string(sig::to_string(verdict));
        v.refused = mode == verification_mode::required;
        if (v.refused && v.webhook_id.empty() && id && !id->empty()) {
            v.malformed_header = "the webhook-id header must match ^[A-Za-z0-9_-]{16,128}$";
        } else if (v.refused && ts && !ts->empty() && !sig::parse_unix_seconds(*ts)) {
            v.malformed_header = "the webhook-timestamp header must be Unix seconds";
        }
    }
    return v;
}

std::string webhook_content_json(const inbound_http_request& req,
                                 const std::vector<std::string>& also) {
    json::object headers;
    for (const auto& [k, v] : req.headers) {
        const bool named = std::find(also.begin(), also.end(), k) != also.end();
        if ((named || header_allowed(k)) && !headers.contains(k)) {
            headers[k] = wopbridge::json::lossy_utf8(v);
        }
    }
    json::value body = json::string(req.body);
    auto ct = find_header(req, "content-type");
    if (ct) {
        std::string_view media = ct->substr(0, ct->find(';'));
        while (!media.empty() && media.back() == ' ') {
            media.remove_suffix(1);
        }
        bool is_json = media == "application/json" ||
                       (media.size() > 5 && media.substr(media.size() - 5) == "+json");
        if (is_json) {
            // Not JSON, or numbers that would not survive as JSON (1e400): the raw text instead.
            if (auto parsed = wopbridge::json::parse_content_json(req.body)) {
                body = std::move(*parsed);
            }
        }
    }
    json::object webhook;
    webhook["method"] = req.method;
    webhook["headers"] = std::move(headers);
    // A body that is not UTF-8 (never valid JSON) is carried as base64, not refused.
    wopbridge::json::carry_invalid_utf8(body);
    webhook["body"] = std::move(body);
    json::object out;
    out["webhook"] = std::move(webhook);
    return json::serialize(out);
}

} // namespace wopbridge::intake
