#pragma once
// On a store shared by several nodes, this node says it is alive every beat, and each beat also
// frees what nodes that went silent (SIGKILLed, cut off) had claimed: their deliveries start on
// another node after the node timeout rather than after a whole lease (store::keep_node_alive).
// A real-time background thread, started and stopped with the bridge's engine.

#include "core/clock.hpp"
#include "store/store.hpp"

#include <condition_variable>
#include <mutex>
#include <thread>

namespace wopbridge {

class node_liveness {
public:
    node_liveness(store& st, millis beat_ms, millis timeout_ms);
    ~node_liveness();
    node_liveness(const node_liveness&) = delete;
    node_liveness& operator=(const node_liveness&) = delete;

    // Beats once and starts beating; false (nothing started) when the store has no nodes.
    bool start();
    // Stops beating, then the store forgets this node and frees its unsettled claims.
    void stop();

private:
    void beat();

    store& st_;
    millis beat_ms_;
    millis timeout_ms_;
    std::mutex mutex_;
    std::condition_variable cv_;
    bool stopping_ = false;
    std::thread thread_;
};

} // namespace wopbridge
