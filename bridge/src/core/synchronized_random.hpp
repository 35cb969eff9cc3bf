#pragma once
// A random_source shared by several threads (engine, store callbacks, HTTP): serializes fill() so
// a non-thread-safe source (e.g. the tests' seeded_random) stays correct.

#include "core/clock.hpp"

#include <mutex>

namespace wopbridge {

class synchronized_random final : public random_source {
public:
    explicit synchronized_random(random_source& inner) : inner_(inner) {}
    void fill(unsigned char* out, std::size_t n) override {
        std::lock_guard lock(mutex_);
        inner_.fill(out, n);
    }

private:
    random_source& inner_;
    std::mutex mutex_;
};

} // namespace wopbridge
