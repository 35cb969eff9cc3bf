#include "slack/slack_connector.hpp"

#include <wopbridge/json_reply.hpp>

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include <string>
#include <utility>
#include <vector>

namespace wopbridge::slack {
namespace {

std::string_view verdict_message(sig::verdict v) {
    switch (v) {
    case sig::verdict::missing_header:
        return "X-Slack-Signature and X-Slack-Request-Timestamp are required";
    case sig::verdict::stale_timestamp:
        return "X-Slack-Request-Timestamp is outside the accepted window";
    case sig::verdict::malformed:
        return "X-Slack-Signature or X-Slack-Request-Timestamp is malformed";
    default:
        return "the request signature does not match";
    }
}

} // namespace

connector_info slack_connector::info() {
    return connector_info{
        .name = "slack",
        .version = "0.1.0",
        .status = "alpha",
        .security_posture =
            "Verifies X-Slack-Signature (v0 HMAC-SHA256 over the raw body with any configured "
            "secret, "
            "timestamp within toleranceSeconds past or future); nothing unsigned is trusted.",
        .source = "webhook",
        .config_schema_json = config_schema_json,
        .subscription_schema_json = subscription_schema_json,
        .capabilities = WB_CAP_HTTP_INGEST};
}

void slack_connector::handle(request_handle& req, const http_request_view& r,
                             const settings& effective, std::shared_ptr<in_flight::ticket> ticket) {
    const std::string sub_id(r.subscription_id);
    if (r.method != "POST") {
        return respond_error(req, 405, "method_not_allowed", "Slack requests are POSTs");
    }

    const std::int64_t now_ms = r.received_at_ms > 0 ? r.received_at_ms : host_.now_ms();
    const auto verdict =
        verify_request(effective, r.header("x-slack-request-timestamp").value_or(""),
                       r.header("x-slack-signature").value_or(""), r.body, now_ms / 1000);
    if (verdict != sig::verdict::valid) {
        host_.log(log_level::warn, "slack: request refused for subscription " + sub_id +
                                       ": signature " + std::string(sig::to_string(verdict)));
        return respond_error(req, 401, "signature_invalid", verdict_message(verdict));
    }

    std::string error;
    auto parsed = parse_request(r.header("content-type").value_or(""), r.body, error);
    if (!parsed) {
        host_.log(log_level::warn,
                  "slack: malformed request for subscription " + sub_id + ": " + error);
        return respond_error(req, 400, "malformed_request", error);
    }
    if (parsed->kind == request_kind::url_verification) {
        boost::json::object challenge;
        challenge["challenge"] = parsed->challenge;
        req.respond(200, {{"content-type", "application/json"}}, boost::json::serialize(challenge));
        return;
    }
    if (parsed->kind == request_kind::ignored) {
        host_.log(log_level::info,
                  "slack: acknowledged without delivery (" + parsed->ignored_reason + ")");
        req.respond(200);
        return;
    }
    if (!passes_filters(effective, *parsed)) {
        host_.log(log_level::debug, "slack: filtered out for subscription " + sub_id);
        req.respond(200);
        return;
    }

    std::vector<std::pair<std::string, std::string>> headers;
    headers.reserve(r.headers.size());
    for (const auto& h : r.headers) {
        headers.emplace_back(h.name, h.value);
    }
    inbound_event event;
    event.subscription_id = sub_id;
    event.provider_event_id = parsed->provider_event_id;
    event.received_at_ms = now_ms;
    event.verified = true;
    event.content_json = content_json(*parsed, headers);

    submit_then_answer(req, event, std::move(ticket), "slack",
                       [](request_handle& committed) { committed.respond(200); });
}

} // namespace wopbridge::slack
