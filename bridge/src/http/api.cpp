#include "http/api.hpp"

#include "contract/wire.hpp"
#include "http/api_helpers.hpp"
#include "http/openapi_document.hpp"

#include <boost/json/array.hpp>

#include <algorithm>
#include <charconv>

#ifndef WOPBRIDGE_VERSION
#define WOPBRIDGE_VERSION "0.0.0"
#endif

namespace wopbridge::http {

namespace json = boost::json;

namespace detail {

bool parse_int(std::string_view text, long long& out, bool allow_negative) {
    if (text.empty() || (!allow_negative && text.front() == '-') || text.front() == '+') {
        return false;
    }
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc() && p == text.data() + text.size();
}

} // namespace detail

http_api::http_api(api_options opts, bridge_api& bridge, ingest_router* router,
                   task_scheduler& tasks)
    : opts_(std::move(opts)),
      address_limiter_(std::make_shared<rate_limiter>(opts_.clock ? *opts_.clock : system_clock_)),
      subscription_limiter_(opts_.clock ? *opts_.clock : system_clock_),
      bridge_(bridge),
      router_(router),
      tasks_(tasks),
      auth_(opts_.keys) {}

void http_api::set_subscription_rate_limits(std::map<std::string, rate_limit> limits) {
    std::lock_guard lock(limits_mu_);
    opts_.subscription_rate_limits = std::move(limits);
}

namespace {

http_response too_many(std::string_view which, int retry_after) {
    json::object details;
    details["limit"] = which;
    return error_response(429, "rate_limited", "too many requests; retry later", std::move(details),
                          retry_after);
}

// Management bodies are JSON. A request that says it sends something else is refused rather than
// parsed as JSON anyway (a form post must not register a subscription); none declared is fine.
bool declares_non_json(const http_request& req) {
    auto ct = req.header("content-type");
    if (!ct || req.body.empty()) {
        return false;
    }
    std::string media(ct->substr(0, ct->find(';')));
    while (!media.empty() && (media.back() == ' ' || media.back() == '\t')) {
        media.pop_back();
    }
    while (!media.empty() && (media.front() == ' ' || media.front() == '\t')) {
        media.erase(media.begin());
    }
    std::transform(media.begin(), media.end(), media.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    const bool is_json =
        media == "application/json" || (media.rfind("application/", 0) == 0 && media.size() > 5 &&
                                        media.compare(media.size() - 5, 5, "+json") == 0);
    return !is_json;
}

// Charges the address's budget for an answer that refused the request; what verified (2xx), was
// held back (409 not active, 429, 5xx) or streamed is not the sender's fault and costs nothing.
class refusal_charging_sink final : public response_sink {
public:
    refusal_charging_sink(std::shared_ptr<response_sink> inner, std::shared_ptr<rate_limiter> budget,
                          std::string address, rate_limit limit)
        : inner_(std::move(inner)), budget_(std::move(budget)), address_(std::move(address)),
          limit_(limit) {}
    void send(http_response res) override {
        const int s = res.status;
        if (s == 400 || s == 401 || s == 403 || s == 404 || s == 405 || s == 413 || s == 415 ||
            s == 422) {
            budget_->charge(address_, limit_);
        }
        inner_->send(std::move(res));
    }
    std::shared_ptr<response_stream> open_stream(http_response head) override {
        return inner_->open_stream(std::move(head));
    }

private:
    std::shared_ptr<response_sink> inner_;
    std::shared_ptr<rate_limiter> budget_;
    std::string address_;
    rate_limit limit_;
};

} // namespace

bool http_api::rate_limited_by_address(context& ctx) {
    if (!opts_.per_source_address.enabled() || ctx.req.remote.empty()) {
        return false;
    }
    if (int wait = address_limiter_->peek(ctx.req.remote, opts_.per_source_address); wait > 0) {
        // Not attributed to the path's subscription: that id is not read for a refused address.
        bridge_.count_rate_limited("", "perSourceAddress", ctx.req.remote);
        ctx.sink->send(too_many("perSourceAddress", wait));
        return true;
    }
    ctx.sink = std::make_shared<refusal_charging_sink>(std::move(ctx.sink), address_limiter_,
                                                       ctx.req.remote, opts_.per_source_address);
    return false;
}

bool http_api::rate_limited_by_subscription(context& ctx, const std::string& subscription_id) {
    rate_limit limit = opts_.per_subscription;
    {
        std::lock_guard lock(limits_mu_);
        if (auto it = opts_.subscription_rate_limits.find(subscription_id);
            it != opts_.subscription_rate_limits.end()) {
            limit = it->second;
        }
    }
    if (int wait = subscription_limiter_.take(subscription_id, limit); wait > 0) {
        bridge_.count_rate_limited(subscription_id, "perSubscription", ctx.req.remote);
        ctx.sink->send(too_many("perSubscription", wait));
        return true;
    }
    return false;
}

http_api::~http_api() = default;

std::size_t http_api::body_limit(std::string_view method, std::string_view path) const {
    auto m = match_route(route_table(), method, path);
    if (m.matched && m.matched->ingest_body) {
        return opts_.ingest_max_body_bytes;
    }
    return opts_.max_body_bytes;
}

bool http_api::is_control_route(std::string_view method, std::string_view path) const {
    auto m = match_route(route_table(), method, path);
    return m.matched && !m.matched->ingest_body;
}

namespace {

void refuse_unauthenticated(api_context& ctx) {
    ctx.sink->send(error_response(401, "unauthenticated", "a valid API key is required"));
}

void refuse_scope(api_context& ctx, std::string_view scope) {
    json::object details;
    details["requiredScope"] = scope;
    ctx.sink->send(
        error_response(403, "forbidden", "the API key lacks a required scope", std::move(details)));
}

} // namespace

// true = the caller may go on (ctx.who set when a key was presented); false = refused and answered.
bool http_api::admit(api_context& ctx) {
    const route& r = *ctx.matched;
    if (r.auth == route_auth::none) {
        return true;
    }
    auto header = ctx.req.header("authorization");
    if (r.auth == route_auth::optional_key && !header) {
        return true;
    }
    auto who = auth_.authenticate(header);
    if (!who) {
        refuse_unauthenticated(ctx);
        return false;
    }
    if (!r.scope.empty() && !who->has_scope(r.scope)) {
        refuse_scope(ctx, r.scope);
        return false;
    }
    ctx.who = std::move(*who);
    if (r.auth == route_auth::api_key && declares_non_json(ctx.req)) {
        ctx.sink->send(error_response(415, "unsupported_media_type",
                                      "the request body must be application/json"));
        return false;
    }
    return true;
}

void http_api::handle(http_request req, std::shared_ptr<response_sink> sink) {
    auto ctx = std::make_shared<context>();
    ctx->req = std::move(req);
    ctx->sink = std::move(sink);
    if (!opts_.trusted_proxies.empty()) {
        auto origin = resolve_client(ctx->req.remote, ctx->req.headers, opts_.trusted_proxies);
        ctx->req.remote = std::move(origin.address);
        ctx->req.public_base = std::move(origin.public_base);
    }
    auto m = match_route(route_table(), ctx->req.method, ctx->req.path);
    if (m.status == 405) {
        auto res = error_response(405, "method_not_allowed", "method not allowed on this path");
        res.set_header("allow", m.allow);
        ctx->sink->send(std::move(res));
        return;
    }
    if (!m.matched || (m.matched->seam && !bridge_.settings().test_seams)) {
        ctx->sink->send(error_response(404, "not_found", "no such route"));
        return;
    }
    ctx->matched = m.matched;
    ctx->params = std::move(m.params);
    if (!admit(*ctx)) {
        return;
    }
    if (m.matched->ingest_body && rate_limited_by_address(*ctx)) {
        return; // before any store work: a flood from one address costs a map lookup
    }
    if (m.matched->on_io_thread) {
        m.matched->handler(*this, ctx); // static, in memory
        return;
    }
    // Everything else may touch the store: never on the I/O thread.
    tasks_.post([this, ctx]() mutable { dispatch(std::move(ctx)); });
}

void http_api::dispatch(std::shared_ptr<context> ctx) {
    try {
        ctx->matched->handler(*this, ctx);
    } catch (const std::exception&) {
        // Handlers report errors as values; an exception here is a bug (bad_alloc at worst).
        ctx->sink->send(error_response(500, "internal_error", "internal error"));
    }
}

void http_api::begin_shutdown() {
    shutting_down_ = true;
    std::map<std::uint64_t, std::function<void()>> waiters;
    {
        std::lock_guard lock(waiters_mu_);
        waiters.swap(waiters_);
    }
    for (auto& [id, fn] : waiters) {
        fn();
    }
}

std::uint64_t http_api::add_waiter(std::function<void()> on_shutdown) {
    std::lock_guard lock(waiters_mu_);
    auto id = next_waiter_++;
    waiters_.emplace(id, std::move(on_shutdown));
    return id;
}

void http_api::remove_waiter(std::uint64_t id) {
    std::lock_guard lock(waiters_mu_);
    waiters_.erase(id);
}

// ---- discovery and health --------------------------------------------------------------------------

json::object http_api::capabilities() const {
    const auto& s = bridge_.settings();
    json::object doc;
    doc["protocolVersion"] = "1.0";
    doc["supportedEnvelopes"] = json::array();
    doc["schemaVersions"] = json::object();
    doc["limits"] = json::object{{"clarificationRounds", 0},
                                 {"schemaRounds", 0},
                                 {"envelopesPerTurn", 0},
                                 {"maxRequestBodyBytes", opts_.max_body_bytes}};
    doc["implementation"] = json::object{
        {"name", "wopbridge"}, {"version", WOPBRIDGE_VERSION}, {"vendor", "wopbridge"}};
    if (std::find(s.local_workflows.begin(), s.local_workflows.end(), "conformance-noop") !=
        s.local_workflows.end()) {
        doc["fixtures"] = json::array{"conformance-noop"};
    }

    // Sources: the two the core serves, plus those loaded connectors contribute.
    std::vector<std::string> sources{"webhook", "schedule"};
    std::vector<std::string> external{"webhook"};
    if (router_) {
        static const std::vector<std::string> known{"webhook", "schedule", "queue", "email",
                                                    "form",    "stream",   "change"};
        static const std::vector<std::string> ingestable{"email", "form", "stream", "change"};
        for (const auto& src : router_->sources()) {
            if (std::find(known.begin(), known.end(), src) == known.end()) {
                continue;
            }
            if (std::find(sources.begin(), sources.end(), src) == sources.end()) {
                sources.push_back(src);
            }
            if (std::find(ingestable.begin(), ingestable.end(), src) != ingestable.end() &&
                std::find(external.begin(), external.end(), src) == external.end()) {
                external.push_back(src);
            }
        }
    }
    json::array sources_json;
    for (const auto& src : sources) {
        sources_json.emplace_back(src);
    }
    json::array external_json;
    for (const auto& src : external) {
        external_json.emplace_back(src);
    }

    json::object ingestion;
    ingestion["externalSources"] = std::move(external_json);
    ingestion["maxBodyBytes"] = opts_.ingest_max_body_bytes;
    ingestion["verification"] = json::array{"webhook-signature"};
    ingestion["registrationEndpoint"] = true;
    ingestion["inboundSigning"] = json::array{"standard-webhooks-1"};

    json::object trigger;
    trigger["supported"] = true;
    trigger["subscriptionStates"] = json::array{"active", "paused", "failed", "dead-lettered"};
    trigger["dedup"] = true;
    trigger["retryPolicy"] = wire::retry_policy(s.default_retry);
    trigger["sources"] = std::move(sources_json);
    trigger["ingestion"] = std::move(ingestion);
    trigger["deadLetter"] = json::object{{"retentionDays", s.dead_letter_retention_days},
                                         {"maxPageSize", s.dead_letter_max_page_size}};
    doc["triggerBridge"] = std::move(trigger);
    doc["deadLetter"] = json::object{{"supported", true},
                                     {"retentionDays", s.dead_letter_retention_days}};
    doc["scheduling"] = json::object{{"supported", true}, {"cron", true}};
    // RFC 0017 queue bus: advertised only while a queue connector module is loaded, naming the
    // engines those modules consume.
    if (std::find(sources.begin(), sources.end(), "queue") != sources.end() && router_ != nullptr) {
        json::array backends;
        for (const auto& b : router_->queue_backends()) {
            backends.emplace_back(b);
        }
        if (!backends.empty()) {
            doc["queueBus"] = json::object{{"supported", true}, {"backends", std::move(backends)}};
        }
    }
    if (bridge_.webhooks() != nullptr) {
        doc["webhooks"] = json::object{{"supported", true},
                                       {"signatureAlgorithms", json::array{"v1"}},
                                       {"durable", s.webhooks_durable}};
    }
    return doc;
}

void http_api::well_known(context& ctx) {
    auto res = http_response::json(200, json::serialize(capabilities()));
    res.set_header("cache-control", "public, max-age=300");
    ctx.sink->send(std::move(res));
}

void http_api::openapi(context& ctx) {
    auto res = http_response::json(200, std::string(openapi_document()));
    res.set_header("cache-control", "public, max-age=300");
    ctx.sink->send(std::move(res));
}

void http_api::readyz(context& ctx) {
    auto r = bridge_.ready();
    if (!r) {
        ctx.sink->send(error_response(503, "service_unavailable", "the store is not reachable",
                                      std::nullopt, 5));
        return;
    }
    detail::reply_json(ctx, 200, json::object{{"status", "ready"}});
}

} // namespace wopbridge::http
