#pragma once
// The store's role for subscription rows (see store.hpp for the transaction and threading rules).

#include "contract/types.hpp"
#include "core/error.hpp"

#include <string>
#include <vector>

namespace wopbridge {

class subscription_store {
public:
    virtual ~subscription_store() = default;

    virtual result<void> insert_subscription(const subscription& s) = 0;          // already_exists
    virtual result<void> upsert_config_subscription(const subscription& s) = 0;   // keeps state + breaker
    virtual result<subscription> get_subscription(const std::string& id) = 0;     // not_found
    virtual result<std::vector<subscription>> list_subscriptions(const std::string& tenant) = 0;
    virtual result<std::vector<subscription>> list_all_subscriptions() = 0;
    virtual result<void> delete_subscription(const std::string& id) = 0;
    // Compare-and-set of the state: fails with conflict when the stored state != expected_from.
    // Appends the state change to the subscription's run-less event log in the same transaction.
    virtual result<void> change_state(const state_change& change, const std::string& event_id,
                                      millis at) = 0;

    // Connector secrets sealed at rest: compare-and-set of a subscription's
    // connector_settings_json in one statement: false when the stored value is not `expected`
    // (changed meanwhile, by this node or another) or the subscription is gone. Nothing else of
    // the row changes.
    virtual result<bool> replace_connector_settings(const std::string& id,
                                                    const std::string& expected,
                                                    const std::string& replacement) = 0;
};

} // namespace wopbridge
