#pragma once
// A clock tests move by hand, and a deterministic random source. No test sleeps.
#include "core/clock.hpp"

#include <atomic>
#include <cstdint>

namespace wopbridge::testing {

// Where test clocks start: 2026-01-01T00:00:00Z. Files name it with `using testing::t0;`, which
// may repeat (unlike a definition) when a unity build joins them.
inline constexpr millis t0 = 1767225600000;

class fake_clock final : public clock_source {
public:
  explicit fake_clock(millis start = t0) : now_(start) {}
  millis now_ms() const override { return now_.load(); }
  void set(millis t) { now_.store(t); }
  void advance(millis d) { now_.fetch_add(d); }

private:
    std::atomic<millis> now_;
};

// xorshift-based, seeded: ids and secrets are reproducible within a test.
class seeded_random final : public random_source {
public:
    explicit seeded_random(std::uint64_t seed = 0x9e3779b97f4a7c15ULL) : state_(seed ? seed : 1) {}
    void fill(unsigned char* out, std::size_t n) override {
        for (std::size_t i = 0; i < n; ++i) {
            state_ ^= state_ << 13;
            state_ ^= state_ >> 7;
            state_ ^= state_ << 17;
            out[i] = static_cast<unsigned char>(state_ >> 24);
        }
    }

private:
    std::uint64_t state_;
};

} // namespace wopbridge::testing
