#pragma once
// A base for listener connectors that consume a broker (header-only): one worker per
// subscription, each with its own thread(s) and connection(s). It keeps the subscriptions'
// settings, makes and starts a worker for each once the connector is started, replaces a worker
// whose settings changed, refuses a subscription that would consume what another one already
// consumes, and stops every worker (letting each finish its outstanding outcomes) by the host's
// deadline. The connector supplies only what is about its broker:
//
//   parse_subscription(json, error) -> optional<Subscription>   a subscription's settings
//   conflict(existing, existing_id, wanted) -> ""|refusal       one consumer per thing consumed
//   start_worker(id, settings, error) -> shared_ptr<Worker>     made and started (nullptr: refused)
//   before_start() / after_workers_stopped()                    optional shared connection hooks
//
// Worker needs `void stop(std::chrono::steady_clock::time_point deadline)` (idempotent).
// Workers are made only from start() on: a connector subscribed before start() starts nothing.

#include <wopbridge/connector.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace wopbridge {

template <class Worker, class Subscription> class broker_listener : public connector {
  public:
    explicit broker_listener(host& h) : host_(h) {}

    // A derived connector whose after_workers_stopped() uses its own members calls
    // stop_workers() in its own destructor (this one no longer reaches the override).
    ~broker_listener() override { stop_workers(std::chrono::steady_clock::now()); }

    status start() override {
        const status ready = before_start();
        if (ready != status::ok) {
            return ready;
        }
        std::lock_guard lock(mu_);
        if (stopped_) {
            return status::ok;
        }
        started_ = true;
        for (const auto& [id, s] : settings_of_) {
            if (workers_.count(id) == 0) {
                // A worker that cannot start is logged by start_worker; its subscription stays,
                // so a later update of its settings tries again.
                std::string error;
                if (auto w = start_worker(id, s, error)) {
                    workers_[id] = std::move(w);
                }
            }
        }
        return status::ok;
    }

    status subscribe(const subscription_info& sub, std::string& error) override {
        auto s = parse_subscription(sub.settings_json, error);
        if (!s) {
            return status::invalid;
        }
        const std::string id(sub.id);
        std::shared_ptr<Worker> old;
        {
            std::lock_guard lock(mu_);
            for (const auto& [other, settings] : settings_of_) {
                if (other == id) {
                    continue;
                }
                if (auto refusal = conflict(settings, other, *s); !refusal.empty()) {
                    error = std::move(refusal);
                    return status::invalid;
                }
            }
            if (auto it = settings_of_.find(id); it != settings_of_.end() && it->second == *s) {
                return status::ok; // nothing changed
            }
            if (auto it = workers_.find(id); it != workers_.end()) {
                old = std::move(it->second);
                workers_.erase(it);
            }
        }
        if (old) {
            // Outside the lock: a stopping worker waits for its outstanding outcomes.
            old->stop(std::chrono::steady_clock::now() + update_grace);
        }
        std::lock_guard lock(mu_);
        settings_of_[id] = *s;
        if (started_ && !stopped_) {
            auto w = start_worker(id, *s, error);
            if (!w) {
                settings_of_.erase(id);
                return status::invalid;
            }
            workers_[id] = std::move(w);
        }
        return status::ok;
    }

    status unsubscribe(std::string_view id) override {
        std::shared_ptr<Worker> w;
        {
            std::lock_guard lock(mu_);
            const std::string key(id);
            settings_of_.erase(key);
            auto it = workers_.find(key);
            if (it == workers_.end()) {
                return status::ok;
            }
            w = std::move(it->second);
            workers_.erase(it);
        }
        w->stop(std::chrono::steady_clock::now() + update_grace);
        return status::ok;
    }

    status stop(std::int64_t deadline_ms) override {
        // The host clock may be a test clock: turn the deadline into a wait budget once.
        const auto left = std::max<std::int64_t>(0, deadline_ms - host_.now_ms());
        stop_workers(std::chrono::steady_clock::now() + std::chrono::milliseconds(left));
        return status::ok;
    }

  protected:
    // How long a replaced or unsubscribed worker may finish its outstanding outcomes.
    static constexpr auto update_grace = std::chrono::seconds(2);

    virtual std::optional<Subscription> parse_subscription(std::string_view settings_json,
                                                           std::string& error) = 0;
    // The refusal (a whole message) when `wanted` would consume what subscription `existing_id`
    // already consumes with `existing`; empty when both may run.
    virtual std::string conflict(const Subscription& existing, const std::string& existing_id,
                                 const Subscription& wanted) const = 0;
    // A started worker for `id`, or nullptr with `error` set (called with the registry locked).
    virtual std::shared_ptr<Worker> start_worker(const std::string& id, const Subscription& s,
                                                 std::string& error) = 0;
    // Runs before start() starts any worker (e.g. a connection the workers share); a status other
    // than ok fails start() and starts nothing.
    virtual status before_start() { return status::ok; }
    // Runs once, after every worker stopped (e.g. closing that shared connection).
    virtual void after_workers_stopped() {}

    // Stops every worker by `deadline`, once; later calls do nothing.
    void stop_workers(std::chrono::steady_clock::time_point deadline) {
        std::map<std::string, std::shared_ptr<Worker>> workers;
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
        after_workers_stopped();
    }

    host& host_;

  private:
    std::mutex mu_;
    bool started_ = false;
    bool stopped_ = false;
    std::map<std::string, Subscription> settings_of_;
    std::map<std::string, std::shared_ptr<Worker>> workers_;
};

namespace detail {

// A listener has no HTTP routes: its descriptor says so (the ABI allows NULL on_http_request
// without WB_CAP_HTTP_INGEST, and stricter hosts expect it).
template <class T> const wb_connector_descriptor* listener_descriptor_for() noexcept {
    static const wb_connector_descriptor* const descriptor =
        []() noexcept -> const wb_connector_descriptor* {
        const wb_connector_descriptor* base = descriptor_for<T>();
        if (base == nullptr) {
            return nullptr;
        }
        static wb_connector_descriptor listener = *base;
        listener.on_http_request = nullptr;
        return &listener;
    }();
    return descriptor;
}

} // namespace detail
} // namespace wopbridge

// Defines the module's one exported symbol for a listener connector (no HTTP routes). Use once
// per module, at namespace scope, instead of WOPBRIDGE_CONNECTOR.
#define WOPBRIDGE_LISTENER_CONNECTOR(type)                                                         \
    extern "C" WOPBRIDGE_EXPORT const wb_connector_descriptor* wopbridge_connector_entry_v1(       \
        void) {                                                                                    \
        return ::wopbridge::detail::listener_descriptor_for<type>();                               \
    }
