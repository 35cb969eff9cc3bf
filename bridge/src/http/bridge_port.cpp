#include "http/bridge_port.hpp"

namespace wopbridge::http {

namespace {

class bridge_forwarder final : public bridge_port {
public:
    explicit bridge_forwarder(bridge& b) : b_(b) {}

    const bridge_settings& settings() const override { return b_.settings(); }
    result<registration_result> register_subscription(const registration_request& req) override {
        return b_.register_subscription(req);
    }
    result<std::vector<subscription>> list_subscriptions(const std::string& tenant) override {
        return b_.list_subscriptions(tenant);
    }
    result<subscription_view> get_subscription(const std::string& tenant,
                                               const std::string& id) override {
        return b_.get_subscription(tenant, id);
    }
    result<subscription> set_state(const std::string& tenant, const std::string& id,
                                   sub_state to) override {
        return b_.set_state(tenant, id, to);
    }
    result<void> delete_subscription(const std::string& tenant, const std::string& id) override {
        return b_.delete_subscription(tenant, id);
    }
    result<page<delivery>> list_deliveries(const std::string& tenant, const std::string& id,
                                           const page_request& req) override {
        return b_.list_deliveries(tenant, id, req);
    }
    result<page<dead_letter>> list_dead_letters(const std::string& tenant, const std::string& id,
                                                const page_request& req) override {
        return b_.list_dead_letters(tenant, id, req);
    }
    result<subscription> find_subscription(const std::string& id) override {
        return b_.find_subscription(id);
    }
    void ingest_webhook(const std::string& subscription_id, const inbound_http_request& req,
                        submit_callback done) override {
        b_.ingest_webhook(subscription_id, req, std::move(done));
    }
    void ingest_webhook_for(const subscription& sub, const inbound_http_request& req,
                            submit_callback done) override {
        b_.ingest_webhook(sub, req, std::move(done));
    }
    result<run_record> get_run(const std::string& tenant, const std::string& run_id) override {
        return b_.get_run(tenant, run_id);
    }
    result<poll_result> read_events(const std::string& tenant, const std::string& run_id,
                                    std::int64_t after_sequence, int limit) override {
        return b_.read_events(tenant, run_id, after_sequence, limit);
    }
    std::uint64_t watch_run(const std::string& run_id, std::int64_t after_sequence,
                            std::function<void()> notify) override {
        return b_.watch_run(run_id, after_sequence, std::move(notify));
    }
    void cancel_watch(std::uint64_t token) override { b_.cancel_watch(token); }
    std::uint64_t watch_changes(const std::string& tenant, std::function<void()> notify) override {
        return b_.watch_changes(tenant, std::move(notify));
    }
    void cancel_changes_watch(std::uint64_t token) override { b_.cancel_changes_watch(token); }
    result<seam_deliver_result> seam_deliver(const seam_deliver_request& req) override {
        return b_.seam_deliver(req);
    }
    result<std::vector<run_event>> seam_events(const std::string& tenant,
                                               const std::string& run_id) override {
        return b_.seam_events(tenant, run_id);
    }
    result<void> seam_reset(const std::string& tenant) override { return b_.seam_reset(tenant); }
    result<void> ready() override { return b_.ready(); }
    result<replay_result> replay_dead_letter(const std::string& tenant, const std::string& id,
                                             const std::string& attempt_event_id) override {
        return b_.replay_dead_letter(tenant, id, attempt_event_id);
    }
    result<std::string> replay_dead_letters(const std::string& tenant, const std::string& id,
                                            const replay_range& range, double rate) override {
        return b_.replay_dead_letters(tenant, id, range, rate);
    }
    result<replay_job_status> get_replay_job(const std::string& tenant,
                                             const std::string& job_id) override {
        return b_.get_replay_job(tenant, job_id);
    }
    std::string metrics_text(const std::optional<std::string>& tenant) override {
        return b_.metrics_text(tenant);
    }
    outbound::webhook_dispatcher* webhooks() override { return b_.webhooks(); }
    result<std::vector<subscription_overview>> overview(const std::string& tenant) override {
        return b_.overview(tenant);
    }
    void count_ingest(const std::string& subscription_id, submit_status status) override {
        b_.count_ingest(subscription_id, status);
    }
    result<page<run_record>> list_runs(const std::string& tenant,
                                       const run_list_request& req) override {
        return b_.list_runs(tenant, req);
    }
    result<page<dead_letter_view>> list_dead_letters_with_replays(const std::string& tenant,
                                                                  const std::string& id,
                                                                  const page_request& req) override {
        return b_.list_dead_letters_with_replays(tenant, id, req);
    }

private:
    bridge& b_;
};

} // namespace

std::unique_ptr<bridge_port> make_bridge_port(bridge& b) {
    return std::make_unique<bridge_forwarder>(b);
}

} // namespace wopbridge::http
