// nats: NATS JetStream durable pull consumers as trigger subscriptions (source "queue").
//
// Each subscription names a stream and a durable consumer; the connector fetches from it through
// the official C client (nats.c), submits one event per message (provider event id
// "<stream>:<stream sequence>", so the host dedups by the message's identity in its stream) and
// acks only after the host committed or recognised it. Several bridges share one durable: each
// message goes to one of them, and JetStream redelivers what a dead one left unacked. README.md.
#include "nats/consumer_worker.hpp"
#include "nats/nats_link.hpp"
#include "nats/settings.hpp"

#include "wopbridge/broker_listener.hpp"

#include <memory>
#include <optional>
#include <stdexcept>

namespace {

using namespace wopbridge::nats;

class nats_connector final
    : public wopbridge::broker_listener<consumer_worker, subscription_settings> {
  public:
    static wopbridge::connector_info info() {
        wopbridge::connector_info i;
        i.name = "nats";
        i.version = "0.1.0";
        i.status = "alpha";
        i.security_posture =
            "trusts the NATS servers it is configured with (user/password, token, creds file or "
            "nkey; TLS with a CA and client certificate when configured); messages are submitted "
            "unverified: anyone who can publish to a subscribed stream can trigger runs";
        i.source = "queue";
        i.config_schema_json = connector_schema_json;
        i.subscription_schema_json = subscription_schema_json;
        i.capabilities = WB_CAP_LISTENER;
        return i;
    }

    static wopbridge::status validate(std::string_view config, std::string& error) {
        return parse_connector_settings(config, error) ? wopbridge::status::ok
                                                       : wopbridge::status::invalid;
    }

    nats_connector(wopbridge::host& host, std::string_view config) : broker_listener(host) {
        std::string error;
        auto s = parse_connector_settings(config, error);
        if (!s) {
            throw std::invalid_argument(error);
        }
        settings_ = std::move(*s);
        link_ = nats_link::make(host_, settings_, error);
        if (!link_) {
            throw std::invalid_argument(error);
        }
    }

    ~nats_connector() override {
        stop_workers(std::chrono::steady_clock::now());
        link_.reset();
    }

  protected:
    std::optional<subscription_settings> parse_subscription(std::string_view settings_json,
                                                            std::string& error) override {
        return parse_subscription_settings(settings_json, error);
    }

    std::string conflict(const subscription_settings& existing, const std::string& existing_id,
                         const subscription_settings& wanted) const override {
        if (existing.stream != wanted.stream || existing.durable != wanted.durable) {
            return {};
        }
        return "subscription settings: stream '" + wanted.stream + "' with durable '" +
               wanted.durable + "' is already consumed by subscription '" + existing_id + "'";
    }

    std::shared_ptr<consumer_worker> start_worker(const std::string& id,
                                                  const subscription_settings& s,
                                                  std::string& error) override {
        // The connection exists only from start(): workers are made from then on.
        auto w = std::make_shared<consumer_worker>(host_, settings_, link_->connection(), id, s);
        w->start();
        return w;
    }

    wopbridge::status before_start() override {
        std::string error;
        if (!link_->connect(error)) {
            host_.log(wopbridge::log_level::error, "nats: " + error);
            return wopbridge::status::internal;
        }
        return wopbridge::status::ok;
    }

    void after_workers_stopped() override {
        // Every worker flushed its acks; the connection can go.
        link_->close(1000);
    }

  private:
    connector_settings settings_;
    std::unique_ptr<nats_link> link_;
};

} // namespace

// The module's one exported symbol; a listener has no HTTP routes.
WOPBRIDGE_LISTENER_CONNECTOR(nats_connector)
