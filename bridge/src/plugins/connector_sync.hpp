#pragma once
// Keeps what every loaded connector serves equal to what the store holds: subscriptions from the
// config file and those registered over the API, on every node of a shared store and across
// restarts. The API handler hands a new subscription to its connector at once (this node); a pass
// here finds what other nodes registered or deleted, and what a restart must serve again.

#include "app/bridge.hpp"
#include "plugins/connector_host.hpp"

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace wopbridge {

struct connector_refusal {
    std::string subscription_id;
    subscription::origin_kind origin = subscription::origin_kind::api;
    std::string reason; // the module's, one line
};

class connector_sync {
public:
    connector_sync(bridge& b, connector_host& host);
    ~connector_sync(); // stop()
    connector_sync(const connector_sync&) = delete;
    connector_sync& operator=(const connector_sync&) = delete;

    // One pass: subscribe what the store has (the host makes an unchanged one a no-op, changed
    // settings an update), unsubscribe what the store no longer has. Refusals are returned and
    // logged once per subscription and settings. A store that cannot be read changes nothing.
    result<std::vector<connector_refusal>> reconcile();

    // The data migration of secrets stored in clear (from before they were sealed, or a field a
    // newer module marks): every stored subscription of a connector loaded here gets the values
    // its schema marks secret sealed, one compare-and-set per row, so a row changed meanwhile (by
    // a node sealing it too) is left to that change. Idempotent: sealed values are kept. Returns
    // how many rows were sealed. Run at start, after the host key check, before the first pass.
    result<int> seal_stored_settings();

    // A pass every `interval` on a thread of its own, until stop().
    void start(std::chrono::milliseconds interval);
    void stop();

private:
    bridge& bridge_;
    connector_host& host_;
    std::mutex pass_mu_;                        // one pass at a time
    std::map<std::string, std::string> served_; // subscription id -> connector instance
    std::map<std::string, std::string> logged_; // subscription id -> settings last refused
    std::mutex mu_;
    std::condition_variable cv_;
    bool stopping_ = false;
    std::thread thread_;
};

} // namespace wopbridge
