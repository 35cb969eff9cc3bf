#include "app/change_feed.hpp"

#include <vector>

namespace wopbridge {

change_feed::change_feed(std::size_t max_tracked_runs) : max_tracked_runs_(max_tracked_runs) {}

void change_feed::note_subscription(const std::string& subscription_id, const std::string& tenant) {
    if (subscription_id.empty() || tenant.empty()) {
        return;
    }
    std::lock_guard lock(mu_);
    auto [it, inserted] = tenant_of_subscription_.try_emplace(subscription_id, tenant);
    if (!inserted && it->second != tenant) {
        it->second = tenant; // an id deleted and registered again by another tenant
    }
}

void change_feed::note_run(const std::string& run_id, const std::string& subscription_id) {
    if (run_id.empty() || subscription_id.empty()) {
        return;
    }
    std::lock_guard lock(mu_);
    if (subscription_of_run_.size() >= max_tracked_runs_) {
        subscription_of_run_.clear(); // their later changes go unattributed: a slower refresh
    }
    subscription_of_run_.try_emplace(run_id, subscription_id);
}

void change_feed::tenant_changed(const std::string& tenant) {
    std::unique_lock lock(mu_);
    wake(tenant, lock);
}

void change_feed::subscription_changed(const std::string& subscription_id) {
    std::unique_lock lock(mu_);
    if (watchers_.empty()) {
        return;
    }
    auto it = tenant_of_subscription_.find(subscription_id);
    if (it == tenant_of_subscription_.end()) {
        return;
    }
    const std::string tenant = it->second;
    wake(tenant, lock);
}

void change_feed::run_changed(const std::string& run_id, bool ended) {
    std::unique_lock lock(mu_);
    auto run = subscription_of_run_.find(run_id);
    if (run == subscription_of_run_.end()) {
        return;
    }
    auto sub = tenant_of_subscription_.find(run->second);
    if (ended) {
        subscription_of_run_.erase(run);
    }
    if (sub == tenant_of_subscription_.end() || watchers_.empty()) {
        return;
    }
    const std::string tenant = sub->second;
    wake(tenant, lock);
}

std::uint64_t change_feed::watch(const std::string& tenant, std::function<void()> notify) {
    std::lock_guard lock(mu_);
    const auto token = next_token_++;
    watchers_.emplace(token, watcher{tenant, std::move(notify)});
    return token;
}

void change_feed::cancel(std::uint64_t token) {
    std::lock_guard lock(mu_);
    watchers_.erase(token);
}

std::size_t change_feed::watchers() const {
    std::lock_guard lock(mu_);
    return watchers_.size();
}

void change_feed::wake(const std::string& tenant, std::unique_lock<std::mutex>& lock) {
    std::vector<std::function<void()>> fire;
    for (auto it = watchers_.begin(); it != watchers_.end();) {
        if (it->second.tenant == tenant) {
            fire.push_back(std::move(it->second.notify));
            it = watchers_.erase(it);
        } else {
            ++it;
        }
    }
    lock.unlock(); // a watcher may re-arm from its callback
    for (auto& f : fire) {
        if (f) {
            f();
        }
    }
}

} // namespace wopbridge
