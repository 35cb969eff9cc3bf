// rabbitmq: RabbitMQ (AMQP 0-9-1) queues as trigger subscriptions (source "queue").
//
// Each subscription names a queue; the connector consumes it through the official C client
// (rabbitmq-c) with basic.qos(prefetch), submits one event per message (provider event id
// "<queue>:id:<message_id>", so the host dedups by the publisher's identity of the message) and
// acks only after the host committed or recognised it. Several bridges on one queue are
// competing consumers: each message goes to one of them, and the broker requeues what a dead one
// left unacked. README.md.
#include "rabbitmq/amqp_link.hpp"
#include "rabbitmq/consumer_worker.hpp"
#include "rabbitmq/settings.hpp"

#include "wopbridge/connector.hpp"

#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>

namespace {

using namespace wopbridge::rabbitmq;

class rabbitmq_connector final : public wopbridge::connector {
  public:
    static wopbridge::connector_info info() {
        wopbridge::connector_info i;
        i.name = "rabbitmq";
        i.version = "0.1.0";
        i.status = "alpha";
        i.security_posture =
            "trusts the RabbitMQ broker it is configured with (user/password over PLAIN; TLS "
            "with a CA and client certificate when configured); messages are submitted "
            "unverified: anyone who can publish to a subscribed queue can trigger runs";
        i.source = "queue";
        i.config_schema_json = connector_schema_json;
        i.subscription_schema_json = subscription_schema_json;
        i.capabilities = WB_CAP_LISTENER;
        return i;
    }

    static wopbridge::status validate(std::string_view config, std::string& error) {
        auto s = parse_connector_settings(config, error);
        return s && check_tls_files(*s, error) ? wopbridge::status::ok : wopbridge::status::invalid;
    }

    rabbitmq_connector(wopbridge::host& host, std::string_view config) : host_(host) {
        std::string error;
        auto s = parse_connector_settings(config, error);
        if (!s || !check_tls_files(*s, error)) {
            throw std::invalid_argument(error);
        }
        settings_ = std::move(*s);
    }

    ~rabbitmq_connector() override { stop_all(std::chrono::steady_clock::now()); }

    wopbridge::status start() override {
        // Each worker connects on its own thread: a broker that is down does not hold start().
        std::lock_guard lock(mu_);
        started_ = true;
        for (auto& [id, w] : workers_) {
            w->start();
        }
        return wopbridge::status::ok;
    }

    wopbridge::status subscribe(const wopbridge::subscription_info& sub,
                                std::string& error) override {
        auto s = parse_subscription_settings(sub.settings_json, error);
        if (!s) {
            return wopbridge::status::invalid;
        }
        const std::string id(sub.id);
        std::shared_ptr<consumer_worker> old;
        {
            std::lock_guard lock(mu_);
            for (const auto& [other, w] : workers_) {
                if (other != id && w->subscription().queue == s->queue) {
                    error = "subscription settings: queue '" + s->queue +
                            "' is already consumed by subscription '" + other + "'";
                    return wopbridge::status::invalid;
                }
            }
            if (auto it = workers_.find(id); it != workers_.end()) {
                if (it->second->subscription() == *s) {
                    return wopbridge::status::ok; // nothing changed
                }
                old = std::move(it->second);
                workers_.erase(it);
            }
        }
        if (old) {
            old->stop(std::chrono::steady_clock::now() + update_grace);
        }
        std::lock_guard lock(mu_);
        auto w = std::make_shared<consumer_worker>(host_, settings_, id, std::move(*s));
        if (started_ && !stopped_) {
            w->start();
        }
        workers_[id] = std::move(w);
        return wopbridge::status::ok;
    }

    wopbridge::status unsubscribe(std::string_view id) override {
        std::shared_ptr<consumer_worker> w;
        {
            std::lock_guard lock(mu_);
            auto it = workers_.find(std::string(id));
            if (it == workers_.end()) {
                return wopbridge::status::ok;
            }
            w = std::move(it->second);
            workers_.erase(it);
        }
        w->stop(std::chrono::steady_clock::now() + update_grace);
        return wopbridge::status::ok;
    }

    wopbridge::status stop(std::int64_t deadline_ms) override {
        const auto left = std::max<std::int64_t>(0, deadline_ms - host_.now_ms());
        stop_all(std::chrono::steady_clock::now() + std::chrono::milliseconds(left));
        return wopbridge::status::ok;
    }

  private:
    static constexpr auto update_grace = std::chrono::seconds(2);

    void stop_all(std::chrono::steady_clock::time_point deadline) {
        std::map<std::string, std::shared_ptr<consumer_worker>> workers;
        {
            std::lock_guard lock(mu_);
            if (stopped_) {
                return;
            }
            stopped_ = true;
            workers = workers_;
        }
        for (auto& [id, w] : workers) {
            w->stop(deadline);
        }
    }

    wopbridge::host& host_;
    connector_settings settings_;
    std::mutex mu_;
    bool started_ = false;
    bool stopped_ = false;
    std::map<std::string, std::shared_ptr<consumer_worker>> workers_;
};

} // namespace

// The module's one exported symbol; a listener has no HTTP routes, so on_http_request is NULL
// (the ABI allows it without WB_CAP_HTTP_INGEST).
extern "C" WOPBRIDGE_EXPORT const wb_connector_descriptor* wopbridge_connector_entry_v1(void) {
    static const wb_connector_descriptor* const descriptor =
        []() noexcept -> const wb_connector_descriptor* {
        const wb_connector_descriptor* base =
            wopbridge::detail::descriptor_for<rabbitmq_connector>();
        if (base == nullptr) {
            return nullptr;
        }
        static wb_connector_descriptor listener = *base;
        listener.on_http_request = nullptr;
        return &listener;
    }();
    return descriptor;
}
