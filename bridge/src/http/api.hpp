#pragma once
// The HTTP surface of `wopbridge serve` as a request_handler: routing, bearer auth, the error
// envelope and every handler. No Asio/Beast here; http::server drives it over sockets and unit tests
// drive it with in-memory sinks.
//
// Lifetime: the api must outlive the server's stop() (in-flight callbacks hold no ownership of it);
// begin_shutdown() cancels every watch it holds so the bridge calls nothing afterwards.

#include "app/ingest_router.hpp"
#include "core/clock.hpp"
#include "core/rate_limiter.hpp"
#include "core/forwarded.hpp"
#include "http/auth.hpp"
#include "app/bridge_api.hpp"
#include "http/http_message.hpp"
#include "http/router.hpp"

#include <boost/json/object.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

namespace wopbridge::http {

struct api_options {
    std::vector<api_key> keys;
    std::size_t max_body_bytes = 1024 * 1024;        // every route but ingest
    std::size_t ingest_max_body_bytes = 1024 * 1024; // POST /v1/ingest/...
    std::chrono::milliseconds sse_keepalive{15000};
    // GET /v1/ops/changes: at most one change frame per interval.
    std::chrono::milliseconds change_interval{250};
    int poll_default_timeout_s = 30;                   // 1..60
    int read_batch = 1000;                             // events per read
    // Ingest rate limits (config server.rateLimits; 429 + Retry-After past them). The clock is
    // injected so tests use a fake one; null = the system clock.
    clock_source* clock = nullptr;
    rate_limit per_subscription;
    // Refused ingest requests (bad signatures, unknown ids, malformed posts) per client address;
    // what verified is not counted. Past it: 429 before the request is read further.
    rate_limit per_source_address;
    // Peers whose Forwarded / X-Forwarded-* headers are believed (server.trustedProxies).
    std::vector<address_block> trusted_proxies;
    std::map<std::string, rate_limit> subscription_rate_limits; // subscriptions[].rateLimit
    // Where the local run ledger writes each command's output (<dir>/<run id>.log); "" = none.
    std::string run_output_dir;
};

// One request on its way through the API: the matched row, its path parameters, and the caller.
struct api_context {
    http_request req;
    std::shared_ptr<response_sink> sink;
    const route* matched = nullptr;
    std::map<std::string, std::string> params;
    principal who;
    const std::string& param(const std::string& name) const { return params.at(name); }
};

class http_api final : public request_handler {
public:
    // `router` may be null (no connector modules loaded).
    http_api(api_options opts, bridge_api& bridge, ingest_router* router, task_scheduler& tasks);
    ~http_api() override;

    std::size_t body_limit(std::string_view method, std::string_view path) const override;
    bool is_control_route(std::string_view method, std::string_view path) const override;
    void handle(http_request req, std::shared_ptr<response_sink> sink) override;
    void begin_shutdown() override;

    // Replaces the per-subscription overrides (config reload).
    void set_subscription_rate_limits(std::map<std::string, rate_limit> limits);

    // The discovery document (GET /.well-known/openwop).
    boost::json::object capabilities() const;

    using context = api_context;

    // The route table (routes.cpp): a member, so its rows' handlers reach the private ones below.
    static std::span<const route> routes() noexcept;

  private:
    bool admit(context& ctx); // the row's auth rule; false = refused and answered
    void dispatch(std::shared_ptr<context> ctx);

    // discovery + health (api.cpp)
    void well_known(context& ctx);
    void openapi(context& ctx);
    void readyz(context& ctx);
    // subscription_handlers.cpp
    void create_subscription(context& ctx);
    void list_subscriptions(context& ctx);
    void get_subscription(context& ctx);
    void patch_subscription(context& ctx);
    void delete_subscription(context& ctx);
    void list_deliveries(context& ctx);
    void list_dead_letters(context& ctx);
    // ingest_handlers.cpp
    void ingest(std::shared_ptr<context> ctx);
    // run_handlers.cpp
    void get_run(context& ctx);
    void get_run_output(context& ctx);
    void poll_events(std::shared_ptr<context> ctx);
    void stream_events(std::shared_ptr<context> ctx);
    // change_stream.cpp
    void stream_changes(std::shared_ptr<context> ctx);
    // seam_handlers.cpp
    void seam_deliver(context& ctx);
    void seam_events(context& ctx);
    void seam_reset(context& ctx);
    // webhook_handlers.cpp (outbound run-event webhooks)
    void create_webhook(context& ctx);
    void list_webhooks(context& ctx);
    void delete_webhook(context& ctx);
    void list_webhook_dead_letters(context& ctx);

    // Long polls and streams register here so begin_shutdown() can end them.
    std::uint64_t add_waiter(std::function<void()> on_shutdown);
    void remove_waiter(std::uint64_t id);

    struct poll_wait;
    struct sse_session;
    void finish_poll(const std::shared_ptr<poll_wait>& w, http_response res);
    void arm_poll_watch(const std::shared_ptr<poll_wait>& w);
    void pump_sse(const std::shared_ptr<sse_session>& s);
    void end_sse(const std::shared_ptr<sse_session>& s, bool close_stream);
    void arm_keepalive(const std::shared_ptr<sse_session>& s);
    void arm_changes(const std::shared_ptr<sse_session>& s);

    // true = refused: the 429 was sent.
    bool rate_limited_by_address(context& ctx);
    bool rate_limited_by_subscription(context& ctx, const std::string& subscription_id);

    api_options opts_;
    system_clock_source system_clock_;
    std::shared_ptr<rate_limiter> address_limiter_; // shared with the sinks that charge it
    rate_limiter subscription_limiter_;
    mutable std::mutex limits_mu_;
    bridge_api& bridge_;
    ingest_router* router_;
    task_scheduler& tasks_;
    authenticator auth_;

    std::mutex waiters_mu_;
    std::map<std::uint64_t, std::function<void()>> waiters_;
    std::uint64_t next_waiter_ = 1;
    std::atomic<bool> shutting_down_{false};
};

} // namespace wopbridge::http
