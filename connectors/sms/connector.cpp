#include "sms/connector.hpp"

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include <chrono>
#include <exception>
#include <vector>

namespace wopbridge::sms {
namespace {

std::string_view view(wb_str s) {
    return s.size == 0 ? std::string_view{} : std::string_view(s.data, s.size);
}

wb_str as_wb(std::string_view s) {
    return wb_str{s.data(), s.size()};
}

std::string_view header(const wb_http_request& r, std::string_view name) {
    for (std::size_t i = 0; i < r.header_count; ++i) {
        if (view(r.headers[i].name) == name) {
            return view(r.headers[i].value);
        }
    }
    return {};
}

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

constexpr std::string_view twiml_type = "text/xml";

} // namespace

struct connector::submit_context {
    connector* self;
    wb_request_ctx* ctx;
    std::string twiml; // the answer once the event is committed (or a duplicate)
};

connector::connector(const wb_host_api* api, wb_host* host, settings base)
    : api_(api), host_(host), base_(std::move(base)) {}

wb_status connector::subscribe(const wb_subscription& sub, std::string& error) {
    auto effective = apply_subscription_settings(base_, view(sub.settings_json), error);
    if (!effective) {
        return WB_ERR_INVALID;
    }
    auto shared = std::make_shared<const settings>(std::move(*effective));
    std::unique_lock lock(subs_mu_);
    subs_[std::string(view(sub.id))] = std::move(shared);
    return WB_OK;
}

void connector::unsubscribe(std::string_view id) {
    std::unique_lock lock(subs_mu_);
    subs_.erase(std::string(id));
}

void connector::log(wb_log_level level, std::string_view message) {
    if (api_->log != nullptr) {
        api_->log(host_, level, as_wb(message));
    }
}

void connector::respond(wb_request_ctx* ctx, int status, std::string_view content_type,
                        std::string_view body, int retry_after_seconds) {
    std::vector<wb_header> headers;
    const std::string retry_after = std::to_string(retry_after_seconds);
    if (!content_type.empty()) {
        headers.push_back({as_wb("content-type"), as_wb(content_type)});
    }
    if (retry_after_seconds > 0) {
        headers.push_back({as_wb("retry-after"), as_wb(retry_after)});
    }
    wb_http_response response{};
    response.struct_size = sizeof(wb_http_response);
    response.status = status;
    response.headers = headers.data();
    response.header_count = headers.size();
    response.body = as_wb(body);
    api_->respond(host_, ctx, &response);
}

void connector::respond_error(wb_request_ctx* ctx, int status, std::string_view code,
                              std::string_view message, int retry_after_seconds) {
    boost::json::object envelope;
    envelope["error"] = code;
    envelope["message"] = message;
    respond(ctx, status, "application/json", boost::json::serialize(envelope),
            retry_after_seconds);
}

void connector::on_http_request(wb_request_ctx* ctx, const wb_http_request& request) {
    {
        std::lock_guard lock(flight_mu_);
        if (stopping_) {
            respond_error(ctx, 503, "shutting_down", "the connector is stopping", 1);
            return;
        }
        ++in_flight_;
    }
    bool handed_off = false;
    try {
        handle(ctx, request);
        handed_off = true;
    } catch (...) {
        log(WB_LOG_ERROR, "sms: internal error while handling a request");
    }
    if (!handed_off) {
        // handle() throws only before it submits or responds (allocation, JSON building).
        respond_error(ctx, 500, "internal", "the connector failed to handle the request");
        finish_one();
    }
}

void connector::handle(wb_request_ctx* ctx, const wb_http_request& request) {
    const std::string sub_id(view(request.subscription_id));
    std::shared_ptr<const settings> effective;
    {
        std::shared_lock lock(subs_mu_);
        if (auto it = subs_.find(sub_id); it != subs_.end()) {
            effective = it->second;
        }
    }
    auto done_now = [&](int status, std::string_view code, std::string_view message) {
        respond_error(ctx, status, code, message);
        finish_one();
    };
    if (!effective) {
        return done_now(404, "not_found", "no such subscription on this connector");
    }
    if (view(request.method) != "POST") {
        return done_now(405, "method_not_allowed", "configure the webhook with HTTP POST");
    }

    const std::string_view body = view(request.body);
    const std::string_view content_type = header(request, "content-type");
    const std::string_view signature = header(request, "x-twilio-signature");
    if (signature.empty()) {
        log(WB_LOG_WARN, "sms: request refused for subscription " + sub_id + ": signature " +
                             std::string(sig::to_string(sig::verdict::missing_header)));
        return done_now(403, "signature_invalid", verdict_message(sig::verdict::missing_header));
    }
    std::string error;
    // Parsing precedes verification because the form signature covers the decoded parameters;
    // nothing parsed is used before the verdict.
    auto parsed = parse_request(content_type, body, error);
    if (!parsed) {
        log(WB_LOG_WARN, "sms: malformed request for subscription " + sub_id + ": " + error);
        return done_now(400, "malformed_request", error);
    }
    const std::string url =
        signed_url(*effective, view(request.public_url), view(request.target));
    const auto verdict = verify_request(*effective, *parsed, url, body, signature);
    if (verdict != sig::verdict::valid) {
        log(WB_LOG_WARN, "sms: request refused for subscription " + sub_id + ": signature " +
                             std::string(sig::to_string(verdict)));
        return done_now(403, "signature_invalid", verdict_message(verdict));
    }

    if (parsed->status_callback &&
        effective->status_callbacks == status_callback_policy::ignore) {
        log(WB_LOG_DEBUG, "sms: status callback acknowledged without delivery");
        respond(ctx, 200, twiml_type, twiml_response(std::nullopt));
        finish_one();
        return;
    }

    const std::string content = content_json(*parsed, content_type);
    const std::int64_t now_ms =
        request.received_at_ms > 0 ? request.received_at_ms : api_->now_ms(host_);
    wb_inbound_event event{};
    event.struct_size = sizeof(wb_inbound_event);
    event.subscription_id = as_wb(sub_id);
    event.provider_event_id = as_wb(parsed->provider_event_id);
    event.received_at_ms = now_ms;
    event.verified = 1;
    event.content_json = as_wb(content);

    auto pending = std::make_unique<submit_context>(submit_context{
        this, ctx,
        twiml_response(parsed->status_callback ? std::nullopt : effective->auto_reply)});
    const wb_status st = api_->submit(host_, &event, &connector::on_submit_done, pending.get());
    if (st != WB_OK) {
        log(WB_LOG_WARN, "sms: the host did not take the event for subscription " + sub_id);
        respond_error(ctx, 503, "unavailable", "the bridge cannot take the event now", 1);
        finish_one();
        return;
    }
    pending.release(); // owned by on_submit_done now
}

void connector::on_submit_done(void* user, const wb_submit_outcome* outcome) {
    std::unique_ptr<submit_context> pending(static_cast<submit_context*>(user));
    connector& self = *pending->self;
    wb_request_ctx* ctx = pending->ctx;
    try {
        if (outcome == nullptr) {
            self.respond_error(ctx, 500, "internal", "no submit outcome");
        } else if (outcome->status != WB_SUBMIT_REFUSED) {
            // Accepted, duplicate (a provider retry: the first answer may have been lost, so the
            // auto-reply is repeated) or held.
            self.respond(ctx, 200, twiml_type, pending->twiml);
        } else {
            const std::string_view reason = view(outcome->reason);
            if (reason == "subscription_not_active") {
                self.respond_error(ctx, 409, "subscription_not_active",
                                   "the subscription is not active");
            } else if (reason == "not_found") {
                self.respond_error(ctx, 404, "not_found", "no such subscription");
            } else if (reason == "invalid") {
                self.respond_error(ctx, 400, "invalid", "the bridge refused the event as invalid");
            } else {
                const int retry_after = outcome->retry_after_seconds > 0
                                            ? outcome->retry_after_seconds
                                            : 1;
                self.respond_error(ctx, 503,
                                   reason == "store_unavailable" ? "store_unavailable"
                                                                 : "overloaded",
                                   "the bridge cannot commit the event now; retry later",
                                   retry_after);
            }
        }
    } catch (...) {
        self.log(WB_LOG_ERROR, "sms: internal error while answering a request");
    }
    self.finish_one();
}

void connector::finish_one() {
    std::lock_guard lock(flight_mu_);
    --in_flight_;
    flight_cv_.notify_all();
}

void connector::stop(std::int64_t deadline_ms) {
    std::unique_lock lock(flight_mu_);
    stopping_ = true;
    // The host clock may be a test clock: turn the deadline into a wait budget once.
    const std::int64_t budget = std::max<std::int64_t>(0, deadline_ms - api_->now_ms(host_));
    flight_cv_.wait_for(lock, std::chrono::milliseconds(budget), [&] { return in_flight_ == 0; });
}

} // namespace wopbridge::sms
