// hello: the smallest useful connector, and the walk-through in docs/writing-a-connector.md.
//
// POST /v1/ingest/{id} with any body. When the subscription has a `secret`, the request must carry
//   x-hello-timestamp: <unix seconds>        (within 300 s of now)
//   x-hello-signature: sha256=<hex HMAC-SHA256(secret, "{timestamp}.{raw body}")>
// The event id is the x-hello-id header, or the SHA-256 of the body. The connector answers only
// after the bridge has committed the event: 202 accepted / held, 200 duplicate, 409 not active,
// 503 (+Retry-After) overloaded or store trouble, 401 bad signature.
#include "wopbridge/connector.hpp"
#include "wopbridge/http_util.hpp"
#include "wopbridge/json_util.hpp"
#include "wopbridge/signatures.hpp"

#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>

namespace {

constexpr std::size_t default_max_body = 64 * 1024;

struct hello_settings {
    std::string greeting = "hello";
    std::size_t max_body_bytes = default_max_body;
};

// Connector settings: {"greeting": string, "max_body_bytes": 1..1048576}. Unknown keys are refused.
std::optional<hello_settings> parse_settings(std::string_view text, std::string& error) {
    auto obj = wopbridge::json::parse_flat_object(text.empty() ? "{}" : text, &error);
    if (!obj) {
        error = "settings: " + error;
        return std::nullopt;
    }
    hello_settings s;
    for (const auto& [key, value] : *obj) {
        using kind = wopbridge::json::flat_value::kind;
        if (key == "greeting" && value.type == kind::string && value.text.size() <= 200) {
            s.greeting = value.text;
        } else if (key == "max_body_bytes" && value.type == kind::number &&
                   value.text.find_first_not_of("0123456789") == std::string::npos &&
                   value.text.size() <= 7 && std::stoul(value.text) >= 1 &&
                   std::stoul(value.text) <= 1024 * 1024) {
            s.max_body_bytes = std::stoul(value.text);
        } else {
            error = "settings: invalid or unknown key '" + key + "'";
            return std::nullopt;
        }
    }
    return s;
}

// Per-subscription settings: {"secret": string (optional)}.
std::optional<std::string> parse_secret(std::string_view text, std::string& error) {
    auto obj = wopbridge::json::parse_flat_object(text.empty() ? "{}" : text, &error);
    if (!obj) {
        error = "subscription settings: " + error;
        return std::nullopt;
    }
    std::string secret;
    for (const auto& [key, value] : *obj) {
        if (key == "secret" && value.type == wopbridge::json::flat_value::kind::string &&
            value.text.size() >= 16) {
            secret = value.text;
        } else {
            error = "subscription settings: invalid or unknown key '" + key +
                    "' (secret: a string of at least 16 characters)";
            return std::nullopt;
        }
    }
    return secret;
}

const wopbridge::header_list json_type = {{"content-type", "application/json"}};

class hello final : public wopbridge::connector {
  public:
    static wopbridge::connector_info info() {
        wopbridge::connector_info i;
        i.name = "hello";
        i.version = "1.0.0";
        i.status = "stable";
        i.security_posture =
            "verifies an HMAC-SHA256 over timestamp and raw body when a subscription has a secret "
            "(300 s window); without one, events are submitted unverified";
        i.source = "webhook";
        i.config_schema_json =
            R"({"type":"object","additionalProperties":false,"properties":{)"
            R"("greeting":{"type":"string","maxLength":200,"default":"hello"},)"
            R"("max_body_bytes":{"type":"integer","minimum":1,"maximum":1048576,)"
            R"("default":65536}}})";
        i.subscription_schema_json =
            R"({"type":"object","additionalProperties":false,"properties":{)"
            R"("secret":{"type":"string","minLength":16,"writeOnly":true}}})";
        i.capabilities = WB_CAP_HTTP_INGEST;
        return i;
    }

    static wopbridge::status validate(std::string_view config, std::string& error) {
        return parse_settings(config, error) ? wopbridge::status::ok : wopbridge::status::invalid;
    }

    hello(wopbridge::host& host, std::string_view config) : host_(host) {
        std::string error;
        auto s = parse_settings(config, error);
        if (!s) {
            throw std::invalid_argument(error);
        }
        settings_ = *s;
    }

    wopbridge::status subscribe(const wopbridge::subscription_info& sub,
                                std::string& error) override {
        auto secret = parse_secret(sub.settings_json, error);
        if (!secret) {
            return wopbridge::status::invalid;
        }
        std::lock_guard lk(mu_);
        secrets_[std::string(sub.id)] = std::move(*secret); // subscribing again updates
        return wopbridge::status::ok;
    }

