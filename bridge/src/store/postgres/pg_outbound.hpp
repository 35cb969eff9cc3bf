#pragma once
// SQL of the outbound-webhook tables on PostgreSQL (migration 2), the counterpart of
// store/sqlite/sqlite_outbound. Free functions over a connection; the caller (postgres_store) owns
// the transaction. Claims lock the webhook rows they serve (SKIP LOCKED), so the per-webhook
// in-flight limit holds across nodes.

#include "store/postgres/pg_connection.hpp"
#include "store/store.hpp"

#include <string>

namespace wopbridge::postgres::outbound {

// The transactional outbox as one INSERT for a data-modifying CTE: the rows of `events_relation`
// (columns run_id, sequence, type) for every active webhook of the tenant `tenant_expr` subscribed
// to the type, due at `at_param`. Idempotent on (webhook_id, run_id, sequence). postgres_store
// appends it to its run-event inserts, so the outbox costs no extra round trip.
std::string enqueue_cte(const std::string& events_relation, const std::string& tenant_expr,
                        const std::string& at_param);

result<int> enqueue(connection& c, const std::string& run_id, std::int64_t sequence, millis at);

result<void> insert_webhook(connection& c, const outbound_webhook& w);
result<outbound_webhook> get_webhook(connection& c, const std::string& id);
result<std::vector<outbound_webhook>> list_webhooks(connection& c, const std::string& tenant);
result<void> delete_webhook(connection& c, const std::string& id);
// Must run inside a transaction (the webhook row locks last until its commit).
result<std::vector<outbound_delivery>> claim_due(connection& c, millis now, int limit,
                                                 int per_webhook_limit, millis lease_ms);
// Must run inside a transaction.
result<void> record_attempt(connection& c, const outbound_attempt& a);
result<int> count_failures(connection& c, const std::string& webhook_id, millis since);
result<std::optional<millis>> next_due_at(connection& c);
result<std::vector<outbound_delivery>> list_deliveries(connection& c,
                                                       const std::string& webhook_id);
result<page<outbound_dead_letter>> list_dead_letters(connection& c, const std::string& webhook_id,
                                                     const page_request& req, millis now);
result<std::vector<outbound_state_change>> list_state_changes(connection& c,
                                                              const std::string& webhook_id);

} // namespace wopbridge::postgres::outbound
