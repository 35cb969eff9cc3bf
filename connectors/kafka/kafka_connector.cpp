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

#include "wopbridge/connector.hpp"

#include <librdkafka/rdkafka.h>

#include <map>
#include <memory>
#include <mutex>
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

class kafka_connector final : public wopbridge::connector {
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

    kafka_connector(wopbridge::host& host, std::string_view config) : host_(host) {
        std::string error;
        auto s = parse_connector_settings(config, error);
        if (!s || !check_client(*s, true, error)) {
            throw std::invalid_argument(error);
        }
        settings_ = std::move(*s);
    }

    ~kafka_connector() override { stop_all(std::chrono::steady_clock::now()); }

    wopbridge::status start() override {
        std::lock_guard lock(mu_);
        started_ = true;
        for (auto& [id, s] : settings_of_) {
            if (!workers_.count(id)) {
                if (auto w = start_worker(id, s)) {
                    workers_[id] = std::move(w);
                }
            }
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
            for (const auto& [other, settings] : settings_of_) {
                if (other != id && settings.group_id == s->group_id) {
                    error = "subscription settings: group '" + s->group_id +
                            "' is already consumed by subscription '" + other +
                            "' (one subscription per group and connector)";
                    return wopbridge::status::invalid;
                }
            }
            if (auto it = settings_of_.find(id); it != settings_of_.end() && it->second == *s) {
                return wopbridge::status::ok; // nothing changed
            }
            if (auto it = workers_.find(id); it != workers_.end()) {
                old = std::move(it->second);
                workers_.erase(it);
            }
        }
        if (old) {
            old->stop(std::chrono::steady_clock::now() + update_grace);
        }
        std::lock_guard lock(mu_);
        settings_of_[id] = *s;
        if (started_ && !stopped_) {
            auto w = start_worker(id, *s, &error);
            if (!w) {
                settings_of_.erase(id);
                return wopbridge::status::invalid;
            }
            workers_[id] = std::move(w);
        }
        return wopbridge::status::ok;
    }

    wopbridge::status unsubscribe(std::string_view id) override {
        std::shared_ptr<consumer_worker> w;
        {
            std::lock_guard lock(mu_);
            const std::string key(id);
            settings_of_.erase(key);
            auto it = workers_.find(key);
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

    std::shared_ptr<consumer_worker> start_worker(const std::string& id,
                                                  const subscription_settings& s,
                                                  std::string* error_out = nullptr) {
        auto w = std::make_shared<consumer_worker>(host_, settings_, id, s);
        std::string error;
        if (!w->start(error)) {
            host_.log(wopbridge::log_level::error, "kafka[" + id + "]: " + error);
            if (error_out != nullptr) {
                *error_out = error;
            }
            w->stop(std::chrono::steady_clock::now());
            return nullptr;
        }
        return w;
    }

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
    std::map<std::string, subscription_settings> settings_of_;
    std::map<std::string, std::shared_ptr<consumer_worker>> workers_;
};

} // namespace

// The module's one exported symbol; a listener has no HTTP routes, so on_http_request is NULL
// (the ABI allows it without WB_CAP_HTTP_INGEST).
extern "C" WOPBRIDGE_EXPORT const wb_connector_descriptor* wopbridge_connector_entry_v1(void) {
    static const wb_connector_descriptor* const descriptor =
        []() noexcept -> const wb_connector_descriptor* {
        const wb_connector_descriptor* base = wopbridge::detail::descriptor_for<kafka_connector>();
        if (base == nullptr) {
            return nullptr;
        }
        static wb_connector_descriptor listener = *base;
        listener.on_http_request = nullptr;
        return &listener;
    }();
    return descriptor;
}
