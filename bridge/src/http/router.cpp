#include "http/router.hpp"

#include <wopbridge/http_util.hpp>

#include <array>
#include <vector>

namespace wopbridge::http {

namespace {

constexpr std::array<route, 37> routes{{
    {"GET", "/.well-known/openwop", route_id::well_known, false, ""},
    {"GET", "/v1/openapi.json", route_id::openapi, false, ""},
    {"GET", "/healthz", route_id::healthz, false, ""},
    {"GET", "/readyz", route_id::readyz, false, ""},
    {"POST", "/v1/trigger-subscriptions", route_id::subscription_create, true, "webhooks:manage"},
    {"GET", "/v1/trigger-subscriptions", route_id::subscription_list, true, "webhooks:manage"},
    {"GET", "/v1/trigger-subscriptions/{subscriptionId}", route_id::subscription_get, true,
     "webhooks:manage"},
    {"PATCH", "/v1/trigger-subscriptions/{subscriptionId}", route_id::subscription_patch, true,
     "webhooks:manage"},
    {"DELETE", "/v1/trigger-subscriptions/{subscriptionId}", route_id::subscription_delete, true,
     "webhooks:manage"},
    {"GET", "/v1/trigger-subscriptions/{subscriptionId}/deliveries",
     route_id::subscription_deliveries, true, "webhooks:manage"},
    {"GET", "/v1/trigger-subscriptions/{subscriptionId}/dead-letters",
     route_id::subscription_dead_letters, true, "webhooks:manage"},
    {"POST", "/v1/trigger-subscriptions/{subscriptionId}/dead-letters/{attemptEventId}/replay",
     route_id::dead_letter_replay, true, "webhooks:manage"},
    {"POST", "/v1/trigger-subscriptions/{subscriptionId}/dead-letters/replay",
     route_id::dead_letters_replay, true, "webhooks:manage"},
    {"GET", "/v1/replay-jobs/{jobId}", route_id::replay_job_get, true, "webhooks:manage"},
    {"GET", "/metrics", route_id::metrics, false, ""},
    {"GET", "/v1/ops/subscriptions", route_id::subscriptions_overview, true, "webhooks:manage"},
    {"GET", "/v1/ops/changes", route_id::ops_changes, true, "webhooks:manage"},
    {"GET", "/v1/ops/subscriptions/{subscriptionId}/dead-letters",
     route_id::subscription_dead_letters_view, true, "webhooks:manage"},
    {"GET", "/ui", route_id::ui_index, false, ""},
    {"GET", "/ui/", route_id::ui_index, false, ""},
    {"GET", "/ui/{asset}", route_id::ui_asset, false, ""},
    {"POST", "/v1/ingest/{subscriptionId}", route_id::ingest, false, "", true},
    {"GET", "/v1/ingest/{subscriptionId}", route_id::ingest, false, "", true},
    {"POST", "/v1/ingest/{subscriptionId}/{connectorPath}", route_id::ingest_connector_path, false,
     "", true, false, true},
    {"GET", "/v1/ingest/{subscriptionId}/{connectorPath}", route_id::ingest_connector_path, false,
     "", true, false, true},
    {"POST", "/v1/webhooks", route_id::webhook_create, true, "webhooks:manage"},
    {"GET", "/v1/webhooks", route_id::webhook_list, true, "webhooks:manage"},
    {"DELETE", "/v1/webhooks/{webhookId}", route_id::webhook_delete, true, "webhooks:manage"},
    {"GET", "/v1/webhooks/{webhookId}/dead-letters", route_id::webhook_dead_letters, true,
     "webhooks:manage"},
    {"GET", "/v1/runs", route_id::run_list, true, "runs:read"},
    {"GET", "/v1/runs/{runId}", route_id::run_get, true, "runs:read"},
    {"GET", "/v1/runs/{runId}/events/poll", route_id::run_events_poll, true, "runs:read"},
    {"GET", "/v1/runs/{runId}/events", route_id::run_events_stream, true, "runs:read"},
    {"GET", "/v1/runs/{runId}/output", route_id::run_output, true, "runs:read"},
    {"POST", "/v1/host/sample/trigger-bridge/deliver", route_id::seam_deliver, true, "runs:create",
     false, true},
    {"GET", "/v1/host/sample/test/runs/{runId}/events", route_id::seam_events, true, "runs:read",
     false, true},
    {"POST", "/v1/host/sample/test/reset", route_id::seam_reset, true, "runs:create", false, true},
}};

std::vector<std::string_view> split(std::string_view path) {
    std::vector<std::string_view> out;
    if (path.empty() || path.front() != '/') {
        return out;
    }
    path.remove_prefix(1);
    while (true) {
        auto slash = path.find('/');
        out.push_back(path.substr(0, slash));
        if (slash == std::string_view::npos) {
            break;
        }
        path.remove_prefix(slash + 1);
    }
    return out;
}

// Matches one pattern against the path segments; fills params.
bool match_pattern(const route& r, const std::vector<std::string_view>& segs,
                   std::string_view path, std::map<std::string, std::string>& params) {
    auto pat = split(r.pattern);
    if (r.greedy_tail) {
        if (segs.size() < pat.size()) {
            return false;
        }
    } else if (segs.size() != pat.size()) {
        return false;
    }
    std::map<std::string, std::string> found;
    for (std::size_t i = 0; i < pat.size(); ++i) {
        auto p = pat[i];
        bool is_param = p.size() > 2 && p.front() == '{' && p.back() == '}';
        if (!is_param) {
            if (p != segs[i]) {
                return false;
            }
            continue;
        }
        std::string name(p.substr(1, p.size() - 2));
        if (r.greedy_tail && i + 1 == pat.size()) {
            // The rest of the path, from this segment on.
            auto offset = static_cast<std::size_t>(segs[i].data() - path.data());
            auto rest = path.substr(offset);
            if (rest.empty()) {
                return false;
            }
            found[name] = std::string(rest);
            continue;
        }
        if (segs[i].empty()) {
            return false;
        }
        found[name] = percent_decode_lenient(segs[i]);
    }
    params = std::move(found);
    return true;
}

} // namespace

std::span<const route> route_table() noexcept {
    return std::span<const route>(routes.data(), routes.size());
}

route_match match_route(std::span<const route> table, std::string_view method,
                        std::string_view path) {
    auto segs = split(path);
    route_match out;
    std::string allow;
    for (const auto& r : table) {
        std::map<std::string, std::string> params;
        if (!match_pattern(r, segs, path, params)) {
            continue;
        }
        if (r.method == method) {
            // A more specific pattern later in the table (e.g. /events/poll vs greedy) never
            // collides here: literal segments decide first.
            out.matched = &r;
            out.status = 200;
            out.params = std::move(params);
            return out;
        }
        if (allow.find(r.method) == std::string::npos) {
            if (!allow.empty()) {
                allow += ", ";
            }
            allow += r.method;
        }
    }
    if (!allow.empty()) {
        out.status = 405;
        out.allow = std::move(allow);
    }
    return out;
}

} // namespace wopbridge::http
