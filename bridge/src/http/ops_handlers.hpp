#pragma once
// Operator routes: dead-letter replay (one and bulk), replay job status, and GET /metrics.
// Free functions over http_api::context so the api's own files only gain dispatch lines.

#include "http/api.hpp"

namespace wopbridge::http::ops {

// POST /v1/trigger-subscriptions/{subscriptionId}/dead-letters/{attemptEventId}/replay
void replay_one(http_api::context& ctx, operations_api& bridge);
// POST /v1/trigger-subscriptions/{subscriptionId}/dead-letters/replay
void replay_bulk(http_api::context& ctx, operations_api& bridge);
// GET /v1/replay-jobs/{jobId}
void replay_job(http_api::context& ctx, operations_api& bridge);
// GET /metrics (Prometheus text)
void metrics(http_api::context& ctx, operations_api& bridge);
// GET /v1/ops/subscriptions (the dashboard's list: counts and newest delivery per subscription)
void overview(http_api::context& ctx, subscription_api& bridge);
// GET /v1/runs?subscriptionId=&workflowId=&status=&from=&to=&limit=&cursor= 
void list_runs(http_api::context& ctx, bridge_api& bridge);
// GET /v1/ops/subscriptions/{subscriptionId}/dead-letters: dead letters with their replay state
void dead_letters_view(http_api::context& ctx, bridge_api& bridge);

} // namespace wopbridge::http::ops
