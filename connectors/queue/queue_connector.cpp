// queue: Redis Streams consumer groups as trigger subscriptions (source "queue").
//
// Each subscription names a stream and a consumer group; the connector reads it with XREADGROUP,
// submits one event per message (provider event id "<stream>:<message id>", so the host dedups
// by (stream, id)) and XACKs only after the host committed or recognised it. Pending entries of a
// dead consumer are taken over with XAUTOCLAIM after claimIdleMs. See README.md.
#include "queue/settings.hpp"
#include "queue/stream_worker.hpp"

#include "wopbridge/connector.hpp"

#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>

namespace {

using namespace wopbridge::queue;

class queue_connector final : public wopbridge::connector {
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

    queue_connector(wopbridge::host& host, std::string_view config) : host_(host) {
        std::string error;
        auto s = parse_connector_settings(config, error);
        if (!s) {
            throw std::invalid_argument(error);
        }
        settings_ = std::move(*s);
    }

    ~queue_connector() override { stop_all(std::chrono::steady_clock::now()); }

    wopbridge::status start() override {
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
        std::shared_ptr<stream_worker> old;
        {
            std::lock_guard lock(mu_);
            for (const auto& [other, w] : workers_) {
                if (other != id && w->subscription().stream == s->stream &&
                    w->subscription().group == s->group) {
                    error = "subscription settings: stream '" + s->stream + "' with group '" +
                            s->group + "' is already consumed by subscription '" + other + "'";
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
        auto worker = std::make_shared<stream_worker>(host_, settings_, id, std::move(*s));
        std::lock_guard lock(mu_);
        if (started_ && !stopped_) {
            worker->start();
        }
        workers_[id] = std::move(worker);
        return wopbridge::status::ok;
    }

    wopbridge::status unsubscribe(std::string_view id) override {
        std::shared_ptr<stream_worker> w;
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
        std::map<std::string, std::shared_ptr<stream_worker>> workers;
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
    std::map<std::string, std::shared_ptr<stream_worker>> workers_;
};

} // namespace

// The module's one exported symbol. WOPBRIDGE_CONNECTOR would also fill on_http_request; a
// listener has no HTTP routes, so the descriptor says so (the ABI allows NULL without
// WB_CAP_HTTP_INGEST, and stricter hosts expect it).
extern "C" WOPBRIDGE_EXPORT const wb_connector_descriptor* wopbridge_connector_entry_v1(void) {
    static const wb_connector_descriptor* const descriptor =
        []() noexcept -> const wb_connector_descriptor* {
        const wb_connector_descriptor* base = wopbridge::detail::descriptor_for<queue_connector>();
        if (base == nullptr) {
            return nullptr;
        }
        static wb_connector_descriptor listener = *base;
        listener.on_http_request = nullptr;
        return &listener;
    }();
    return descriptor;
}
