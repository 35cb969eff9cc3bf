#include "contract/state_machine.hpp"

namespace wopbridge {

bool transition_allowed(sub_state from, sub_state to) noexcept {
    using s = sub_state;
    switch (from) {
    case s::active: return to == s::paused || to == s::failed || to == s::dead_lettered;
    case s::paused: return to == s::active;
    case s::failed: return to == s::active || to == s::dead_lettered || to == s::paused;
    case s::dead_lettered: return to == s::active;
    }
    return false;
}

result<void> check_transition(sub_state from, sub_state to) noexcept {
    if (!transition_allowed(from, to)) {
        return make_error_code(errc::conflict);
    }
    return {};
}

state_reason operator_reason(sub_state to) noexcept {
    return to == sub_state::paused ? state_reason::operator_paused : state_reason::none;
}

} // namespace wopbridge
