#pragma once
// The route table of the HTTP surface and the matcher (404 / 405 + Allow). Patterns use the
// OpenAPI path-template syntax ("/v1/runs/{runId}") so the table and schemas/openapi.json can be
// compared one to one.

#include <map>
#include <span>
#include <string>
#include <string_view>

namespace wopbridge::http {

enum class route_id {
    well_known,
    openapi,
    healthz,
    readyz,
    subscription_create,
    subscription_list,
    subscription_get,
    subscription_patch,
    subscription_delete,
    subscription_deliveries,
    subscription_dead_letters,
    ingest,
    ingest_connector_path,
    run_get,
    run_events_poll,
    run_events_stream,
    run_output,
    seam_deliver,
    seam_events,
    seam_reset,
    dead_letter_replay,      // ops_handlers.cpp
    dead_letters_replay,
    replay_job_get,
    metrics,
    // outbound run-event webhooks (webhook_handlers.cpp)
    webhook_create,
    webhook_list,
    webhook_delete,
    webhook_dead_letters,
    // operator views (ops_handlers.cpp) and the dashboard's static assets (ui_handlers.cpp)
    subscriptions_overview,
    ui_index,
    ui_asset,
    // appended: the run listing (run_list_handlers.cpp) and dead letters with their replays
    run_list,
    subscription_dead_letters_view,
    ops_changes,
};

struct route {
    std::string_view method;
    std::string_view pattern;
    route_id id;
    bool authenticated;       // bearer API key required
    std::string_view scope;   // required scope ("" = any authenticated key)
    bool ingest_body = false; // the ingest body limit applies
    bool seam = false;        // served only when test seams are enabled
    bool greedy_tail = false; // the last {param} takes the rest of the path, slashes included
};

// The full table, in match order.
std::span<const route> route_table() noexcept;

struct route_match {
    const route* matched = nullptr;       // set when status == 200
    int status = 404;                      // 200, 404 or 405
    std::string allow;                     // for 405: "GET, PATCH"
    std::map<std::string, std::string> params; // percent-decoded
};

route_match match_route(std::span<const route> table, std::string_view method,
                        std::string_view path);

} // namespace wopbridge::http
