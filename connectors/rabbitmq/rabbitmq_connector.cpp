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

#include "wopbridge/broker_listener.hpp"

#include <memory>
#include <optional>
#include <stdexcept>

namespace {

using namespace wopbridge::rabbitmq;

class rabbitmq_connector final
    : public wopbridge::broker_listener<consumer_worker, subscription_settings> {
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

    rabbitmq_connector(wopbridge::host& host, std::string_view config) : broker_listener(host) {
        std::string error;
        auto s = parse_connector_settings(config, error);
        if (!s || !check_tls_files(*s, error)) {
            throw std::invalid_argument(error);
        }
        settings_ = std::move(*s);
    }

  protected:
    std::optional<subscription_settings> parse_subscription(std::string_view settings_json,
                                                            std::string& error) override {
        return parse_subscription_settings(settings_json, error);
    }

    std::string conflict(const subscription_settings& existing, const std::string& existing_id,
                         const subscription_settings& wanted) const override {
        if (existing.queue != wanted.queue) {
            return {};
        }
        return "subscription settings: queue '" + wanted.queue +
               "' is already consumed by subscription '" + existing_id + "'";
    }

    std::shared_ptr<consumer_worker> start_worker(const std::string& id,
                                                  const subscription_settings& s,
                                                  std::string& error) override {
        // The worker connects on its own thread: a broker that is down does not hold start().
        auto w = std::make_shared<consumer_worker>(host_, settings_, id, s);
        w->start();
        return w;
    }

  private:
    connector_settings settings_;
};

} // namespace

// The module's one exported symbol; a listener has no HTTP routes.
WOPBRIDGE_LISTENER_CONNECTOR(rabbitmq_connector)
