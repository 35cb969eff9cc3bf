#include "slack/slack_connector.hpp"

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include <stdexcept>

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

// The answer once the host has decided: 200 for anything committed (accepted, a duplicate of a
// committed event such as a Slack retry, or held), an envelope for refusals.
void answer(request_handle& req, const submit_outcome& outcome) {
    if (outcome.kind != outcome_kind::refused) {
        req.respond(200);
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

} // namespace

connector_info slack_connector::info() {
    connector_info i;
    i.name = "slack";
    i.version = "0.1.0";
    i.status = "alpha";
    i.security_posture =
        "Verifies X-Slack-Signature (v0 HMAC-SHA256 over the raw body with any configured secret, "
        "timestamp within toleranceSeconds past or future); nothing unsigned is trusted.";
    i.source = "webhook";
    i.config_schema_json = config_schema_json;
    i.subscription_schema_json = subscription_schema_json;
    i.capabilities = WB_CAP_HTTP_INGEST;
    return i;
}

status slack_connector::validate(std::string_view config, std::string& error) {
    return parse_connector_settings(config, error) ? status::ok : status::invalid;
}

namespace {
settings parse_or_throw(std::string_view config) {
    std::string error;
    auto parsed = parse_connector_settings(config, error);
    if (!parsed) {
        throw std::invalid_argument(error);
    }
    return std::move(*parsed);
}
} // namespace

slack_connector::slack_connector(wopbridge::host& host, std::string_view config)
    : host_(host), base_(parse_or_throw(config)) {}

status slack_connector::subscribe(const subscription_info& sub, std::string& error) {
    auto effective = apply_subscription_settings(base_, sub.settings_json, error);
    if (!effective) {
        return status::invalid;
    }
    auto shared = std::make_shared<const settings>(std::move(*effective));
    std::unique_lock lock(subs_mu_);
    subs_[std::string(sub.id)] = std::move(shared);
    return status::ok;
}

status slack_connector::unsubscribe(std::string_view id) {
    std::unique_lock lock(subs_mu_);
    subs_.erase(std::string(id));
    return status::ok;
}

std::shared_ptr<const settings> slack_connector::settings_for(std::string_view subscription_id) {
    std::shared_lock lock(subs_mu_);
    auto it = subs_.find(std::string(subscription_id));
    return it == subs_.end() ? nullptr : it->second;
}

void slack_connector::on_http_request(request_handle req, const http_request_view& r) {
    auto ticket = in_flight_.enter();
    if (!ticket) {
        respond_error(req, 503, "shutting_down", "the connector is stopping", 1);
        return;
    }
    // An exception escaping here leaves `req` unanswered: the wrapper's handle answers 500.
    handle(req, r, std::move(ticket));
}

void slack_connector::handle(request_handle& req, const http_request_view& r,
                             std::shared_ptr<in_flight::ticket> ticket) {
    const std::string sub_id(r.subscription_id);
    const auto effective = settings_for(sub_id);
    if (!effective) {
        return respond_error(req, 404, "not_found", "no such subscription on this connector");
    }
    if (r.method != "POST") {
        return respond_error(req, 405, "method_not_allowed", "Slack requests are POSTs");
    }

    const std::int64_t now_ms = r.received_at_ms > 0 ? r.received_at_ms : host_.now_ms();
    const auto verdict =
        verify_request(*effective, r.header("x-slack-request-timestamp").value_or(""),
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
    if (!passes_filters(*effective, *parsed)) {
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

    // The handle moves into the completion: Slack is answered only after the host's outcome.
    auto pending = std::make_shared<request_handle>(std::move(req));
    const status st = host_.submit(
        event, [pending, ticket](const submit_outcome& outcome) { answer(*pending, outcome); });
    if (st != status::ok) {
        host_.log(log_level::warn,
                  "slack: the host did not take the event for subscription " + sub_id);
        if (st == status::invalid) {
            // The host refused the content itself: Slack must not retry it.
            respond_error(*pending, 400, "validation_error",
                          "the bridge refused the event content as malformed", 0);
            return;
        }
        respond_error(*pending, 503, "unavailable", "the bridge cannot take the event now", 1);
    }
}

status slack_connector::stop(std::int64_t deadline_ms) {
    // The host clock may be a test clock: turn the deadline into a wait budget once.
    in_flight_.close_and_wait(std::chrono::milliseconds(deadline_ms - host_.now_ms()));
    return status::ok;
}

} // namespace wopbridge::slack
