#pragma once
// The SQL behind claim_due and next_due_at, shared with the query-plan tests. Each asks per
// subscription through deliveries_unsettled (migrations 5, 11), so its cost follows
// the number of subscriptions, never the backlog of pending deliveries.

namespace wopbridge::sqlite::due_queries {

#define WB_DUE_DLV_COLS                                                                            \
    "d.id, d.subscription_id, d.tenant, d.dedup_key, d.run_id, d.status, d.attempts, d.due_at, "   \
    "d.received_at, d.updated_at, d.last_error, d.seq"

// The earliest time claim_due could take something: the first pending delivery of each active
// subscription, of each failed one (not before its probe time, and only with no probe in flight),
// and the lease expiry of anything in flight. MAX() of SQLite is NULL when an argument is.
inline constexpr const char* next_due_at =
    "SELECT MIN(t) FROM ("
    "SELECT (SELECT d.due_at FROM deliveries d WHERE d.subscription_id = s.id "
    "AND d.status = 'pending' AND d.status <> 'delivered' ORDER BY d.due_at LIMIT 1) AS t "
    "FROM subscriptions s WHERE s.state = 'active' "
    "UNION ALL "
    "SELECT MAX((SELECT d.due_at FROM deliveries d WHERE d.subscription_id = s.id "
    "AND d.status = 'pending' AND d.status <> 'delivered' ORDER BY d.due_at LIMIT 1), s.next_probe_at) AS t "
    "FROM subscriptions s WHERE s.state = 'failed' AND NOT EXISTS (SELECT 1 FROM deliveries x "
    "WHERE x.subscription_id = s.id AND x.status = 'in_flight' AND x.status <> 'delivered') "
    "UNION ALL "
    "SELECT (SELECT MIN(d.lease_until) FROM deliveries d WHERE d.subscription_id = s.id "
    "AND d.status = 'in_flight' AND d.status <> 'delivered') AS t "
    "FROM subscriptions s WHERE s.state IN ('active', 'failed'))";

// ?1 now: active subscriptions, their maxConcurrency and (when bounded) their unexpired leases.
inline constexpr const char* active_subscriptions =
    "SELECT s.id, s.max_concurrency, CASE WHEN s.max_concurrency > 0 THEN (SELECT COUNT(*) "
    "FROM deliveries x WHERE x.subscription_id = s.id AND x.status = 'in_flight' AND x.status <> 'delivered' "
    "AND x.lease_until > ?1) ELSE 0 END FROM subscriptions s WHERE s.state = 'active'";

// ?1 subscription, ?2 now, ?3 limit: its due pending deliveries, oldest first, in index order.
inline constexpr const char* due_pending_of_subscription =
    "SELECT " WB_DUE_DLV_COLS " FROM deliveries d WHERE d.subscription_id = ?1 "
    "AND d.status = 'pending' AND d.status <> 'delivered' AND d.due_at <= ?2 ORDER BY d.due_at, d.seq LIMIT ?3";

// ?1 subscription, ?2 now, ?3 limit: its in-flight deliveries whose lease has run out.
inline constexpr const char* expired_leases_of_subscription =
    "SELECT " WB_DUE_DLV_COLS " FROM deliveries d WHERE d.subscription_id = ?1 "
    "AND d.status = 'in_flight' AND d.status <> 'delivered' AND d.lease_until <= ?2 ORDER BY d.due_at, d.seq LIMIT ?3";

// ?1 now: failed subscriptions due for a half-open probe that have no unexpired probe in flight.
inline constexpr const char* probe_due_subscriptions =
    "SELECT s.id FROM subscriptions s WHERE s.state = 'failed' AND s.next_probe_at <= ?1 "
    "AND NOT EXISTS (SELECT 1 FROM deliveries x WHERE x.subscription_id = s.id "
    "AND x.status = 'in_flight' AND x.status <> 'delivered' AND x.lease_until > ?1)";

#undef WB_DUE_DLV_COLS

} // namespace wopbridge::sqlite::due_queries
