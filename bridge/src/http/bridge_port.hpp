#pragma once
// The slice of wopbridge::bridge the HTTP handlers call, as an interface: production wraps the real
// bridge (make_bridge_port), unit tests substitute a fake so handlers are tested without a store.

#include "app/bridge.hpp"

#include <memory>
#include <optional>

namespace wopbridge::http {

class bridge_port {
public:
    virtual ~bridge_port() = default;

    virtual const bridge_settings& settings() const = 0;

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
    virtual result<subscription> find_subscription(const std::string& id) = 0;

    virtual void ingest_webhook(const std::string& subscription_id, const inbound_http_request& req,
                                submit_callback done) = 0;
    // For a subscription just read by find_subscription (the ingest route): the bridge need not
    // read it again. Fakes may keep the default, which looks it up by id.
    virtual void ingest_webhook_for(const subscription& sub, const inbound_http_request& req,
                                    submit_callback done) {
        ingest_webhook(sub.id, req, std::move(done));
    }

    virtual result<run_record> get_run(const std::string& tenant, const std::string& run_id) = 0;
    virtual result<poll_result> read_events(const std::string& tenant, const std::string& run_id,
                                            std::int64_t after_sequence, int limit) = 0;
    virtual std::uint64_t watch_run(const std::string& run_id, std::int64_t after_sequence,
                                    std::function<void()> notify) = 0;
    virtual void cancel_watch(std::uint64_t token) = 0;
    // The tenant's next change on this node (bridge::watch_changes). 0 = not served (fakes).
    virtual std::uint64_t watch_changes(const std::string& /*tenant*/,
                                        std::function<void()> /*notify*/) {
        return 0;
    }
    virtual void cancel_changes_watch(std::uint64_t /*token*/) {}

    virtual result<seam_deliver_result> seam_deliver(const seam_deliver_request& req) = 0;
    virtual result<std::vector<run_event>> seam_events(const std::string& tenant,
                                                       const std::string& run_id) = 0;
    virtual result<void> seam_reset(const std::string& tenant) = 0;

    virtual result<void> ready() = 0;

    // Operator routes (http/ops_handlers.cpp). Not pure: fakes that do not serve them answer
    // unsupported.
    virtual result<replay_result> replay_dead_letter(const std::string& /*tenant*/,
                                                     const std::string& /*subscription_id*/,
                                                     const std::string& /*attempt_event_id*/) {
        return make_error_code(errc::unsupported);
    }
    virtual result<std::string> replay_dead_letters(const std::string& /*tenant*/,
                                                    const std::string& /*subscription_id*/,
                                                    const replay_range& /*range*/, double /*rate*/) {
        return make_error_code(errc::unsupported);
    }
    virtual result<replay_job_status> get_replay_job(const std::string& /*tenant*/,
                                                     const std::string& /*job_id*/) {
        return make_error_code(errc::unsupported);
    }
    // GET /metrics: no tenant = no series naming a subscription; a tenant = its own (bridge.hpp).
    virtual std::string metrics_text(const std::optional<std::string>& /*tenant*/) { return {}; }
    // Outbound run-event webhooks; null when the host has none (fakes, no host key).
    virtual outbound::webhook_dispatcher* webhooks() { return nullptr; }
    // GET /v1/ops/subscriptions (the dashboard's list).
    virtual result<std::vector<subscription_overview>> overview(const std::string& /*tenant*/) {
        return make_error_code(errc::unsupported);
    }
    // Counts an ingest answered without the bridge's intake (an unknown subscription id).
    virtual void count_ingest(const std::string& /*subscription_id*/, submit_status /*status*/) {}
    // GET /v1/runs and GET /v1/ops/subscriptions/{id}/dead-letters (wopbridge extensions).
    virtual result<page<run_record>> list_runs(const std::string& /*tenant*/,
                                               const run_list_request& /*req*/) {
        return make_error_code(errc::unsupported);
    }
    virtual result<page<dead_letter_view>>
    list_dead_letters_with_replays(const std::string& /*tenant*/, const std::string& /*id*/,
                                   const page_request& /*req*/) {
        return make_error_code(errc::unsupported);
    }
};

// Forwards every call to `b`, which must outlive the port.
std::unique_ptr<bridge_port> make_bridge_port(bridge& b);

} // namespace wopbridge::http
