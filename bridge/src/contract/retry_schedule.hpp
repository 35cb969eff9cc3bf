#pragma once
// The delay before the next attempt of a delivery (documented in docs/guarantees/retry.md):
//   none        -> 0 (due at once)
//   fixed       -> min(base_delay_ms, max_delay_ms); no jitter (a fixed schedule stays predictable)
//   exponential -> d = min(max_delay_ms, base_delay_ms * 2^(attempt-1)); with jitter on, "equal
//                  jitter": d/2 + uniform[0, d/2]
// A Retry-After from the run host raises the result to at least that value (even past the cap).

#include "contract/types.hpp"
#include "core/clock.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace wopbridge {

// The bounds of a retry policy's maxAttempts: the one place the config file (config_sections),
// the REST API (http/registration) and schemas/openapi.json (checked by OpenApiTest) take them
// from. The contract asks for >= 1; the upper bound is this host's.
inline constexpr int retry_max_attempts_min = 1;
inline constexpr int retry_max_attempts_max = 1000;

// nullopt when `n` is a maxAttempts this host takes; else why not (content-free, names the bounds).
std::optional<std::string> max_attempts_refusal(std::int64_t n);

// `failed_attempt` is the 1-based number of the attempt that just failed. `random` is used only for
// jitter and may be null (no jitter then).
millis retry_delay(const retry_policy& policy, int failed_attempt, millis retry_after_ms,
                   random_source* random);

} // namespace wopbridge
