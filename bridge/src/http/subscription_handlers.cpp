// POST/GET/PATCH/DELETE /v1/trigger-subscriptions[...]: registration, reads, pause/resume, pages.

#include "contract/wire.hpp"
#include "http/api.hpp"
#include "http/api_helpers.hpp"
#include "http/registration.hpp"

#include <algorithm>

#include <boost/json/array.hpp>
#include <boost/json/parse.hpp>

namespace wopbridge::http {

namespace json = boost::json;
using detail::page_body;
using detail::reply_error;
using detail::reply_json;

namespace {

// Parses ?limit=&cursor= against the host's page size. nullopt: the error was sent.
std::optional<page_request> parse_page(http_api::context& ctx, int max_page_size) {
    page_request pr;
    pr.limit = std::min(50, max_page_size);
    if (auto limit = ctx.req.query_param("limit")) {
        long long n = 0;
        if (!detail::parse_int(*limit, n) || n < 1) {
            ctx.sink->send(validation_error("limit", "limit must be a positive integer"));
            return std::nullopt;
        }
        pr.limit = static_cast<int>(std::min<long long>(n, max_page_size));
    }
    if (auto cursor = ctx.req.query_param("cursor")) {
        if (cursor->empty() || cursor->size() > 2048) {
            ctx.sink->send(validation_error("cursor", "cursor is not valid"));
            return std::nullopt;
        }
        pr.cursor = *cursor;
    }
    return pr;
}

// A bad cursor surfaces from the store as invalid_argument: name the field.
void reply_page_error(http_api::context& ctx, const boost::system::error_code& ec) {
    if (ec == errc::invalid_argument) {
        ctx.sink->send(validation_error("cursor", "cursor is not valid for this subscription"));
        return;
    }
    reply_error(ctx, ec);
}

} // namespace

void http_api::create_subscription(context& ctx) {
    auto parsed = parse_registration(ctx.req.body, ctx.who.tenant);
    if (auto* err = std::get_if<registration_error>(&parsed)) {
        ctx.sink->send(validation_error(err->field, err->message));
        return;
    }
    auto& req = std::get<registration_request>(parsed);
    if (!req.connector.empty()) {
        const auto names = router_ ? router_->connector_names() : std::vector<std::string>{};
        if (std::find(names.begin(), names.end(), req.connector) == names.end()) {
            std::string loaded;
            for (const auto& n : names) {
                loaded += (loaded.empty() ? "" : ", ") + n;
            }
            ctx.sink->send(validation_error(
                "connector", "no connector instance '" + req.connector + "' is loaded (" +
                                 (loaded.empty() ? std::string("none are") : "loaded: " + loaded) +
                                 "); name one of the config file's connectors[].name"));
            return;
        }
    }
    // A connector's module checks the subscription before anything is stored (and serves it from
    // this answer on; other nodes and restarts pick it up from the store, plugins/connector_sync).
    // A refused value is never written, not even to the store's log, so a password in it stays
    // out of the WAL.
    std::string refused_why;
    std::optional<subscription> attached;
    if (!req.connector.empty()) {
        req.accept_before_write = [&](const subscription& candidate) -> result<void> {
            if (auto ok = router_->attach(candidate); !ok) {
                refused_why = ok.error().message.empty() ? "no reason given" : ok.error().message;
                return make_error_code(ok.error().code);
            }
            attached = candidate;
            return {};
        };
    }
    auto r = bridge_.register_subscription(req);
    if (!r && attached) {
        router_->detach(*attached); // attached, then the store refused the insert
    }
    if (!r && !refused_why.empty()) {
        ctx.sink->send(
            validation_error("settings", "the connector refused the subscription: " + refused_why));
        return;
    }
    if (!r) {
        if (r.error() == errc::invalid_argument) {
            ctx.sink->send(validation_error("workflowId", "the registration was refused: " +
                                                              r.error().message()));
            return;
        }
        reply_error(ctx, r.error());
        return;
    }
    json::object binding;
    const auto& sub = r->record;
    if (sub.source == source_kind::webhook) {
        binding["ingestUrl"] = r->ingest_url;
        binding["secretFingerprint"] = sub.secret_fingerprint.substr(0, 32);
        // The one response that ever carries the secret.
        binding["signingSecret"] = r->signing_secret;
    } else if (sub.source != source_kind::schedule && !r->ingest_url.empty()) {
        binding["ingestUrl"] = r->ingest_url;
    }
    json::object body;
    body["subscription"] = wire::subscription(sub);
    body["binding"] = std::move(binding);
    auto res = http_response::json(201, json::serialize(body));
    res.set_header("cache-control", "no-store");
    res.set_header("location", "/v1/trigger-subscriptions/" + sub.id);
    ctx.sink->send(std::move(res));
}

void http_api::list_subscriptions(context& ctx) {
    auto r = bridge_.list_subscriptions(ctx.who.tenant);
    if (!r) {
        reply_error(ctx, r.error());
        return;
    }
    json::array subs;
    for (const auto& s : *r) {
        subs.push_back(wire::subscription(s));
    }
    reply_json(ctx, 200, json::object{{"subscriptions", std::move(subs)}});
}

void http_api::get_subscription(context& ctx) {
    auto r = bridge_.get_subscription(ctx.who.tenant, ctx.param("subscriptionId"));
    if (!r) {
        reply_error(ctx, r.error());
        return;
    }
    json::array deliveries;
    for (const auto& d : r->recent_deliveries) {
        deliveries.push_back(wire::delivery_summary(d));
    }
    reply_json(ctx, 200,
               json::object{{"subscription", wire::subscription(r->record)},
                            {"deliveries", std::move(deliveries)}});
}

void http_api::patch_subscription(context& ctx) {
    boost::system::error_code ec;
    auto v = json::parse(ctx.req.body, ec);
    if (ec || !v.is_object()) {
        ctx.sink->send(validation_error("body", "the body must be a JSON object"));
        return;
    }
    const auto& o = v.as_object();
    for (const auto& kv : o) {
        if (kv.key() != "state") {
            ctx.sink->send(validation_error(kv.key(), "unknown field"));
            return;
        }
    }
    const auto* state = o.if_contains("state");
    if (!state || !state->is_string()) {
        ctx.sink->send(validation_error("state", "state must be \"paused\" or \"active\""));
        return;
    }
    auto to = wire::parse_state(state->as_string());
    if (!to || (*to != sub_state::paused && *to != sub_state::active)) {
        ctx.sink->send(validation_error("state", "state must be \"paused\" or \"active\""));
        return;
    }
    auto r = bridge_.set_state(ctx.who.tenant, ctx.param("subscriptionId"), *to);
    if (!r) {
        if (r.error() == errc::conflict) {
            ctx.sink->send(error_response(409, "invalid_state_transition",
                                          "the subscription's state does not allow this change"));
            return;
        }
        reply_error(ctx, r.error());
        return;
    }
    reply_json(ctx, 200, json::object{{"subscription", wire::subscription(*r)}});
}

void http_api::delete_subscription(context& ctx) {
    auto found = bridge_.get_subscription(ctx.who.tenant, ctx.param("subscriptionId"));
    auto r = bridge_.delete_subscription(ctx.who.tenant, ctx.param("subscriptionId"));
    if (!r) {
        reply_error(ctx, r.error());
        return;
    }
    if (found && router_) {
        router_->detach(found->record);
    }
    ctx.sink->send(http_response::empty(204));
}

void http_api::list_deliveries(context& ctx) {
    auto pr = parse_page(ctx, bridge_.settings().dead_letter_max_page_size);
    if (!pr) {
        return;
    }
    auto r = bridge_.list_deliveries(ctx.who.tenant, ctx.param("subscriptionId"), *pr);
    if (!r) {
        reply_page_error(ctx, r.error());
        return;
    }
    json::array items;
    for (const auto& d : r->items) {
        items.push_back(wire::delivery_summary(d));
    }
    reply_json(ctx, 200, page_body("deliveries", std::move(items), r->next_cursor));
}

void http_api::list_dead_letters(context& ctx) {
    auto pr = parse_page(ctx, bridge_.settings().dead_letter_max_page_size);
    if (!pr) {
        return;
    }
    const auto& id = ctx.param("subscriptionId");
    auto r = bridge_.list_dead_letters(ctx.who.tenant, id, *pr);
    if (!r) {
        reply_page_error(ctx, r.error());
        return;
    }
    json::array items;
    for (const auto& d : r->items) {
        auto rec = wire::dead_letter(d);
        rec["subscriptionId"] = id; // equals the path segment by contract
        items.push_back(std::move(rec));
    }
    reply_json(ctx, 200, page_body("deliveries", std::move(items), r->next_cursor));
}

} // namespace wopbridge::http
