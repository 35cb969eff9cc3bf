#pragma once
// The subscription state machine (CONTRACT.md (b)) as pure functions. Every state change in the
// bridge is checked here before it reaches store::change_state / store::record_attempt.
//
// Allowed transitions:
//   (create)       -> active
//   active         -> paused         operator pause (reason operator-paused)
//   paused         -> active         resume (fresh)
//   active         -> failed         circuit breaker opened (no reason)
//   failed         -> active         a probe was delivered, or operator re-activation
//   active|failed  -> dead-lettered  retry exhaustion (reason retry-exhausted)
//   dead-lettered  -> active         operator re-activation
//   failed         -> paused         operator hold of a failing subscription (stops the probes)
// Refused (errc::conflict): a state to itself, paused -> failed|dead-lettered (a paused subscription
// delivers nothing, so nothing can fail), and dead-lettered -> paused|failed (dead-lettered is
// terminal; only an explicit operator re-activation leaves it).

#include "contract/types.hpp"
#include "core/error.hpp"

namespace wopbridge {

// The state of a newly created subscription.
constexpr sub_state initial_state() noexcept { return sub_state::active; }

bool transition_allowed(sub_state from, sub_state to) noexcept;

// ok, or errc::conflict for a refused transition.
result<void> check_transition(sub_state from, sub_state to) noexcept;

// The contract reason for an operator-requested change to `to` (operator-paused for a pause,
// omitted otherwise).
state_reason operator_reason(sub_state to) noexcept;

// Whether a subscription in this state takes new inbound events (CONTRACT (b): others answer 409).
constexpr bool accepts_intake(sub_state s) noexcept { return s == sub_state::active; }

} // namespace wopbridge
