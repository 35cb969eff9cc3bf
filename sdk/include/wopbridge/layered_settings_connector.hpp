#pragma once
// A base for webhook connectors whose settings are a connector-wide object with per-subscription
// overrides layered on top (header-only, needs Boost.JSON through json_reply.hpp). It keeps the
// subscriptions' effective settings, admits requests until stop() and waits for their answers;
// the connector only handles one admitted request for a known subscription.
//
//   Settings                                   the effective settings of one subscription
//   parse(config, error) -> optional<Settings>  the connector-wide settings
//   layer(base, json, error) -> optional<Settings>  a subscription's settings over them

#include <wopbridge/connector.hpp>
#include <wopbridge/in_flight.hpp>
#include <wopbridge/json_reply.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace wopbridge {

template <class Settings, auto parse, auto layer>
class layered_settings_connector : public connector {
  public:
    static status validate(std::string_view config, std::string& error) {
        return parse(config, error) ? status::ok : status::invalid;
    }

    // Throws std::invalid_argument (a one-line reason, never a secret) on bad settings.
    layered_settings_connector(host& h, std::string_view config)
        : host_(h), base_(parse_or_throw(config)) {}

    status subscribe(const subscription_info& sub, std::string& error) override {
        auto effective = layer(base_, sub.settings_json, error);
        if (!effective) {
            return status::invalid;
        }
        auto shared = std::make_shared<const Settings>(std::move(*effective));
        std::unique_lock lock(subs_mu_);
        subs_[std::string(sub.id)] = std::move(shared);
        return status::ok;
    }

    status unsubscribe(std::string_view id) override {
        std::unique_lock lock(subs_mu_);
        subs_.erase(std::string(id));
        return status::ok;
    }

    void on_http_request(request_handle req, const http_request_view& r) override {
        auto ticket = in_flight_.enter();
        if (!ticket) {
            respond_error(req, 503, "shutting_down", "the connector is stopping", 1);
            return;
        }
        // An exception escaping here leaves `req` unanswered: the wrapper's handle answers 500.
        const auto effective = settings_for(r.subscription_id);
        if (!effective) {
            return respond_error(req, 404, "not_found", "no such subscription on this connector");
        }
        handle(req, r, *effective, std::move(ticket));
    }

    status stop(std::int64_t deadline_ms) override {
        // The host clock may be a test clock: turn the deadline into a wait budget once.
        in_flight_.close_and_wait(std::chrono::milliseconds(deadline_ms - host_.now_ms()));
        return status::ok;
    }

  protected:
    // One admitted request for a subscribed id; `ticket` is held until the request is answered.
    virtual void handle(request_handle& req, const http_request_view& r, const Settings& effective,
                        std::shared_ptr<in_flight::ticket> ticket) = 0;

    // Submits `event` and answers `req` once the host has decided: a committed outcome (accepted,
    // a duplicate such as a provider retry, or held) with answer_committed(req), a refusal with an
    // error envelope. The ticket is held until then.
    template <class AnswerCommitted>
    void submit_then_answer(request_handle& req, const inbound_event& event,
                            std::shared_ptr<in_flight::ticket> ticket,
                            std::string_view connector_name, AnswerCommitted answer_committed) {
        // The handle moves into the completion: the provider is answered after the outcome only.
        auto pending = std::make_shared<request_handle>(std::move(req));
        const status st =
            host_.submit(event, [pending, ticket, answer_committed = std::move(answer_committed)](
                                    const submit_outcome& outcome) {
                if (outcome.kind != outcome_kind::refused) {
                    answer_committed(*pending);
                    return;
                }
                const auto refusal = refusal_reply(outcome, refusal_words);
                respond_error(*pending, refusal.status, refusal.code, refusal.message,
                              refusal.retry_after_seconds);
            });
        if (st != status::ok) {
            host_.log(log_level::warn, std::string(connector_name) +
                                           ": the host did not take the event for subscription " +
                                           event.subscription_id);
            if (st == status::invalid) {
                // The host refused the content itself: the provider must not retry it.
                respond_error(*pending, 400, "validation_error",
                              "the bridge refused the event content as malformed", 0);
                return;
            }
            respond_error(*pending, 503, "unavailable", "the bridge cannot take the event now", 1);
        }
    }

    host& host_;

  private:
    // Worded for a provider that retries on 503 and gives up on anything else.
    static constexpr refusal_wording refusal_words{
        .not_active = "the subscription is not active",
        .not_found = "no such subscription",
        .invalid = "the bridge refused the event as invalid",
        .unavailable = "the bridge cannot commit the event now; retry later"};

    static Settings parse_or_throw(std::string_view config) {
        std::string error;
        auto parsed = parse(config, error);
        if (!parsed) {
            throw std::invalid_argument(error);
        }
        return std::move(*parsed);
    }

    std::shared_ptr<const Settings> settings_for(std::string_view subscription_id) {
        std::shared_lock lock(subs_mu_);
        auto it = subs_.find(std::string(subscription_id));
        return it == subs_.end() ? nullptr : it->second;
    }

    const Settings base_;
    std::shared_mutex subs_mu_;
    std::unordered_map<std::string, std::shared_ptr<const Settings>> subs_;
    in_flight in_flight_;
};

} // namespace wopbridge
