#pragma once
// Waits until `pred` holds, polling every 10 ms, for at most `limit`: a condition with a deadline,
// for tests that watch another process or thread they cannot be notified by.
#include <chrono>
#include <thread>

namespace wopbridge::testing {

template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds limit = std::chrono::seconds(15)) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < until) {
        if (pred()) {
            return true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return pred();
}

} // namespace wopbridge::testing
