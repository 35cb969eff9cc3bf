#include "contract/retry_schedule.hpp"

#include <algorithm>
#include <cstdint>

namespace wopbridge {

std::optional<std::string> max_attempts_refusal(std::int64_t n) {
    if (n >= retry_max_attempts_min && n <= retry_max_attempts_max) {
        return std::nullopt;
    }
    return "maxAttempts must be within " + std::to_string(retry_max_attempts_min) + ".." +
           std::to_string(retry_max_attempts_max);
}
namespace {

millis exponential_delay(millis base, millis cap, int attempt) {
    if (base <= 0) {
        return 0;
    }
    millis d = base;
    // Doubling stops at the cap, so no overflow however large `attempt` is.
    for (int i = 1; i < attempt && d < cap; ++i) {
        d = d > cap / 2 ? cap : d * 2;
    }
    return std::min(d, cap);
}

millis uniform(random_source& random, millis bound) { // [0, bound]
    if (bound <= 0) {
        return 0;
    }
    unsigned char bytes[8];
    random.fill(bytes, sizeof bytes);
    std::uint64_t v = 0;
    for (unsigned char b : bytes) {
        v = (v << 8) | b;
    }
    return static_cast<millis>(v % (static_cast<std::uint64_t>(bound) + 1));
}

} // namespace

millis retry_delay(const retry_policy& policy, int failed_attempt, millis retry_after_ms,
                   random_source* random) {
    const millis cap = std::max<millis>(0, policy.max_delay_ms);
    millis d = 0;
    switch (policy.backoff) {
    case backoff_kind::none: d = 0; break;
    case backoff_kind::fixed: d = std::min(std::max<millis>(0, policy.base_delay_ms), cap); break;
    case backoff_kind::exponential:
        d = exponential_delay(policy.base_delay_ms, cap, std::max(1, failed_attempt));
        if (policy.jitter && random != nullptr) {
            millis half = d / 2;
            d = (d - half) + uniform(*random, half);
        }
        break;
    }
    return std::max(d, std::max<millis>(0, retry_after_ms));
}

} // namespace wopbridge
