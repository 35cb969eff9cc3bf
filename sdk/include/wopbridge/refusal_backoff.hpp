#pragma once
// How a broker listener backs off after the host refused a submit (header-only).
//
// A refusal that is about the host or the subscription (overloaded, store down, not active) is
// one every message would meet: the listener stops taking messages for a delay, once per
// "refused round" rather than once per message, and the delay doubles with each round (up to
// 30 s, or the base when that is larger) so a dead-lettered subscription is not polled every
// retryDelayMs. A committed or recognised outcome starts the next round from the base again.
// The host's Retry-After lengthens a round, never shortens it.

#include <wopbridge/connector_values.hpp>

#include <algorithm>
#include <chrono>
#include <string>

namespace wopbridge {

class refusal_backoff {
  public:
    using clock = std::chrono::steady_clock;
    static constexpr std::chrono::milliseconds default_cap{30000};

    explicit refusal_backoff(std::chrono::milliseconds base,
                             std::chrono::milliseconds cap = default_cap) noexcept
        : base_(base), cap_(std::max(base, cap)), delay_(base) {}

    // One refused submit at `now`.
    struct round {
        bool fresh = false;                // the first refusal of a round: say so once
        std::chrono::milliseconds delay{}; // how long the listener holds off from `now`
    };
    round refused(clock::time_point now, int retry_after_seconds) {
        if (paused(now)) {
            // A later refusal of the same round comes back when the round ends.
            return {false,
                    std::chrono::duration_cast<std::chrono::milliseconds>(paused_until_ - now)};
        }
        const auto delay = next_delay(retry_after_seconds);
        paused_until_ = now + delay;
        return {true, delay};
    }

    // The delay of a new round (the current one, or Retry-After when longer), doubling the next.
    // For a listener that keeps its own round boundaries.
    std::chrono::milliseconds next_delay(int retry_after_seconds) {
        const auto delay =
            std::max(delay_, std::chrono::milliseconds(retry_after_seconds * 1000LL));
        delay_ = std::min(delay_ * 2, cap_);
        return delay;
    }

    // Committed or recognised: the next refused round starts from the base.
    void reset() noexcept { delay_ = base_; }

    bool paused(clock::time_point now) const noexcept { return now < paused_until_; }
    clock::time_point paused_until() const noexcept { return paused_until_; }
    std::chrono::milliseconds base() const noexcept { return base_; }

  private:
    std::chrono::milliseconds base_;
    std::chrono::milliseconds cap_;
    std::chrono::milliseconds delay_;
    clock::time_point paused_until_{};
};

// The refusal reason a listener records when host.submit() did not take an event at all.
inline std::string not_taken_reason(status st) {
    return "not taken, status " + std::to_string(static_cast<int>(st));
}

} // namespace wopbridge
