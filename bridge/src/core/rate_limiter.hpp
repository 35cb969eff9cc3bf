#pragma once
// Token buckets keyed by a string (a subscription id, a source address), on the injected clock so
// tests drive time by hand. A bucket holds at most `burst` tokens and refills `rate` tokens per
// second; a request takes one token or is refused with the seconds until one is available.
//
// Memory is bounded: past `max_keys` buckets, the ones that have refilled completely (they carry no
// state a fresh bucket would not) are dropped; if every bucket is still in use, the oldest half is
// dropped, which can only admit more, never refuse a request that a full table would have admitted.

#include "core/clock.hpp"

#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace wopbridge {

struct rate_limit {
    double rate = 0;  // tokens per second; 0 = unlimited
    double burst = 0; // bucket size; 0 = max(1, rate)
    bool enabled() const noexcept { return rate > 0; }
};

class rate_limiter {
  public:
    explicit rate_limiter(clock_source& clock, std::size_t max_keys = 100000);

    // Takes one token from `key`'s bucket under `limit`. Returns 0 when admitted, otherwise the
    // whole seconds (>= 1) until a token is available (the Retry-After value).
    int take(std::string_view key, const rate_limit& limit);
    // What take() would answer, without taking: 0 when a token is there, else the seconds until
    // one is. For budgets charged after the fact (refusals counted once a request was refused).
    int peek(std::string_view key, const rate_limit& limit) const;
    // Takes one token after the fact, into debt if need be (down to -burst): what passed peek()
    // together while one token was left is all paid for before the bucket admits again.
    void charge(std::string_view key, const rate_limit& limit);

    std::size_t size() const;

  private:
    struct bucket {
        double tokens = 0;
        millis updated = 0;
        double rate = 0;
        double burst = 0;
    };
    void shrink(millis now);
    // `key`'s bucket (made, or reset for a changed limit) refilled to `now`; mu_ held.
    bucket& refreshed(std::string_view key, const rate_limit& limit, millis now);
    static int wait_seconds(double tokens, const rate_limit& limit);

    clock_source& clock_;
    std::size_t max_keys_;
    mutable std::mutex mu_;
    std::unordered_map<std::string, bucket> buckets_;
};

} // namespace wopbridge
