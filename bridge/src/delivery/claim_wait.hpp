#pragma once
// How long the delivery engine sleeps after a claim that did not fill its batch (it also wakes on
// every intake commit's notify).

#include "core/clock.hpp"

#include <algorithm>
#include <optional>

namespace wopbridge {

inline constexpr millis claim_idle_wait_ms = 1000; // longest: expired leases and probes are noticed
inline constexpr millis claim_busy_floor_ms = 50;  // due work that could not be claimed

// `claimed_at`: the `now` the claim ran with; `now`: the clock after it; `next_due`: the store's
// earliest due time. Work due only after `claimed_at` arrived while the claim waited in the
// store's group commit: claim again as soon as it is due. Work due by `claimed_at` and still not
// claimed (paused, probing, maxConcurrency) waits at least the floor.
inline millis claim_wait_ms(millis claimed_at, millis now, std::optional<millis> next_due) {
    if (!next_due) {
        return claim_idle_wait_ms;
    }
    const millis floor = *next_due > claimed_at ? 0 : claim_busy_floor_ms;
    return std::clamp(*next_due - now, floor, claim_idle_wait_ms);
}

} // namespace wopbridge
