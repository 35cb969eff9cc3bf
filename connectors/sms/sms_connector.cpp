#include "sms/sms_connector.hpp"

#include <wopbridge/json_reply.hpp>

#include <string>

namespace wopbridge::sms {
namespace {

constexpr std::string_view twiml_type = "text/xml";

std::string_view verdict_message(sig::verdict v) {
    switch (v) {
    case sig::verdict::missing_header:
        return "X-Twilio-Signature is required";
    case sig::verdict::malformed:
        return "X-Twilio-Signature or the bodySHA256 query parameter is malformed";
    default:
        return "the request signature does not match";
    }
}

} // namespace

connector_info sms_connector::info() {
    return connector_info{
        .name = "sms",
        .version = "0.1.0",
        .status = "alpha",
        .security_posture =
            "Verifies X-Twilio-Signature (HMAC-SHA1 over the signed URL and sorted POST "
            "parameters, or "
            "the URL with bodySHA256 for JSON) with any configured token; no timestamp exists, so "
            "MessageSid dedup is the replay guard.",
        .source = "webhook",
        .config_schema_json = config_schema_json,
        .subscription_schema_json = subscription_schema_json,
        .capabilities = WB_CAP_HTTP_INGEST};
}

void sms_connector::handle(request_handle& req, const http_request_view& r,
                           const settings& effective, std::shared_ptr<in_flight::ticket> ticket) {
    const std::string sub_id(r.subscription_id);
    if (r.method != "POST") {
        return respond_error(req, 405, "method_not_allowed",
                             "configure the webhook with HTTP POST");
    }

    const std::string_view content_type = r.header("content-type").value_or("");
    const std::string_view signature = r.header("x-twilio-signature").value_or("");
    if (signature.empty()) {
        host_.log(log_level::warn,
                  "sms: request refused for subscription " + sub_id + ": signature missing_header");
        return respond_error(req, 403, "signature_invalid",
                             verdict_message(sig::verdict::missing_header));
    }
    // The form signature covers the decoded parameters, so those are read first (their count
    // bounded before any is built); the event's fields only once the signature holds.
    std::string error;
    bool too_many_fields = false;
    auto parsed = read_signed_part(content_type, r.body, error, too_many_fields);
    if (!parsed) {
        host_.log(log_level::warn,
                  "sms: malformed request for subscription " + sub_id + ": " + error);
        return too_many_fields ? respond_error(req, 413, "payload_too_large", error)
                               : respond_error(req, 400, "malformed_request", error);
    }
    const std::string url = signed_url(effective, r.public_url, r.target);
    const auto verdict = verify_request(effective, *parsed, url, r.body, signature);
    if (verdict != sig::verdict::valid) {
        // Twilio signs the URL it called: behind a TLS proxy the wrong one is the usual cause.
        host_.log(log_level::warn, "sms: request refused for subscription " + sub_id +
                                       ": signature " + std::string(sig::to_string(verdict)) +
                                       " checked against the URL " + url.substr(0, url.find('?')) +
                                       " (not the one Twilio called? set the connector's publicUrl, "
                                       "server.publicUrl or server.trustedProxies)");
        return respond_error(req, 403, "signature_invalid", verdict_message(verdict));
    }
    if (!complete_request(*parsed, r.body, error)) {
        host_.log(log_level::warn,
                  "sms: malformed request for subscription " + sub_id + ": " + error);
        return respond_error(req, 400, "malformed_request", error);
    }

    if (parsed->status_callback && effective.status_callbacks == status_callback_policy::ignore) {
        host_.log(log_level::debug, "sms: status callback acknowledged without delivery");
        req.respond(200, {{"content-type", std::string(twiml_type)}}, twiml_response(std::nullopt));
        return;
    }

    inbound_event event;
    event.subscription_id = sub_id;
    event.provider_event_id = parsed->provider_event_id;
    event.received_at_ms = r.received_at_ms > 0 ? r.received_at_ms : host_.now_ms();
    event.verified = true;
    event.content_json = content_json(*parsed, content_type);

    // Never an auto-reply to a status callback. A duplicate is a provider retry whose first answer
    // may have been lost, so it gets the same TwiML (auto-reply included) as the original.
    std::string twiml =
        twiml_response(parsed->status_callback ? std::nullopt : effective.auto_reply);
    submit_then_answer(
        req, event, std::move(ticket), "sms",
        [twiml = std::move(twiml)](request_handle& committed) {
            committed.respond(200, {{"content-type", std::string(twiml_type)}}, twiml);
        });
}

} // namespace wopbridge::sms
