// POST/GET /v1/webhooks, DELETE /v1/webhooks/{webhookId}, GET
// /v1/webhooks/{webhookId}/dead-letters: outbound run-event webhooks (webhooks.md v1.2; CONTRACT.md
// (e) Register/unregister and (i) 12).

#include "contract/wire.hpp"
#include "http/api.hpp"
#include "http/api_helpers.hpp"
#include "outbound/webhook_dispatcher.hpp"

#include <boost/json/array.hpp>
#include <boost/json/parse.hpp>

namespace wopbridge::http {

namespace json = boost::json;
using detail::page_body;
using detail::reply_error;
using detail::reply_json;

namespace {

outbound::webhook_dispatcher* dispatcher_or_404(http_api::context& ctx,
                                                outbound::webhook_dispatcher* d) {
    if (d == nullptr) {
        ctx.sink->send(error_response(404, "not_found", "outbound webhooks are not served"));
    }
    return d;
}

// Reads a JSON array of non-empty strings. false: not one.
bool string_array(const json::value& v, std::vector<std::string>& out) {
    if (!v.is_array()) {
        return false;
    }
    for (const auto& e : v.as_array()) {
        if (!e.is_string() || e.as_string().empty()) {
            return false;
        }
        out.emplace_back(e.as_string());
    }
    return true;
}

// The URL without its query or fragment: a token there is the subscriber's secret, not ours to
// show.
std::string url_for_reads(const std::string& url) {
    return url.substr(0, url.find_first_of("?#"));
}

json::object state_change_json(const outbound_state_change& c) {
    return json::object{{"webhookId", c.webhook_id},
                        {"fromState", wire::name(c.from)},
                        {"toState", wire::name(c.to)},
                        {"reason", c.reason},
                        {"at", format_iso8601(c.at)}};
}

} // namespace

void http_api::create_webhook(context& ctx) {
    auto* d = dispatcher_or_404(ctx, bridge_.webhooks());
    if (d == nullptr) {
        return;
    }
    boost::system::error_code ec;
    auto v = json::parse(ctx.req.body, ec);
    if (ec || !v.is_object()) {
        ctx.sink->send(validation_error("body", "the body must be a JSON object"));
        return;
    }
    const auto& o = v.as_object();
    for (const auto& [k, _] : o) {
        if (k != "url" && k != "events" && k != "tenantId" && k != "tags" && k != "secret") {
            ctx.sink->send(validation_error(k, "unknown field"));
            return;
        }
    }
    outbound::webhook_registration req;
    req.tenant = ctx.who.tenant;
    if (auto* t = o.if_contains("tenantId")) {
        // webhooks.md carries the workspace in the body; it must be the caller's own.
        if (!t->is_string()) {
            ctx.sink->send(validation_error("tenantId", "tenantId must be a string"));
            return;
        }
        if (t->as_string() != ctx.who.tenant) {
            ctx.sink->send(error_response(403, "forbidden", "not a member of that workspace"));
            return;
        }
    }
    auto* url = o.if_contains("url");
    if (url == nullptr || !url->is_string()) {
        ctx.sink->send(validation_error("url", "url is required"));
        return;
    }
    req.url = std::string(url->as_string());
    auto* events = o.if_contains("events");
    if (events == nullptr || !string_array(*events, req.events) || req.events.empty()) {
        ctx.sink->send(validation_error("events", "events must be a non-empty array of types"));
        return;
    }
    if (auto* tags = o.if_contains("tags"); tags != nullptr && !string_array(*tags, req.tags)) {
        ctx.sink->send(validation_error("tags", "tags must be an array of strings"));
        return;
    }
    if (auto* secret = o.if_contains("secret")) {
        if (!secret->is_string()) {
            ctx.sink->send(validation_error("secret", "secret must be a whsec_ string"));
            return;
        }
        req.standard_secret = std::string(secret->as_string());
    }
    auto r = d->register_webhook(req);
    if (!r) {
        if (!r.error().field.empty()) {
            ctx.sink->send(validation_error(r.error().field, r.error().message));
            return;
        }
        reply_error(ctx, r.error().code);
        return;
    }
    // The one response that ever carries the secret.
    reply_json(ctx, 201,
               json::object{{"webhookId", r->record.id},
                            {"secret", r->secret},
                            {"secretFingerprint", r->record.secret_fingerprint}});
}

void http_api::list_webhooks(context& ctx) {
    auto* d = dispatcher_or_404(ctx, bridge_.webhooks());
    if (d == nullptr) {
        return;
    }
    auto r = d->list(ctx.who.tenant);
    if (!r) {
        reply_error(ctx, r.error());
        return;
    }
    json::array items;
    for (const auto& w : *r) {
        json::array events;
        for (const auto& e : w.events) {
            events.emplace_back(e);
        }
        json::array tags;
        for (const auto& t : w.tags) {
            tags.emplace_back(t);
        }
        items.push_back(json::object{{"webhookId", w.id},
                                     {"url", url_for_reads(w.url)},
                                     {"events", std::move(events)},
                                     {"tags", std::move(tags)},
                                     {"state", wire::name(w.state)},
                                     {"secretFingerprint", w.secret_fingerprint},
                                     {"createdAt", format_iso8601(w.created_at)}});
    }
    reply_json(ctx, 200, json::object{{"webhooks", std::move(items)}});
}

void http_api::delete_webhook(context& ctx) {
    auto* d = dispatcher_or_404(ctx, bridge_.webhooks());
    if (d == nullptr) {
        return;
    }
    if (auto t = ctx.req.query_param("tenantId"); t && *t != ctx.who.tenant) {
        ctx.sink->send(error_response(403, "forbidden", "not a member of that workspace"));
        return;
    }
    auto r = d->remove(ctx.who.tenant, ctx.param("webhookId"));
    if (!r) {
        reply_error(ctx, r.error());
        return;
    }
    ctx.sink->send(http_response::empty(204));
}

void http_api::list_webhook_dead_letters(context& ctx) {
    auto* d = dispatcher_or_404(ctx, bridge_.webhooks());
    if (d == nullptr) {
        return;
    }
    int max_page = bridge_.settings().dead_letter_max_page_size;
    page_request pr;
    pr.limit = std::min(50, max_page);
    if (auto limit = ctx.req.query_param("limit")) {
        long long n = 0;
        if (!detail::parse_int(*limit, n) || n < 1) {
            ctx.sink->send(validation_error("limit", "limit must be a positive integer"));
            return;
        }
        pr.limit = static_cast<int>(std::min<long long>(n, max_page));
    }
    if (auto cursor = ctx.req.query_param("cursor")) {
        pr.cursor = *cursor;
    }
    auto r = d->dead_letters(ctx.who.tenant, ctx.param("webhookId"), pr);
    if (!r) {
        if (r.error() == errc::invalid_argument) {
            ctx.sink->send(validation_error("cursor", "cursor is not valid for this webhook"));
            return;
        }
        reply_error(ctx, r.error());
        return;
    }
    json::array items;
    for (const auto& dl : r->items) {
        json::object rec{{"webhookId", dl.webhook_id},
                         {"deliveryId", dl.delivery_id},
                         {"runId", dl.run_id},
                         {"sequence", dl.sequence},
                         {"eventType", dl.event_type},
                         {"attempts", dl.attempts},
                         {"reason", dl.reason},
                         {"lastError", dl.last_error},
                         {"deadLetteredAt", format_iso8601(dl.dead_lettered_at)},
                         {"expiresAt", format_iso8601(dl.expires_at)}};
        if (dl.state_change) {
            rec["stateChange"] = state_change_json(*dl.state_change);
        }
        items.push_back(std::move(rec));
    }
    reply_json(ctx, 200, page_body("deadLetters", std::move(items), r->next_cursor));
}

} // namespace wopbridge::http
