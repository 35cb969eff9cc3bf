#pragma once
// Which tenants' operator views changed on this node, for live dashboards: the observed store
// reports every committed write (intake, attempts, state changes, run events, replay jobs) and the
// feed wakes the watchers of that write's tenant. A hint only, never content: a watcher re-reads
// what it shows. Writes are attributed through what the store decorator has seen (subscription
// -> tenant, run -> subscription); a write it cannot attribute wakes nobody rather than another
// tenant, and dashboards refresh slowly on their own for those and for other nodes' writes.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

namespace wopbridge {

class change_feed {
public:
    // Bounds the run -> subscription map: runs that never end must not grow it without limit.
    explicit change_feed(std::size_t max_tracked_runs = 100000);

    void note_subscription(const std::string& subscription_id, const std::string& tenant);
    void note_run(const std::string& run_id, const std::string& subscription_id);

    void tenant_changed(const std::string& tenant);
    void subscription_changed(const std::string& subscription_id);
    // `ended`: the run will not change again, so it is forgotten.
    void run_changed(const std::string& run_id, bool ended);

    // One-shot: `notify` runs once, on the writing thread, at the tenant's next change (keep it
    // short; post real work elsewhere). Returns a token for cancel().
    std::uint64_t watch(const std::string& tenant, std::function<void()> notify);
    void cancel(std::uint64_t token);
    std::size_t watchers() const;

private:
    struct watcher {
        std::string tenant;
        std::function<void()> notify;
    };
    void wake(const std::string& tenant, std::unique_lock<std::mutex>& lock);

    const std::size_t max_tracked_runs_;
    mutable std::mutex mu_;
    std::unordered_map<std::string, std::string> tenant_of_subscription_;
    std::unordered_map<std::string, std::string> subscription_of_run_;
    std::map<std::uint64_t, watcher> watchers_;
    std::uint64_t next_token_ = 1;
};

} // namespace wopbridge
