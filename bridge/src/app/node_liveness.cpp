#include "app/node_liveness.hpp"
#include "core/thread_name.hpp"

#include "core/log.hpp"

#include <chrono>

namespace wopbridge {

node_liveness::node_liveness(store& st, millis beat_ms, millis timeout_ms)
    : st_(st), beat_ms_(std::max<millis>(100, beat_ms)), timeout_ms_(timeout_ms) {}

node_liveness::~node_liveness() { stop(); }

void node_liveness::beat() {
    auto freed = st_.keep_node_alive(timeout_ms_);
    if (freed && *freed > 0) {
        log_line("info", "cluster.claims_released",
                 {{"deliveries", *freed}, {"silentForMs", timeout_ms_}});
    }
    // A failed beat is the store being unavailable, which store.unavailable reports.
}

bool node_liveness::start() {
    auto first = st_.keep_node_alive(timeout_ms_);
    if (!first && first.error() == make_error_code(errc::unsupported)) {
        return false;
    }
    if (first && *first > 0) {
        log_line("info", "cluster.claims_released",
                 {{"deliveries", *first}, {"silentForMs", timeout_ms_}});
    }
    {
        std::lock_guard lock(mutex_);
        stopping_ = false;
    }
    thread_ = std::thread([this] {
        name_this_thread("wb-node-beat");
        std::unique_lock lock(mutex_);
        while (!cv_.wait_for(lock, std::chrono::milliseconds(beat_ms_), [&] { return stopping_; })) {
            lock.unlock();
            beat();
            lock.lock();
        }
    });
    return true;
}

void node_liveness::stop() {
    if (!thread_.joinable()) {
        return;
    }
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
    (void)st_.leave_cluster();
}

} // namespace wopbridge
