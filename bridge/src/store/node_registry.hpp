#pragma once
// The store's role for the claims of bridge nodes: who is alive, and freeing the claims of those
// that are not. Each backend answers the half that does not apply to it with unsupported.

#include "contract/types.hpp"
#include "core/error.hpp"

namespace wopbridge {

class node_registry {
public:
    virtual ~node_registry() = default;

    // For a store only this process serves (SQLite, under serve's lock): the claims a previous
    // process left (deliveries and bulk replay jobs) are claimable now rather than when their
    // leases run out. Returns how many deliveries.
    // Backends shared by several nodes answer unsupported (another node's claims are live).
    virtual result<int> release_all_claims() = 0;
    // Stores shared by several nodes (PostgreSQL): this node is alive (a beat every second or so),
    // and the deliveries claimed by a node silent for longer than `silent_ms`, by the database's
    // clock, are claimable now rather than when their leases run out. Returns how many were
    // freed. Single-node stores answer unsupported (serve's lock and release_all_claims cover
    // them).
    virtual result<int> keep_node_alive(millis silent_ms) = 0;
    // This node stops: it is no longer listed and its unsettled claims are claimable at once.
    // Single-node stores answer unsupported.
    virtual result<void> leave_cluster() = 0;
};

} // namespace wopbridge
