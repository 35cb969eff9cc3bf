// kafka: Kafka consumer groups as trigger subscriptions (source "queue").
//
// Each subscription names topics and a consumer group; the connector is a member of that group
// through librdkafka, submits one event per record (provider event id
// "<topic>/<partition>/<offset>", so the host dedups by the record's identity) and commits a
// partition's offset only past records the host committed or recognised. Several bridges in one
// group share the partitions; what a dead member left uncommitted is read again by the next owner
// and answered "duplicate" by the host. README.md.
#include "kafka/consumer_worker.hpp"
#include "kafka/settings.hpp"

#include "wopbridge/broker_listener.hpp"

#include <librdkafka/rdkafka.h>

#include <memory>
#include <optional>
#include <stdexcept>

namespace {

using namespace wopbridge::kafka;

// Every property is one librdkafka accepts (names and values), and a client can be made with
// them (TLS files load): a bad config is refused at load, naming the setting, never its value.
bool check_client(const connector_settings& s, bool make_client, std::string& error) {
    char err[512] = {0};
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    for (const auto& [k, v] : s.client_properties()) {
        if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
            error = "settings: " + std::string(s.properties.count(k) ? "properties: " : "") + k +
                    ": " + redact(err, s.sensitive_values());
            rd_kafka_conf_destroy(conf);
            return false;
        }
    }
    if (!make_client) {
        rd_kafka_conf_destroy(conf);
        return true;
    }
    // A probe, destroyed at once: its own connection attempts are not worth a log line.
    rd_kafka_conf_set_log_cb(conf, [](const rd_kafka_t*, int, const char*, const char*) {});
    rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    if (rk == nullptr) {
        rd_kafka_conf_destroy(conf);
        error = "settings: the client refused them: " + redact(err, s.sensitive_values());
        return false;
    }
    rd_kafka_destroy(rk);
    return true;
}

class kafka_connector final
    : public wopbridge::broker_listener<consumer_worker, subscription_settings> {
  public:
    static wopbridge::connector_info info() {
        wopbridge::connector_info i;
        i.name = "kafka";
        i.version = "0.1.0";
        i.status = "alpha";
        i.security_posture =
            "trusts the Kafka brokers it is configured with (SASL PLAIN/SCRAM, TLS with a CA and "
            "client certificate when configured); records are submitted unverified: anyone who "
            "can produce to a subscribed topic can trigger runs";
        i.source = "queue";
        i.config_schema_json = connector_schema_json;
        i.subscription_schema_json = subscription_schema_json;
        i.capabilities = WB_CAP_LISTENER;
        return i;
    }

    static wopbridge::status validate(std::string_view config, std::string& error) {
        auto s = parse_connector_settings(config, error);
        return s && check_client(*s, false, error) ? wopbridge::status::ok
                                                   : wopbridge::status::invalid;
    }

    kafka_connector(wopbridge::host& host, std::string_view config) : broker_listener(host) {
        std::string error;
        auto s = parse_connector_settings(config, error);
        if (!s || !check_client(*s, true, error)) {
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
        if (existing.group_id != wanted.group_id) {
            return {};
        }
        return "subscription settings: group '" + wanted.group_id +
               "' is already consumed by subscription '" + existing_id +
               "' (one subscription per group and connector)";
    }

    std::shared_ptr<consumer_worker> start_worker(const std::string& id,
                                                  const subscription_settings& s,
                                                  std::string& error) override {
        auto w = std::make_shared<consumer_worker>(host_, settings_, id, s);
        if (!w->start(error)) {
            host_.log(wopbridge::log_level::error, "kafka[" + id + "]: " + error);
            w->stop(std::chrono::steady_clock::now());
            return nullptr;
        }
        return w;
    }

  private:
    connector_settings settings_;
};

} // namespace

// The module's one exported symbol; a listener has no HTTP routes.
WOPBRIDGE_LISTENER_CONNECTOR(kafka_connector)
