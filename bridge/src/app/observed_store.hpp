#pragma once
// A store decorator that reports every run event committed through it (append_run_event, and the
// run events a delivered attempt creates) to an observer, after the commit, and every committed
// write to a change feed (live dashboards). The bridge wraps its store in one so the outbound
// webhook dispatcher and the feed hear of every change without each write site knowing about it.

#include "app/change_feed.hpp"
#include "store/store.hpp"

#include <functional>
#include <memory>

namespace wopbridge {

using run_event_observer = std::function<void(const run_event&)>;

// `changes` may be null; it must outlive the store.
std::unique_ptr<store> make_observed_store(std::unique_ptr<store> inner,
                                           run_event_observer observer,
                                           change_feed* changes = nullptr);

} // namespace wopbridge