    wopbridge::status unsubscribe(std::string_view id) override {
        std::lock_guard lk(mu_);
        secrets_.erase(std::string(id));
        return wopbridge::status::ok;
    }

    void on_http_request(wopbridge::request_handle req,
                         const wopbridge::http_request_view& r) override {
        std::optional<std::string> secret;
        {
            std::lock_guard lk(mu_);
            if (auto it = secrets_.find(std::string(r.subscription_id)); it != secrets_.end()) {
                secret = it->second;
            }
        }
        if (!secret) {
            req.respond(404, json_type, R"({"error":"not_found"})");
            return;
        }
        if (r.method != "POST") {
            req.respond(405, {{"allow", "POST"}}, "");
            return;
        }
        if (r.body.size() > settings_.max_body_bytes) {
            req.respond(413, json_type, R"({"error":"payload_too_large"})");
            return;
        }
        bool verified = false;
        if (!secret->empty()) {
            const auto verdict = wopbridge::sig::verify_openwop_v1(
                *secret, r.header("x-hello-timestamp").value_or(""),
                r.header("x-hello-signature").value_or(""), r.body, host_.now_ms() / 1000);
            if (verdict != wopbridge::sig::verdict::valid) {
                // The reason goes to the log (content-free), not to the caller.
                host_.log(wopbridge::log_level::warn,
                          "signature refused: " + std::string(wopbridge::sig::to_string(verdict)));
                req.respond(401, json_type, R"({"error":"signature_invalid"})");
                return;
            }
            verified = true;
        }

        wopbridge::inbound_event ev;
        ev.subscription_id = std::string(r.subscription_id);
        const auto id = r.header("x-hello-id");
        ev.provider_event_id = id && !id->empty() && id->size() <= 200
                                   ? std::string(*id)
                                   : wopbridge::sig::to_hex(wopbridge::sig::sha256(r.body));
        ev.received_at_ms = r.received_at_ms;
        ev.verified = verified;
        const std::string media =
            wopbridge::http::media_type(r.header("content-type").value_or(""));
        ev.content_json = R"({"webhook":{"greeting":)" +
                          wopbridge::json::quote(settings_.greeting) + R"(,"contentType":)" +
                          wopbridge::json::quote(media) + R"(,"body":)" +
                          wopbridge::json::quote(r.body) + "}}";

        // std::function needs a copyable callable: share the move-only handle.
        auto pending = std::make_shared<wopbridge::request_handle>(std::move(req));
        const auto st = host_.submit(
            ev, [pending](const wopbridge::submit_outcome& o) { answer(*pending, o); });
        if (st != wopbridge::status::ok) {
            pending->respond(503, {{"content-type", "application/json"}, {"retry-after", "1"}},
                             R"({"error":"unavailable"})");
        }
    }

  private:
    static void answer(wopbridge::request_handle& req, const wopbridge::submit_outcome& o) {
        using wopbridge::outcome_kind;
        const std::string run = wopbridge::json::quote(o.run_id);
        switch (o.kind) {
        case outcome_kind::accepted:
        case outcome_kind::held:
            req.respond(202, json_type, R"({"status":"accepted","runId":)" + run + "}");
            return;
        case outcome_kind::duplicate:
            req.respond(200, json_type, R"({"status":"duplicate","runId":)" + run + "}");
            return;
        case outcome_kind::refused:
            break;
        }
        const std::string body = R"({"error":)" + wopbridge::json::quote(o.reason) + "}";
        switch (wopbridge::refusal_reason_of(o)) {
        case wopbridge::refusal_reason::subscription_not_active:
            req.respond(409, json_type, body);
            return;
        case wopbridge::refusal_reason::not_found:
            req.respond(404, json_type, body);
            return;
        case wopbridge::refusal_reason::invalid:
            req.respond(400, json_type, body);
            return;
        default: // the host may take it later
            break;
        }
        const int after = o.retry_after_seconds > 0 ? o.retry_after_seconds : 1;
        req.respond(503,
                    {{"content-type", "application/json"}, {"retry-after", std::to_string(after)}},
                    body);
    }

    wopbridge::host& host_;
    hello_settings settings_;
    std::mutex mu_;
    std::map<std::string, std::string> secrets_; // subscription id -> secret ("" = unverified)
};

} // namespace

WOPBRIDGE_CONNECTOR(hello)
