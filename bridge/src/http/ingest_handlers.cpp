// /v1/ingest/{subscriptionId}[/...]: no bearer credential; the signature (or the connector)
// authenticates. Connector-backed subscriptions are handed to the ingest_router; `source: webhook`
// goes to the bridge's Standard Webhooks intake. The reply is sent only after the intake committed.

#include "http/api.hpp"
#include "http/api_helpers.hpp"

#include <boost/json/object.hpp>

namespace wopbridge::http {

namespace json = boost::json;

namespace {

http_response submit_response(const submit_result& r) {
    if (r.handshake) {
        http_response res;
        res.status = r.handshake->status;
        res.set_header("content-type", r.handshake->content_type);
        res.body = r.handshake->body;
        return res;
    }
    auto m = map_submit_status(r.status);
    switch (r.status) {
    case submit_status::accepted:
    case submit_status::held: {
        json::object body{{"outcome", r.status == submit_status::accepted ? "delivered" : "held"},
                          {"runId", r.run_id}};
        if (!r.delivery_id.empty()) {
            body["deliveryId"] = r.delivery_id;
        }
        return http_response::json(202, json::serialize(body));
    }
    case submit_status::duplicate:
        return http_response::json(
            200, json::serialize(json::object{{"outcome", "duplicate"}, {"runId", r.run_id}}));
    case submit_status::overloaded:
    case submit_status::unavailable: {
        int retry = r.retry_after_seconds > 0 ? r.retry_after_seconds : m.retry_after_seconds;
        return error_response(503, "service_unavailable", "try again later", std::nullopt, retry);
    }
    case submit_status::signature_invalid:
        return error_response(m, "the request signature could not be verified");
    case submit_status::not_active:
        return error_response(m, "the subscription is not active");
    case submit_status::not_found:
        return error_response(m, "no such subscription");
    case submit_status::invalid:
        return error_response(m, r.message.empty() ? "the request is malformed" : r.message);
    }
    return error_response(500, "internal_error", "internal error");
}

} // namespace

void http_api::ingest(std::shared_ptr<context> ctx) {
    const auto& id = ctx->param("subscriptionId");
    auto sub = bridge_.find_subscription(id);
    if (!sub) {
        if (sub.error() == make_error_code(errc::not_found)) {
            bridge_.count_ingest(id, submit_status::not_found); // as subscription="unknown"
        }
        detail::reply_error(*ctx, sub.error());
        return;
    }
    if (rate_limited_by_subscription(*ctx, sub->id)) {
        return;
    }
    inbound_http_request in;
    in.method = ctx->req.method;
    in.target = ctx->req.target;
    // The request is not read again past here: its headers and body move, not copy.
    in.headers = std::move(ctx->req.headers);
    in.body = std::move(ctx->req.body);
    in.remote_address = ctx->req.remote;
    in.public_base = ctx->req.public_base;

    auto sink = ctx->sink; // callbacks own the sink only, never the api
    if (router_ && router_->serves(*sub)) {
        router_->handle(*sub, in, [sink](ingest_reply reply) {
            http_response res;
            res.status = reply.status;
            for (auto& [k, v] : reply.headers) {
                res.set_header(std::move(k), std::move(v));
            }
            res.body = std::move(reply.body);
            sink->send(std::move(res));
        });
        return;
    }
    if (sub->source != source_kind::webhook || !sub->connector.empty()) {
        // A connector-backed subscription whose module is not loaded.
        sink->send(error_response(503, "service_unavailable",
                                  "the connector serving this subscription is not available",
                                  std::nullopt, 30));
        return;
    }
    if (ctx->params.contains("connectorPath")) {
        // Sub-paths exist only for connectors; on a plain webhook subscription there is no such
        // resource (a 405 would claim that POST there could work).
        sink->send(error_response(404, "not_found", "no such path under this subscription"));
        return;
    }
    if (ctx->req.method != "POST") {
        auto res = error_response(405, "method_not_allowed", "webhook ingest accepts POST only");
        res.set_header("allow", "POST");
        sink->send(std::move(res));
        return;
    }
    bridge_.ingest_webhook(*sub, in,
                               [sink](submit_result r) { sink->send(submit_response(r)); });
}

} // namespace wopbridge::http
