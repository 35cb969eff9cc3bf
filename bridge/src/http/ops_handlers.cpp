#include "http/ops_handlers.hpp"

#include "contract/wire.hpp"
#include "http/api_helpers.hpp"

#include <boost/json.hpp>

#include <chrono>
#include <ctime>
#include <optional>

namespace wopbridge::http::ops {
namespace json = boost::json;
using detail::page_body;
using detail::reply_error;
using detail::reply_json;

namespace {

constexpr double ops_default_rate = 10;
constexpr double ops_max_rate = 1000;

// RFC 3339 UTC ("2026-01-02T03:04:05Z" or with ".123"), to epoch milliseconds.
std::optional<millis> ops_parse_time(std::string_view s) {
    int y, mo, d, h, mi, sec;
    char tail[32] = {};
    std::string text(s);
    if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%31s", &y, &mo, &d, &h, &mi, &sec, tail) <
        6) {
        return std::nullopt;
    }
    std::tm tm{};
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = sec;
    millis ms = 0;
    std::string_view rest(tail);
    if (!rest.empty() && rest.front() == '.') {
        rest.remove_prefix(1);
        int digits = 0;
        while (!rest.empty() && std::isdigit(static_cast<unsigned char>(rest.front()))) {
            if (digits < 3) {
                ms = ms * 10 + (rest.front() - '0');
            }
            ++digits;
            rest.remove_prefix(1);
        }
        for (; digits < 3; ++digits) {
            ms *= 10;
        }
    }
    if (rest != "Z" && rest != "+00:00") {
        return std::nullopt;
    }
    return static_cast<millis>(timegm(&tm)) * 1000 + ms;
}

std::string ops_format_time(millis ms) {
    std::time_t t = static_cast<std::time_t>(ms / 1000);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[96];
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                  static_cast<int>(ms % 1000));
    return buf;
}

} // namespace

void replay_one(http_api::context& ctx, operations_api& bridge) {
    auto r = bridge.replay_dead_letter(ctx.who.tenant, ctx.param("subscriptionId"),
                                       ctx.param("attemptEventId"));
    if (!r) {
        if (r.error() == errc::conflict) {
            ctx.sink->send(error_response(409, "conflict",
                                          "this dead letter is not replayable: a verification "
                                          "failure has no stored content"));
            return;
        }
        reply_error(ctx, r.error());
        return;
    }
    reply_json(ctx, 202,
               json::object{{"outcome", r->held ? "held" : "accepted"},
                            {"deliveryId", r->delivery_id},
                            {"runId", r->run_id}});
}

void replay_bulk(http_api::context& ctx, operations_api& bridge) {
    replay_range range;
    double rate = ops_default_rate;
    if (!ctx.req.body.empty()) {
        boost::system::error_code ec;
        auto v = json::parse(ctx.req.body, ec);
        if (ec || !v.is_object()) {
            ctx.sink->send(validation_error("body", "the body must be a JSON object"));
            return;
        }
        for (const auto& kv : v.as_object()) {
            const auto key = kv.key();
            const auto& val = kv.value();
            if (key == "all") {
                if (!val.is_bool()) {
                    ctx.sink->send(validation_error("all", "all must be a boolean"));
                    return;
                }
                range.all = val.as_bool();
            } else if (key == "from" || key == "to") {
                std::optional<millis> t;
                if (val.is_string()) {
                    t = ops_parse_time(val.as_string());
                }
                if (!t) {
                    ctx.sink->send(validation_error(key, "must be an RFC 3339 UTC timestamp"));
                    return;
                }
                (key == "from" ? range.from : range.to) = t;
            } else if (key == "rate") {
                if (!val.is_number() || !(val.to_number<double>() > 0)) {
                    ctx.sink->send(validation_error("rate", "rate must be a positive number"));
                    return;
                }
                rate = std::min(val.to_number<double>(), ops_max_rate);
            } else {
                ctx.sink->send(validation_error(key, "unknown field"));
                return;
            }
        }
    }
    if (!range.all && !range.from && !range.to) {
        ctx.sink->send(validation_error("all", "give from/to or all: true"));
        return;
    }
    auto r = bridge.replay_dead_letters(ctx.who.tenant, ctx.param("subscriptionId"), range, rate);
    if (!r) {
        reply_error(ctx, r.error());
        return;
    }
    reply_json(ctx, 202, json::object{{"jobId", *r}});
}

void replay_job(http_api::context& ctx, operations_api& bridge) {
    auto r = bridge.get_replay_job(ctx.who.tenant, ctx.param("jobId"));
    if (!r) {
        reply_error(ctx, r.error());
        return;
    }
    json::object o{{"jobId", r->id},          {"subscriptionId", r->subscription_id},
                   {"state", r->state},       {"total", r->total},
                   {"replayed", r->replayed}, {"delivered", r->delivered},
                   {"failed", r->failed},     {"startedAt", ops_format_time(r->started_at)}};
    if (r->finished_at != 0) {
        o["finishedAt"] = ops_format_time(r->finished_at);
    }
    reply_json(ctx, 200, o);
}

void metrics(http_api::context& ctx, operations_api& bridge) {
    http_response res;
    res.status = 200;
    res.set_header("content-type", "text/plain; version=0.0.4; charset=utf-8");
    // ctx.who is set only when the scrape carried a key with webhooks:manage (api.cpp).
    res.body = bridge.metrics_text(
        ctx.who.tenant.empty() ? std::nullopt : std::optional<std::string>(ctx.who.tenant));
    ctx.sink->send(std::move(res));
}

