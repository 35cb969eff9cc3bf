#pragma once
// SQL of the outbound-webhook tables (migration 2). Free functions over a connection: the caller
// (sqlite_store) owns the transaction and the connection's mutex.

#include "store/sqlite/sqlite_connection.hpp"
#include "store/store.hpp"

namespace wopbridge::sqlite::outbound {

// The outbox rows of one run event, for every active webhook of the run's tenant subscribed to
// its type. Idempotent on (webhook_id, run_id, sequence). Returns rows inserted.
result<int> enqueue(connection& c, const std::string& run_id, std::int64_t sequence, millis at);

result<void> insert_webhook(connection& c, const outbound_webhook& w);
result<outbound_webhook> get_webhook(connection& c, const std::string& id);
result<std::vector<outbound_webhook>> list_webhooks(connection& c, const std::string& tenant);
result<void> delete_webhook(connection& c, const std::string& id);
result<std::vector<outbound_delivery>> claim_due(connection& c, millis now, int limit,
                                                 int per_webhook_limit, millis lease_ms);
result<void> record_attempt(connection& c, const outbound_attempt& a);
result<int> count_failures(connection& c, const std::string& webhook_id, millis since);
result<std::optional<millis>> next_due_at(connection& c);
result<std::vector<outbound_delivery>> list_deliveries(connection& c, const std::string& webhook_id);
result<page<outbound_dead_letter>> list_dead_letters(connection& c, const std::string& webhook_id,
                                                     const page_request& req, millis now);
result<std::vector<outbound_state_change>> list_state_changes(connection& c,
                                                              const std::string& webhook_id);

} // namespace wopbridge::sqlite::outbound
