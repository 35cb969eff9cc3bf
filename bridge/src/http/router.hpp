#pragma once
// The route table's shape and the matcher (404 / 405 + Allow); the rows are in routes.cpp. Patterns
// use the OpenAPI path-template syntax ("/v1/runs/{runId}") so the table and schemas/openapi.json
// can be compared one to one.

#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace wopbridge::http {

class http_api;
struct api_context;

// Who may call a route.
enum class route_auth {
    none,         // open: discovery, health, the dashboard's files, ingest (the verifier decides)
    api_key,      // a bearer API key, carrying `scope` when one is named
    optional_key, // open; a key, when sent, must be valid and carry `scope` (it widens the answer)
};

// What serves a matched request. Handlers that may touch the store run on the API's task
// scheduler; `on_io_thread` ones answer from memory on the connection's own thread.
using route_handler = void (*)(http_api& api, const std::shared_ptr<api_context>& ctx);

// One row of the table, written with designated initialisers: a new route is one row (method,
// pattern, who may call it, its handler) plus the handler itself. schemas/openapi.json is checked
// against the rows (OpenApiTest), and the security matrix walks them (SecurityMatrixTest).
struct route {
    std::string_view method;
    std::string_view pattern;
    route_auth auth = route_auth::none;
    std::string_view scope = {}; // required scope ("" = any valid key)
    bool ingest_body = false;    // the ingest body limit applies
    bool seam = false;           // served only when test seams are enabled
    bool greedy_tail = false;    // the last {param} takes the rest of the path, slashes included
    bool on_io_thread = false;   // answered in memory, never posted to the task scheduler
    route_handler handler = nullptr;
};

// The full table, in match order (routes.cpp).
std::span<const route> route_table() noexcept;

struct route_match {
    const route* matched = nullptr;            // set when status == 200
    int status = 404;                          // 200, 404 or 405
    std::string allow;                         // for 405: "GET, PATCH"
    std::map<std::string, std::string> params; // percent-decoded
};

route_match match_route(std::span<const route> table, std::string_view method,
                        std::string_view path);

} // namespace wopbridge::http
