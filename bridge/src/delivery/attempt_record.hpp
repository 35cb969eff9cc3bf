#pragma once
// The delivery engine's pure part: the outcome of one attempt as the store::attempt_record that
// commits it (delivered / retrying / dead-lettered, breaker bookkeeping, any state change).
// Private to delivery_engine.cpp; attempt_record.cpp also defines the replay dedup keys
// (replay_dedup_key, replay_of in delivery_engine.hpp) the record reads.

#include "delivery/delivery_engine.hpp"
#include "store/store.hpp"

#include <functional>
#include <string>

namespace wopbridge::delivery_detail {

// The outcome of one attempt as the record that commits it, given the subscription as it stands
// (its breaker count and state, carried from the batch's earlier records of it). Returns whether
// the attempt starts a run.
bool build_record(const delivery_engine::attempt_view& a, const subscription& sub,
                  const run_start_result& res, millis at, const delivery_engine_options& opts,
                  random_source& random, const std::function<std::string()>& mint_event_id,
                  attempt_record& rec);

} // namespace wopbridge::delivery_detail
