// Conformance seams under /v1/host/sample/ (CONTRACT.md (g)); routed only when test_seams is on.

#include "contract/wire.hpp"
#include "http/api.hpp"
#include "http/api_helpers.hpp"

#include <boost/json/array.hpp>
#include <boost/json/parse.hpp>

namespace wopbridge::http {

namespace json = boost::json;

void http_api::seam_deliver(context& ctx) {
    boost::system::error_code ec;
    auto v = json::parse(ctx.req.body.empty() ? std::string_view("{}") : ctx.req.body, ec);
    if (ec || !v.is_object()) {
        ctx.sink->send(validation_error("body", "the body must be a JSON object"));
        return;
    }
    const auto& o = v.as_object();
    seam_deliver_request req;
    req.tenant = ctx.who.tenant;
    const auto* scenario = o.if_contains("scenario");
    if (!scenario || !scenario->is_string()) {
        ctx.sink->send(
            validation_error("scenario", "scenario must be dedup, exhaust, deliver or refused"));
        return;
    }
    req.scenario = std::string(scenario->as_string());
    if (req.scenario != "dedup" && req.scenario != "exhaust" && req.scenario != "deliver" &&
        req.scenario != "refused") {
        ctx.sink->send(
            validation_error("scenario", "scenario must be dedup, exhaust, deliver or refused"));
        return;
    }
    if (const auto* id = o.if_contains("subscriptionId")) {
        if (!id->is_string() || id->as_string().empty() || req.scenario != "deliver") {
            ctx.sink->send(validation_error(
                "subscriptionId", "subscriptionId must be a non-empty string, with scenario deliver"));
            return;
        }
        req.subscription_id = std::string(id->as_string());
    }
    if (const auto* k = o.if_contains("dedupKey")) {
        if (!k->is_string() || k->as_string().empty()) {
            ctx.sink->send(validation_error("dedupKey", "dedupKey must be a non-empty string"));
            return;
        }
        req.dedup_key = std::string(k->as_string());
    }
    req.source = "webhook";
    if (const auto* s = o.if_contains("source")) {
        if (!s->is_string() || !wire::parse_source(s->as_string())) {
            ctx.sink->send(validation_error("source", "unsupported source"));
            return;
        }
        req.source = std::string(s->as_string());
    }
    auto r = bridge_.seam_deliver(req);
    if (!r) {
        detail::reply_error(ctx, r.error());
        return;
    }
    json::object body;
    if (!r->run_id.empty()) {
        body["runId"] = r->run_id;
    }
    if (!r->subscription_id.empty()) {
        body["subscriptionId"] = r->subscription_id;
    }
    if (!r->outcome.empty()) {
        body["outcome"] = r->outcome;
    }
    if (!r->subscription_state.empty()) {
        body["subscriptionState"] = r->subscription_state;
    }
    body["deliveredCount"] = r->delivered_count;
    detail::reply_json(ctx, 200, body);
}

void http_api::seam_events(context& ctx) {
    const auto& run_id = ctx.param("runId");
    json::array events;
    auto r = bridge_.seam_events(ctx.who.tenant, run_id);
    if (!r && r.error() != errc::not_found) {
        detail::reply_error(ctx, r.error());
        return;
    }
    // An unknown id (the suite's `__probe__`) answers an empty list: 404 would mean "no seam".
    if (r) {
        auto type = ctx.req.query_param("type");
        auto causation = ctx.req.query_param("causationId");
        for (const auto& e : *r) {
            if (type && !type->empty() && e.type != *type) {
                continue;
            }
            if (causation && !causation->empty() && e.causation_id != *causation) {
                continue;
            }
            events.push_back(wire::run_event(e));
        }
    }
    detail::reply_json(ctx, 200, json::object{{"events", std::move(events)}});
}

void http_api::seam_reset(context& ctx) {
    auto r = bridge_.seam_reset(ctx.who.tenant);
    if (!r) {
        detail::reply_error(ctx, r.error());
        return;
    }
    detail::reply_json(ctx, 200, json::object{{"reset", true}});
}

} // namespace wopbridge::http
