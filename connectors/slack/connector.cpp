#include "slack/connector.hpp"

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include <chrono>
#include <exception>
#include <vector>

namespace wopbridge::slack {
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

struct connector::submit_context {
    connector* self;
    wb_request_ctx* ctx;
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
    } catch (const std::exception&) {
        log(WB_LOG_ERROR, "slack: internal error while handling a request");
    } catch (...) {
        log(WB_LOG_ERROR, "slack: internal error while handling a request");
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
        return done_now(405, "method_not_allowed", "Slack requests are POSTs");
    }

    const std::string_view body = view(request.body);
    const std::int64_t now_ms =
        request.received_at_ms > 0 ? request.received_at_ms : api_->now_ms(host_);
    const auto verdict =
        verify_request(*effective, header(request, "x-slack-request-timestamp"),
                       header(request, "x-slack-signature"), body, now_ms / 1000);
    if (verdict != sig::verdict::valid) {
        log(WB_LOG_WARN, "slack: request refused for subscription " + sub_id + ": signature " +
                             std::string(sig::to_string(verdict)));
        return done_now(401, "signature_invalid", verdict_message(verdict));
    }

    std::string error;
    auto parsed = parse_request(header(request, "content-type"), body, error);
    if (!parsed) {
        log(WB_LOG_WARN, "slack: malformed request for subscription " + sub_id + ": " + error);
        return done_now(400, "malformed_request", error);
    }
    switch (parsed->kind) {
    case request_kind::url_verification: {
        boost::json::object answer;
        answer["challenge"] = parsed->challenge;
        respond(ctx, 200, "application/json", boost::json::serialize(answer));
        finish_one();
        return;
    }
    case request_kind::ignored:
        log(WB_LOG_INFO, "slack: acknowledged without delivery (" + parsed->ignored_reason + ")");
        respond(ctx, 200, {}, {});
        finish_one();
        return;
    default:
        break;
    }
    if (!passes_filters(*effective, *parsed)) {
        log(WB_LOG_DEBUG, "slack: filtered out for subscription " + sub_id);
        respond(ctx, 200, {}, {});
        finish_one();
        return;
    }

    std::vector<std::pair<std::string, std::string>> headers;
    for (std::size_t i = 0; i < request.header_count; ++i) {
        headers.emplace_back(view(request.headers[i].name), view(request.headers[i].value));
    }
    const std::string content = content_json(*parsed, headers);

    wb_inbound_event event{};
    event.struct_size = sizeof(wb_inbound_event);
    event.subscription_id = as_wb(sub_id);
    event.provider_event_id = as_wb(parsed->provider_event_id);
    event.received_at_ms = now_ms;
    event.verified = 1;
    event.content_json = as_wb(content);

    auto* pending = new submit_context{this, ctx};
    const wb_status st = api_->submit(host_, &event, &connector::on_submit_done, pending);
    if (st != WB_OK) {
        delete pending;
        log(WB_LOG_WARN, "slack: the host did not take the event for subscription " + sub_id);
        respond_error(ctx, 503, "unavailable", "the bridge cannot take the event now", 1);
        finish_one();
    }
}

void connector::on_submit_done(void* user, const wb_submit_outcome* outcome) {
    std::unique_ptr<submit_context> pending(static_cast<submit_context*>(user));
    connector& self = *pending->self;
    wb_request_ctx* ctx = pending->ctx;
    try {
        if (outcome == nullptr) {
            self.respond_error(ctx, 500, "internal", "no submit outcome");
        } else if (outcome->status != WB_SUBMIT_REFUSED) {
            // Accepted, duplicate (a Slack retry of a committed event) or held: Slack must stop.
            self.respond(ctx, 200, {}, {});
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
        self.log(WB_LOG_ERROR, "slack: internal error while answering a request");
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

} // namespace wopbridge::slack
