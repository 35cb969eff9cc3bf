#pragma once
// What the HTTP layer asks of the bridge, as small role interfaces. `bridge` implements them all
// (app/bridge.hpp, where each call is documented); handler tests substitute a fake. A handler that
// needs one role takes only that role.

#include "app/bridge_types.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace wopbridge {

// Management of a tenant's subscriptions and their deliveries and dead letters.
class subscription_api {
public:
    virtual result<registration_result> register_subscription(const registration_request& req) = 0;
    virtual result<std::vector<subscription>> list_subscriptions(const std::string& tenant) = 0;
    virtual result<subscription_view> get_subscription(const std::string& tenant,
                                                       const std::string& id) = 0;
    virtual result<subscription> set_state(const std::string& tenant, const std::string& id,
                                           sub_state to) = 0;
    virtual result<void> delete_subscription(const std::string& tenant, const std::string& id) = 0;
    virtual result<page<delivery>> list_deliveries(const std::string& tenant, const std::string& id,
                                                   const page_request& req) = 0;
    virtual result<page<dead_letter>> list_dead_letters(const std::string& tenant,
                                                        const std::string& id,
                                                        const page_request& req) = 0;
    virtual result<page<dead_letter_view>>
    list_dead_letters_with_replays(const std::string& tenant, const std::string& id,
                                   const page_request& req) = 0;
    virtual result<std::vector<subscription_overview>> overview(const std::string& tenant) = 0;
    // Unauthenticated lookup for the ingest route (the signature authenticates).
    virtual result<subscription> find_subscription(const std::string& id) = 0;

protected:
    ~subscription_api() = default;
};

// Inbound webhooks for `source: webhook` subscriptions.
class ingest_api {
public:
    virtual void ingest_webhook(const std::string& subscription_id, const inbound_http_request& req,
                                submit_callback done) = 0;
    // For a subscription just read by find_subscription: not read again.
    virtual void ingest_webhook(const subscription& sub, const inbound_http_request& req,
                                submit_callback done) = 0;
    // Counts an answer given before intake (the ingest route's unknown id).
    virtual void count_ingest(const std::string& subscription_id, submit_status status) = 0;
    // Counts a 429 (`limit`: perSubscription or perSourceAddress) as an ingest outcome and logs
    // it, at most once every 10 s per limit with how many there were. `subscription_id` "" when
    // the answer came before the subscription was read.
    virtual void count_rate_limited(const std::string& subscription_id, std::string_view limit,
                                    std::string_view address) = 0;

protected:
    ~ingest_api() = default;
};

// Runs, their event logs, and the live-change watchers.
class run_api {
public:
    virtual result<run_record> get_run(const std::string& tenant, const std::string& run_id) = 0;
    virtual result<poll_result> read_events(const std::string& tenant, const std::string& run_id,
                                            std::int64_t after_sequence, int limit = 1000) = 0;
    virtual result<page<run_record>> list_runs(const std::string& tenant,
                                               const run_list_request& req) = 0;
    virtual std::uint64_t watch_run(const std::string& run_id, std::int64_t after_sequence,
                                    std::function<void()> notify) = 0;
    virtual void cancel_watch(std::uint64_t token) = 0;
    // 0 = not served (then there is nothing to cancel).
    virtual std::uint64_t watch_changes(const std::string& tenant, std::function<void()> notify) = 0;
    virtual void cancel_changes_watch(std::uint64_t token) = 0;

protected:
    ~run_api() = default;
};

// The conformance seams (only when settings().test_seams).
class seam_api {
public:
    virtual result<seam_deliver_result> seam_deliver(const seam_deliver_request& req) = 0;
    virtual result<std::vector<run_event>> seam_events(const std::string& tenant,
                                                       const std::string& run_id) = 0;
    virtual result<void> seam_reset(const std::string& tenant) = 0;

protected:
    ~seam_api() = default;
};

// Readiness, replay, metrics and the outbound webhooks: the operator's routes.
class operations_api {
public:
    virtual const bridge_settings& settings() const noexcept = 0;
    virtual result<void> ready() = 0;
    virtual result<replay_result> replay_dead_letter(const std::string& tenant,
                                                     const std::string& subscription_id,
                                                     const std::string& attempt_event_id) = 0;
    virtual result<std::string> replay_dead_letters(const std::string& tenant,
                                                    const std::string& subscription_id,
                                                    const replay_range& range,
                                                    double rate_per_second) = 0;
    virtual result<replay_job_status> get_replay_job(const std::string& tenant,
                                                     const std::string& job_id) = 0;
    // GET /metrics: no tenant = no series naming a subscription; a tenant = its own.
    virtual std::string metrics_text(const std::optional<std::string>& tenant) = 0;
    // Null when the host has none (no host key).
    virtual outbound::webhook_dispatcher* webhooks() noexcept = 0;

protected:
    ~operations_api() = default;
};

// Every role: what the HTTP API is built on.
class bridge_api : public subscription_api,
                   public ingest_api,
                   public run_api,
                   public seam_api,
                   public operations_api {
public:
    virtual ~bridge_api() = default;
};

} // namespace wopbridge