void overview(http_api::context& ctx, subscription_api& bridge) {
    auto r = bridge.overview(ctx.who.tenant);
    if (!r) {
        reply_error(ctx, r.error());
        return;
    }
    json::array subs;
    for (const auto& o : *r) {
        const auto& c = o.counts;
        json::object item{{"subscription", wire::subscription(o.record)},
                          {"workflowId", o.record.workflow_id},
                          {"createdAt", ops_format_time(o.record.created_at)},
                          {"whenNotActive", o.record.hold_when_not_active ? "hold" : "refuse"},
                          {"counts", json::object{{"pending", c.pending},
                                                  {"due", c.due},
                                                  {"inFlight", c.in_flight},
                                                  {"held", c.held},
                                                  {"delivered", c.delivered},
                                                  {"deadLettered", c.dead_lettered}}},
                          {"deadLetters", c.dead_letters}};
        if (!o.record.connector.empty()) {
            item["connector"] = o.record.connector;
        }
        if (o.last_delivery) {
            item["lastDelivery"] = wire::delivery_summary(*o.last_delivery);
        }
        subs.push_back(std::move(item));
    }
    auto res =
        http_response::json(200, json::serialize(json::object{{"subscriptions", std::move(subs)}}));
    res.set_header("cache-control", "no-store");
    ctx.sink->send(std::move(res));
}

// ---- GET /v1/runs and dead letters with their replays (wopbridge extensions) ----------------

namespace {

// limit and cursor as on the other lists (subscription_handlers.cpp); false = the 400 was sent.
bool parse_page_params(http_api::context& ctx, int max_page_size, int& limit, std::string& cursor) {
    limit = std::min(50, std::max(1, max_page_size));
    if (auto l = ctx.req.query_param("limit")) {
        long long n = 0;
        if (!detail::parse_int(*l, n) || n < 1) {
            ctx.sink->send(validation_error("limit", "limit must be a positive integer"));
            return false;
        }
        limit = static_cast<int>(std::min<long long>(n, std::max(1, max_page_size)));
    }
    if (auto c = ctx.req.query_param("cursor")) {
        if (c->empty() || c->size() > 2048) {
            ctx.sink->send(validation_error("cursor", "cursor is not valid"));
            return false;
        }
        cursor = *c;
    }
    return true;
}

std::optional<run_status> parse_run_status(std::string_view s) {
    for (auto st :
         {run_status::pending, run_status::running, run_status::completed, run_status::failed}) {
        if (wire::name(st) == s) {
            return st;
        }
    }
    return std::nullopt;
}

} // namespace

void list_runs(http_api::context& ctx, bridge_api& bridge) {
    run_list_request req;
    if (!parse_page_params(ctx, bridge.settings().dead_letter_max_page_size, req.limit,
                           req.cursor)) {
        return;
    }
    if (auto v = ctx.req.query_param("subscriptionId")) {
        req.subscription_id = *v;
    }
    if (auto v = ctx.req.query_param("workflowId")) {
        req.workflow_id = *v;
    }
    if (auto v = ctx.req.query_param("status")) {
        req.status = parse_run_status(*v);
        if (!req.status) {
            ctx.sink->send(validation_error(
                "status", "status must be one of pending, running, completed, failed"));
            return;
        }
    }
    for (const char* name : {"from", "to"}) {
        if (auto v = ctx.req.query_param(name)) {
            auto t = ops_parse_time(*v);
            if (!t) {
                ctx.sink->send(validation_error(name, "must be an RFC 3339 UTC timestamp"));
                return;
            }
            (std::string_view(name) == "from" ? req.from : req.to) = t;
        }
    }
    auto r = bridge.list_runs(ctx.who.tenant, req);
    if (!r) {
        if (r.error() == errc::invalid_argument) {
            ctx.sink->send(validation_error("cursor", "cursor is not valid for these filters"));
            return;
        }
        reply_error(ctx, r.error());
        return;
    }
    json::array runs;
    for (const auto& run : r->items) {
        runs.push_back(wire::run_snapshot(run));
    }
    reply_json(ctx, 200, page_body("runs", std::move(runs), r->next_cursor));
}

void dead_letters_view(http_api::context& ctx, bridge_api& bridge) {
    page_request pr;
    if (!parse_page_params(ctx, bridge.settings().dead_letter_max_page_size, pr.limit, pr.cursor)) {
        return;
    }
    const auto& id = ctx.param("subscriptionId");
    auto r = bridge.list_dead_letters_with_replays(ctx.who.tenant, id, pr);
    if (!r) {
        if (r.error() == errc::invalid_argument) {
            ctx.sink->send(validation_error("cursor", "cursor is not valid for this subscription"));
            return;
        }
        reply_error(ctx, r.error());
        return;
    }
    json::array items;
    for (const auto& v : r->items) {
        auto rec = wire::dead_letter(v.record);
        rec["subscriptionId"] = id;
        json::object item{{"deadLetter", std::move(rec)}};
        if (v.replay) {
            item["replay"] = wire::delivery_summary(*v.replay);
        }
        items.push_back(std::move(item));
    }
    auto res = http_response::json(
        200, json::serialize(page_body("deadLetters", std::move(items), r->next_cursor)));
    res.set_header("cache-control", "no-store");
    ctx.sink->send(std::move(res));
}

} // namespace wopbridge::http::ops
