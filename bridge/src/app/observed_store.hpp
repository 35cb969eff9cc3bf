#pragma once
// A store decorator that reports every run event committed through it (append_run_event, and the
// run events a delivered attempt creates) to an observer, after the commit. The bridge wraps its
// store in one so the outbound webhook dispatcher hears of every run event without each append
// site knowing about it.

#include "store/store.hpp"

#include <functional>
#include <memory>

namespace wopbridge {

using run_event_observer = std::function<void(const run_event&)>;

std::unique_ptr<store> make_observed_store(std::unique_ptr<store> inner,
                                           run_event_observer observer);

} // namespace wopbridge
