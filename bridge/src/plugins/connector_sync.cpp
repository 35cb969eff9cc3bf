#include "plugins/connector_sync.hpp"
#include "core/thread_name.hpp"

#include "core/log.hpp"

#include <algorithm>
#include <set>

namespace wopbridge {

connector_sync::connector_sync(bridge& b, connector_host& host) : bridge_(b), host_(host) {}

connector_sync::~connector_sync() { stop(); }

result<std::vector<connector_refusal>> connector_sync::reconcile() {
    auto subs = bridge_.all_subscriptions();
    if (!subs) {
        return subs.error();
    }
    std::lock_guard pass(pass_mu_);
    const auto names = host_.connector_names();
    std::vector<connector_refusal> refused;
    std::map<std::string, std::string> now_served;
    for (const auto& s : *subs) {
        if (s.connector.empty() ||
            std::find(names.begin(), names.end(), s.connector) == names.end()) {
            continue; // no such instance here: its ingest answers 503 until one is loaded
        }
        auto r = host_.subscribe(s);
        if (!r) {
            refused.push_back({s.id, s.origin, r.error().message});
            if (logged_[s.id] != s.connector_settings_json) {
                logged_[s.id] = s.connector_settings_json;
                log_line("error", "connector.subscribe_failed",
                         {{"subscriptionId", s.id},
                          {"connector", s.connector},
                          {"error", r.error().message}});
            }
            continue;
        }
        logged_.erase(s.id);
        now_served[s.id] = s.connector;
    }
    for (const auto& [id, connector] : served_) {
        if (!now_served.count(id)) {
            (void)host_.unsubscribe(connector, id);
        }
    }
    served_ = std::move(now_served);
    return refused;
}

result<int> connector_sync::seal_stored_settings() {
    auto subs = bridge_.all_subscriptions();
    if (!subs) {
        return subs.error();
    }
    const auto names = host_.connector_names();
    int sealed = 0;
    for (const auto& s : *subs) {
        if (s.connector.empty() ||
            std::find(names.begin(), names.end(), s.connector) == names.end()) {
            continue; // its schema is unknown here: sealed by a start that loads the connector
        }
        auto next = host_.seal_settings(s.connector, s.connector_settings_json,
                                        seal_mode::keep_sealed);
        if (!next) {
            // Not a JSON object: the connector refuses it anyway; nothing to seal in it.
            log_line("warn", "connector.settings_unsealable",
                     {{"subscriptionId", s.id}, {"connector", s.connector}});
            continue;
        }
        if (!next->changed) {
            continue;
        }
        auto replaced =
            bridge_.replace_connector_settings(s.id, s.connector_settings_json, next->json);
        if (!replaced) {
            return replaced.error();
        }
        sealed += *replaced ? 1 : 0;
    }
    if (sealed > 0) {
        log_line("info", "connector.settings_sealed", {{"subscriptions", sealed}});
    }
    return sealed;
}

void connector_sync::start(std::chrono::milliseconds interval) {
    std::lock_guard lock(mu_);
    if (thread_.joinable()) {
        return;
    }
    stopping_ = false;
    thread_ = std::thread([this, interval] {
        name_this_thread("wb-conn-sync");
        std::unique_lock lock(mu_);
        while (!cv_.wait_for(lock, interval, [this] { return stopping_; })) {
            lock.unlock();
            (void)reconcile();
            lock.lock();
        }
    });
}

void connector_sync::stop() {
    {
        std::lock_guard lock(mu_);
        stopping_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) {
        thread_.join();
    }
}

} // namespace wopbridge
