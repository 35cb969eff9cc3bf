#include "sms/sms_connector.hpp"

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include <stdexcept>

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

void respond_error(request_handle& req, int status, std::string_view code, std::string_view message,
                   int retry_after_seconds = 0) {
    boost::json::object envelope;
    envelope["error"] = code;
    envelope["message"] = message;
    header_list headers{{"content-type", "application/json"}};
    if (retry_after_seconds > 0) {
        headers.emplace_back("retry-after", std::to_string(retry_after_seconds));
    }
    req.respond(status, headers, boost::json::serialize(envelope));
}

// The answer once the host has decided. A duplicate is a provider retry whose first answer may
// have been lost, so it gets the same TwiML (auto-reply included) as the original.
void answer(request_handle& req, const submit_outcome& outcome, const std::string& twiml) {
    if (outcome.kind != outcome_kind::refused) {
        req.respond(200, {{"content-type", std::string(twiml_type)}}, twiml);
    } else if (outcome.reason == "subscription_not_active") {
        respond_error(req, 409, "subscription_not_active", "the subscription is not active");
    } else if (outcome.reason == "not_found") {
        respond_error(req, 404, "not_found", "no such subscription");
    } else if (outcome.reason == "invalid") {
        respond_error(req, 400, "invalid", "the bridge refused the event as invalid");
    } else {
        respond_error(req, 503,
                      outcome.reason == "store_unavailable" ? "store_unavailable" : "overloaded",
                      "the bridge cannot commit the event now; retry later",
                      outcome.retry_after_seconds > 0 ? outcome.retry_after_seconds : 1);
    }
}

settings parse_or_throw(std::string_view config) {
    std::string error;
    auto parsed = parse_connector_settings(config, error);
    if (!parsed) {
        throw std::invalid_argument(error);
    }
    return std::move(*parsed);
}

} // namespace

connector_info sms_connector::info() {
    connector_info i;
    i.name = "sms";
    i.version = "0.1.0";
    i.status = "alpha";
    i.security_posture =
        "Verifies X-Twilio-Signature (HMAC-SHA1 over the signed URL and sorted POST parameters, or "
        "the URL with bodySHA256 for JSON) with any configured token; no timestamp exists, so "
        "MessageSid dedup is the replay guard.";
    i.source = "webhook";
    i.config_schema_json = config_schema_json;
    i.subscription_schema_json = subscription_schema_json;
    i.capabilities = WB_CAP_HTTP_INGEST;
    return i;
}

status sms_connector::validate(std::string_view config, std::string& error) {
    return parse_connector_settings(config, error) ? status::ok : status::invalid;
}

sms_connector::sms_connector(wopbridge::host& host, std::string_view config)
    : host_(host), base_(parse_or_throw(config)) {}

status sms_connector::subscribe(const subscription_info& sub, std::string& error) {
    auto effective = apply_subscription_settings(base_, sub.settings_json, error);
    if (!effective) {
        return status::invalid;
    }
    auto shared = std::make_shared<const settings>(std::move(*effective));
    std::unique_lock lock(subs_mu_);
    subs_[std::string(sub.id)] = std::move(shared);
    return status::ok;
}

status sms_connector::unsubscribe(std::string_view id) {
    std::unique_lock lock(subs_mu_);
    subs_.erase(std::string(id));
    return status::ok;
}

std::shared_ptr<const settings> sms_connector::settings_for(std::string_view subscription_id) {
    std::shared_lock lock(subs_mu_);
    auto it = subs_.find(std::string(subscription_id));
    return it == subs_.end() ? nullptr : it->second;
}

void sms_connector::on_http_request(request_handle req, const http_request_view& r) {
    auto ticket = in_flight_.enter();
    if (!ticket) {
        respond_error(req, 503, "shutting_down", "the connector is stopping", 1);
        return;
    }
    // An exception escaping here leaves `req` unanswered: the wrapper's handle answers 500.
    handle(req, r, std::move(ticket));
}

void sms_connector::handle(request_handle& req, const http_request_view& r,
                           std::shared_ptr<in_flight::ticket> ticket) {
    const std::string sub_id(r.subscription_id);
    const auto effective = settings_for(sub_id);
    if (!effective) {
        return respond_error(req, 404, "not_found", "no such subscription on this connector");
    }
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
    // The form signature covers the decoded parameters, so parsing comes first; nothing parsed is
    // used before the verdict.
    std::string error;
    auto parsed = parse_request(content_type, r.body, error);
    if (!parsed) {
        host_.log(log_level::warn,
                  "sms: malformed request for subscription " + sub_id + ": " + error);
        return respond_error(req, 400, "malformed_request", error);
    }
    const std::string url = signed_url(*effective, r.public_url, r.target);
    const auto verdict = verify_request(*effective, *parsed, url, r.body, signature);
    if (verdict != sig::verdict::valid) {
        host_.log(log_level::warn, "sms: request refused for subscription " + sub_id +
                                       ": signature " + std::string(sig::to_string(verdict)));
        return respond_error(req, 403, "signature_invalid", verdict_message(verdict));
    }

    if (parsed->status_callback && effective->status_callbacks == status_callback_policy::ignore) {
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

    // Never an auto-reply to a status callback.
    std::string twiml =
        twiml_response(parsed->status_callback ? std::nullopt : effective->auto_reply);
    auto pending = std::make_shared<request_handle>(std::move(req));
    const status st = host_.submit(
        event, [pending, ticket, twiml = std::move(twiml)](const submit_outcome& outcome) {
            answer(*pending, outcome, twiml);
        });
    if (st != status::ok) {
        host_.log(log_level::warn,
                  "sms: the host did not take the event for subscription " + sub_id);
        if (st == status::invalid) {
            // The host refused the content itself: Twilio must not retry it.
            respond_error(*pending, 400, "validation_error",
                          "the bridge refused the event content as malformed", 0);
            return;
        }
        respond_error(*pending, 503, "unavailable", "the bridge cannot take the event now", 1);
    }
}

status sms_connector::stop(std::int64_t deadline_ms) {
    // The host clock may be a test clock: turn the deadline into a wait budget once.
    in_flight_.close_and_wait(std::chrono::milliseconds(deadline_ms - host_.now_ms()));
    return status::ok;
}

} // namespace wopbridge::sms
