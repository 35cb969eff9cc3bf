// The HTTP surface, one row per route: method, pattern, who may call it, and its handler. The
// lambdas are http_api's (routes() is a member), so they reach its private handlers; each is
// captureless and becomes a plain function pointer.

#include "core/scopes.hpp"
#include "http/api.hpp"
#include "http/api_helpers.hpp"
#include "http/ops_handlers.hpp"
#include "http/ui_assets.hpp"

#include <array>

namespace wopbridge::http {

namespace {
using ctx_ptr = std::shared_ptr<api_context>;
constexpr auto key = route_auth::api_key;
constexpr auto manage = scope_webhooks_manage;
constexpr auto runs_read = scope_runs_read;
constexpr auto runs_create = scope_runs_create;
} // namespace

std::span<const route> http_api::routes() noexcept {
    static constexpr std::array table{
        // Discovery and health
        route{.method = "GET",
              .pattern = "/.well-known/openwop",
              .on_io_thread = true,
              .handler = [](http_api& a, const ctx_ptr& c) { a.well_known(*c); }},
        route{.method = "GET",
              .pattern = "/v1/openapi.json",
              .on_io_thread = true,
              .handler = [](http_api& a, const ctx_ptr& c) { a.openapi(*c); }},
        route{.method = "GET",
              .pattern = "/healthz",
              .on_io_thread = true,
              .handler =
                  [](http_api&, const ctx_ptr& c) {
                      detail::reply_json(*c, 200, boost::json::object{{"status", "ok"}});
                  }},
        route{.method = "GET",
              .pattern = "/readyz",
              .handler = [](http_api& a, const ctx_ptr& c) { a.readyz(*c); }},
        // Subscriptions (subscription_handlers.cpp)
        route{.method = "POST",
              .pattern = "/v1/trigger-subscriptions",
              .auth = key,
              .scope = manage,
              .handler = [](http_api& a, const ctx_ptr& c) { a.create_subscription(*c); }},
        route{.method = "GET",
              .pattern = "/v1/trigger-subscriptions",
              .auth = key,
              .scope = manage,
              .handler = [](http_api& a, const ctx_ptr& c) { a.list_subscriptions(*c); }},
        route{.method = "GET",
              .pattern = "/v1/trigger-subscriptions/{subscriptionId}",
              .auth = key,
              .scope = manage,
              .handler = [](http_api& a, const ctx_ptr& c) { a.get_subscription(*c); }},
        route{.method = "PATCH",
              .pattern = "/v1/trigger-subscriptions/{subscriptionId}",
              .auth = key,
              .scope = manage,
              .handler = [](http_api& a, const ctx_ptr& c) { a.patch_subscription(*c); }},
        route{.method = "DELETE",
              .pattern = "/v1/trigger-subscriptions/{subscriptionId}",
              .auth = key,
              .scope = manage,
              .handler = [](http_api& a, const ctx_ptr& c) { a.delete_subscription(*c); }},
        route{.method = "GET",
              .pattern = "/v1/trigger-subscriptions/{subscriptionId}/deliveries",
              .auth = key,
              .scope = manage,
              .handler = [](http_api& a, const ctx_ptr& c) { a.list_deliveries(*c); }},
        route{.method = "GET",
              .pattern = "/v1/trigger-subscriptions/{subscriptionId}/dead-letters",
              .auth = key,
              .scope = manage,
              .handler = [](http_api& a, const ctx_ptr& c) { a.list_dead_letters(*c); }},
        // Replays and metrics (ops_handlers.cpp)
        route{.method = "POST",
              .pattern =
                  "/v1/trigger-subscriptions/{subscriptionId}/dead-letters/{attemptEventId}/replay",
              .auth = key,
              .scope = manage,
              .handler = [](http_api& a, const ctx_ptr& c) { ops::replay_one(*c, a.bridge_); }},
        route{.method = "POST",
              .pattern = "/v1/trigger-subscriptions/{subscriptionId}/dead-letters/replay",
              .auth = key,
              .scope = manage,
              .handler = [](http_api& a, const ctx_ptr& c) { ops::replay_bulk(*c, a.bridge_); }},
        route{.method = "GET",
              .pattern = "/v1/replay-jobs/{jobId}",
              .auth = key,
              .scope = manage,
              .handler = [](http_api& a, const ctx_ptr& c) { ops::replay_job(*c, a.bridge_); }},
        // Without a key the scrape is aggregate only; a key with webhooks:manage adds its
        // tenant's per-subscription series (their ids are ingest URLs).
        route{.method = "GET",
              .pattern = "/metrics",
              .auth = route_auth::optional_key,
              .scope = manage,
              .handler = [](http_api& a, const ctx_ptr& c) { ops::metrics(*c, a.bridge_); }},
        // Operator views (ops_handlers.cpp, change_stream.cpp) and the dashboard (ui_handlers.cpp)
        route{.method = "GET",
              .pattern = "/v1/ops/subscriptions",
              .auth = key,
              .scope = manage,
              .handler = [](http_api& a, const ctx_ptr& c) { ops::overview(*c, a.bridge_); }},
        route{.method = "GET",
              .pattern = "/v1/ops/changes",
              .auth = key,
              .scope = manage,
              .handler = [](http_api& a, const ctx_ptr& c) { a.stream_changes(c); }},
        route{.method = "GET",
              .pattern = "/v1/ops/subscriptions/{subscriptionId}/dead-letters",
              .auth = key,
              .scope = manage,
              .handler = [](http_api& a,
                            const ctx_ptr& c) { ops::dead_letters_view(*c, a.bridge_); }},
        route{.method = "GET",
              .pattern = "/ui",
              .on_io_thread = true,
              .handler = [](http_api&,
                            const ctx_ptr& c) { c->sink->send(ui::serve(c->req, "index.html")); }},
        route{.method = "GET",
              .pattern = "/ui/",
              .on_io_thread = true,
              .handler = [](http_api&,
                            const ctx_ptr& c) { c->sink->send(ui::serve(c->req, "index.html")); }},
        route{.method = "GET",
              .pattern = "/ui/{asset}",
              .on_io_thread = true,
              .handler =
                  [](http_api&, const ctx_ptr& c) {
                      c->sink->send(ui::serve(c->req, c->param("asset")));
                  }},
        // Intake (ingest_handlers.cpp): open, the subscription's verifier authenticates.
        route{.method = "POST",
              .pattern = "/v1/ingest/{subscriptionId}",
              .ingest_body = true,
              .handler = [](http_api& a, const ctx_ptr& c) { a.ingest(c); }},
        route{.method = "GET",
              .pattern = "/v1/ingest/{subscriptionId}",
              .ingest_body = true,
              .handler = [](http_api& a, const ctx_ptr& c) { a.ingest(c); }},
        route{.method = "POST",
              .pattern = "/v1/ingest/{subscriptionId}/{connectorPath}",
              .ingest_body = true,
              .greedy_tail = true,
              .handler = [](http_api& a, const ctx_ptr& c) { a.ingest(c); }},
        route{.method = "GET",
              .pattern = "/v1/ingest/{subscriptionId}/{connectorPath}",
              .ingest_body = true,
              .greedy_tail = true,
              .handler = [](http_api& a, const ctx_ptr& c) { a.ingest(c); }},
        // Outbound run-event webhooks (webhook_handlers.cpp)
        route{.method = "POST",
              .pattern = "/v1/webhooks",
              .auth = key,
              .scope = manage,
              .handler = [](http_api& a, const ctx_ptr& c) { a.create_webhook(*c); }},
        route{.method = "GET",
              .pattern = "/v1/webhooks",
              .auth = key,
              .scope = manage,
              .handler = [](http_api& a, const ctx_ptr& c) { a.list_webhooks(*c); }},
        route{.method = "DELETE",
              .pattern = "/v1/webhooks/{webhookId}",
              .auth = key,
              .scope = manage,
              .handler = [](http_api& a, const ctx_ptr& c) { a.delete_webhook(*c); }},
        route{.method = "GET",
              .pattern = "/v1/webhooks/{webhookId}/dead-letters",
              .auth = key,
              .scope = manage,
              .handler = [](http_api& a, const ctx_ptr& c) { a.list_webhook_dead_letters(*c); }},
        // Runs (run_handlers.cpp, run_list_handlers.cpp)
        route{.method = "GET",
              .pattern = "/v1/runs",
              .auth = key,
              .scope = runs_read,
              .handler = [](http_api& a, const ctx_ptr& c) { ops::list_runs(*c, a.bridge_); }},
        route{.method = "GET",
              .pattern = "/v1/runs/{runId}",
              .auth = key,
              .scope = runs_read,
              .handler = [](http_api& a, const ctx_ptr& c) { a.get_run(*c); }},
        route{.method = "GET",
              .pattern = "/v1/runs/{runId}/events/poll",
              .auth = key,
              .scope = runs_read,
              .handler = [](http_api& a, const ctx_ptr& c) { a.poll_events(c); }},
        route{.method = "GET",
              .pattern = "/v1/runs/{runId}/events",
              .auth = key,
              .scope = runs_read,
              .handler = [](http_api& a, const ctx_ptr& c) { a.stream_events(c); }},
        route{.method = "GET",
              .pattern = "/v1/runs/{runId}/output",
              .auth = key,
              .scope = runs_read,
              .handler = [](http_api& a, const ctx_ptr& c) { a.get_run_output(*c); }},
        // Test seams (seam_handlers.cpp; CONTRACT.md §g), only with testSeams on
        route{.method = "POST",
              .pattern = "/v1/host/sample/trigger-bridge/deliver",
              .auth = key,
              .scope = runs_create,
              .seam = true,
              .handler = [](http_api& a, const ctx_ptr& c) { a.seam_deliver(*c); }},
        route{.method = "GET",
              .pattern = "/v1/host/sample/test/runs/{runId}/events",
              .auth = key,
              .scope = runs_read,
              .seam = true,
              .handler = [](http_api& a, const ctx_ptr& c) { a.seam_events(*c); }},
        route{.method = "POST",
              .pattern = "/v1/host/sample/test/reset",
              .auth = key,
              .scope = runs_create,
              .seam = true,
              .handler = [](http_api& a, const ctx_ptr& c) { a.seam_reset(*c); }},
    };
    return table;
}

std::span<const route> route_table() noexcept {
    return http_api::routes();
}

} // namespace wopbridge::http
