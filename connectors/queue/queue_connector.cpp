// queue: Redis Streams consumer groups as trigger subscriptions (source "queue").
//
// Each subscription names a stream and a consumer group; the connector reads it with XREADGROUP,
// submits one event per message (provider event id "<stream>:<message id>", so the host dedups
// by (stream, id)) and XACKs only after the host committed or recognised it. Pending entries of a
// dead consumer are taken over with XAUTOCLAIM after claimIdleMs. See README.md.
#include "queue/settings.hpp"
#include "queue/stream_worker.hpp"

#include "wopbridge/broker_listener.hpp"

#include <memory>
#include <optional>
#include <stdexcept>

namespace {

using namespace wopbridge::queue;

class queue_connector final
    : public wopbridge::broker_listener<stream_worker, subscription_settings> {
  public:
    static wopbridge::connector_info info() {
        wopbridge::connector_info i;
        i.name = "queue";
        i.version = "0.1.0";
        i.status = "alpha";
        i.security_posture =
            "trusts the Redis server it is configured with (AUTH with user/password when given, "
            "plain TCP, no TLS); messages are submitted unverified: anyone who can XADD to a "
            "subscribed stream can trigger runs";
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

    queue_connector(wopbridge::host& host, std::string_view config) : broker_listener(host) {
        std::string error;
        auto s = parse_connector_settings(config, error);
        if (!s) {
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
        if (existing.stream != wanted.stream || existing.group != wanted.group) {
            return {};
        }
        return "subscription settings: stream '" + wanted.stream + "' with group '" + wanted.group +
               "' is already consumed by subscription '" + existing_id + "'";
    }

    std::shared_ptr<stream_worker>
    start_worker(const std::string& id, const subscription_settings& s, std::string&) override {
        auto worker = std::make_shared<stream_worker>(host_, settings_, id, s);
        worker->start();
        return worker;
    }

  private:
    connector_settings settings_;
};

} // namespace

// The module's one exported symbol; a listener has no HTTP routes.
WOPBRIDGE_LISTENER_CONNECTOR(queue_connector)
