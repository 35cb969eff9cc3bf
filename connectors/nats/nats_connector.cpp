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

#include "wopbridge/connector.hpp"

#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>

namespace {

using namespace wopbridge::nats;

class nats_connector final : public wopbridge::connector {
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

    nats_connector(wopbridge::host& host, std::string_view config) : host_(host) {
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
        stop_all(std::chrono::steady_clock::now());
        link_.reset();
    }

    wopbridge::status start() override {
        std::string error;
        if (!link_->connect(error)) {
            host_.log(wopbridge::log_level::error, "nats: " + error);
            return wopbridge::status::internal;
        }
        std::lock_guard lock(mu_);
        started_ = true;
        for (auto& [id, w] : workers_) {
            if (!w) {
                w = make_worker(id, pending_.at(id));
            }
            w->start();
        }
        pending_.clear();
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
                if (other != id && settings.stream == s->stream && settings.durable == s->durable) {
                    error = "subscription settings: stream '" + s->stream + "' with durable '" +
                            s->durable + "' is already consumed by subscription '" + other + "'";
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
            auto w = make_worker(id, *s);
            w->start();
            workers_[id] = std::move(w);
        } else {
            // The connection exists only from start(): the worker is made there.
            workers_[id] = nullptr;
            pending_[id] = std::move(*s);
        }
        return wopbridge::status::ok;
    }

    wopbridge::status unsubscribe(std::string_view id) override {
        std::shared_ptr<consumer_worker> w;
        {
            std::lock_guard lock(mu_);
            const std::string key(id);
            settings_of_.erase(key);
            pending_.erase(key);
            auto it = workers_.find(key);
            if (it == workers_.end()) {
                return wopbridge::status::ok;
            }
            w = std::move(it->second);
            workers_.erase(it);
        }
        if (w) {
            w->stop(std::chrono::steady_clock::now() + update_grace);
        }
        return wopbridge::status::ok;
    }

    wopbridge::status stop(std::int64_t deadline_ms) override {
        const auto left = std::max<std::int64_t>(0, deadline_ms - host_.now_ms());
        stop_all(std::chrono::steady_clock::now() + std::chrono::milliseconds(left));
        return wopbridge::status::ok;
    }

  private:
    static constexpr auto update_grace = std::chrono::seconds(2);

    std::shared_ptr<consumer_worker> make_worker(const std::string& id,
                                                 const subscription_settings& s) {
        return std::make_shared<consumer_worker>(host_, settings_, link_->connection(), id, s);
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
            if (w) {
                w->stop(deadline);
            }
        }
        // Every worker flushed its acks; the connection can go.
        link_->close(1000);
    }

    wopbridge::host& host_;
    connector_settings settings_;
    std::unique_ptr<nats_link> link_;
    std::mutex mu_;
    bool started_ = false;
    bool stopped_ = false;
    std::map<std::string, subscription_settings> settings_of_;
    std::map<std::string, subscription_settings> pending_; // subscribed before start()
    std::map<std::string, std::shared_ptr<consumer_worker>> workers_;
};

} // namespace

// The module's one exported symbol; a listener has no HTTP routes, so on_http_request is NULL
// (the ABI allows it without WB_CAP_HTTP_INGEST).
extern "C" WOPBRIDGE_EXPORT const wb_connector_descriptor* wopbridge_connector_entry_v1(void) {
    static const wb_connector_descriptor* const descriptor =
        []() noexcept -> const wb_connector_descriptor* {
        const wb_connector_descriptor* base = wopbridge::detail::descriptor_for<nats_connector>();
        if (base == nullptr) {
            return nullptr;
        }
        static wb_connector_descriptor listener = *base;
        listener.on_http_request = nullptr;
        return &listener;
    }();
    return descriptor;
}
