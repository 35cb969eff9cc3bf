#pragma once
// A store that hands every call to another one. Decorators (the observed store, test fault
// injectors) derive from it and override only the calls they watch or alter.

#include "store/store.hpp"

#include <memory>
#include <utility>

namespace wopbridge {

class store_forwarder : public store {
public:
    explicit store_forwarder(std::unique_ptr<store> inner) : inner_(std::move(inner)) {}

    // subscription_store
    result<void> insert_subscription(const subscription& s) override {
        return inner_->insert_subscription(s);
    }
    result<void> upsert_config_subscription(const subscription& s) override {
        return inner_->upsert_config_subscription(s);
    }
    result<subscription> get_subscription(const std::string& id) override {
        return inner_->get_subscription(id);
    }
    result<std::vector<subscription>> list_subscriptions(const std::string& tenant) override {
        return inner_->list_subscriptions(tenant);
    }
    result<std::vector<subscription>> list_all_subscriptions() override {
        return inner_->list_all_subscriptions();
    }
    result<void> delete_subscription(const std::string& id) override {
        return inner_->delete_subscription(id);
    }
    result<void> change_state(const state_change& c, const std::string& event_id,
                              millis at) override {
        return inner_->change_state(c, event_id, at);
    }
    result<bool> replace_connector_settings(const std::string& id, const std::string& expected,
                                            const std::string& replacement) override {
        return inner_->replace_connector_settings(id, expected, replacement);
    }

    // intake_store
    void intake(intake_request req, intake_callback done) override {
        inner_->intake(std::move(req), std::move(done));
    }
    result<void> record_verification_refusal(const verification_refusal& r) override {
        return inner_->record_verification_refusal(r);
    }

    // delivery_queue
    result<std::vector<delivery>> claim_due(millis now, int limit, millis lease_ms) override {
        return inner_->claim_due(now, limit, lease_ms);
    }
    result<std::string> delivery_content(const std::string& id) override {
        return inner_->delivery_content(id);
    }
    result<void> record_attempt(const attempt_record& rec) override {
        return inner_->record_attempt(rec);
    }
    std::vector<result<void>> record_attempts(const std::vector<attempt_record>& recs) override {
        return inner_->record_attempts(recs);
    }
    result<std::map<std::string, std::string>>
    delivery_contents(const std::vector<std::string>& ids) override {
        return inner_->delivery_contents(ids);
    }
    result<std::optional<millis>> next_due_at() override { return inner_->next_due_at(); }
    result<page<delivery>> list_deliveries(const std::string& id,
                                           const page_request& req) override {
        return inner_->list_deliveries(id, req);
    }
    result<delivery> get_delivery(const std::string& id) override {
        return inner_->get_delivery(id);
    }
    result<int> release_held(const std::string& id, millis now) override {
        return inner_->release_held(id, now);
    }
    result<page<dead_letter>> list_dead_letters(const std::string& id, const page_request& req,
                                                millis now) override {
        return inner_->list_dead_letters(id, req, now);
    }
    result<std::vector<subscription_delivery_stats>> delivery_stats(millis now) override {
        return inner_->delivery_stats(now);
    }
    result<std::vector<subscription_delivery_stats>> outstanding_work(millis now) override {
        return inner_->outstanding_work(now);
    }
    result<std::map<std::string, delivery>>
    deliveries_by_dedup_key(const std::string& id, const std::vector<std::string>& keys) override {
        return inner_->deliveries_by_dedup_key(id, keys);
    }

    // run_log
    result<run_record> get_run(const std::string& id) override { return inner_->get_run(id); }
    result<std::vector<run_event>> run_events_after(const std::string& id, std::int64_t after,
                                                    int limit) override {
        return inner_->run_events_after(id, after, limit);
    }
    result<run_event> append_run_event(const std::string& run_id, const std::string& type,
                                       const std::string& payload_json,
                                       const std::string& causation_id,
                                       const std::string& event_id, millis at) override {
        return inner_->append_run_event(run_id, type, payload_json, causation_id, event_id, at);
    }
    result<void> set_run_status(const std::string& id, run_status s, millis at) override {
        return inner_->set_run_status(id, s, at);
    }
    result<run_event> end_run(const std::string& run_id, const std::string& type,
                              const std::string& payload_json, const std::string& event_id,
                              run_status status, millis at) override {
        return inner_->end_run(run_id, type, payload_json, event_id, status, at);
    }
    result<std::vector<run_record>> list_runs_with_status(run_status s) override {
        return inner_->list_runs_with_status(s);
    }
    result<std::vector<run_event>> subscription_events(const std::string& id) override {
        return inner_->subscription_events(id);
    }
    result<std::vector<run_record>> list_runs(const run_query& q) override {
        return inner_->list_runs(q);
    }

    // key_store
    result<std::string> bind_host_key_check(const std::string& check,
                                            const std::string& wrapped_data_key) override {
        return inner_->bind_host_key_check(check, wrapped_data_key);
    }
    result<std::string> host_key_check() override { return inner_->host_key_check(); }
    result<bool> has_keyed_rows() override { return inner_->has_keyed_rows(); }
    result<std::map<std::string, std::string>> data_key_wraps() override {
        return inner_->data_key_wraps();
    }
    result<void> add_data_key_wrap(const std::string& check, const std::string& wrapped) override {
        return inner_->add_data_key_wrap(check, wrapped);
    }
    result<int> retire_data_key_wraps(const std::string& keep_check) override {
        return inner_->retire_data_key_wraps(keep_check);
    }

    // outbound_store
    result<void> insert_outbound_webhook(const outbound_webhook& w) override {
        return inner_->insert_outbound_webhook(w);
    }
    result<outbound_webhook> get_outbound_webhook(const std::string& id) override {
        return inner_->get_outbound_webhook(id);
    }
    result<std::vector<outbound_webhook>> list_outbound_webhooks(const std::string& t) override {
        return inner_->list_outbound_webhooks(t);
    }
    result<void> delete_outbound_webhook(const std::string& id) override {
        return inner_->delete_outbound_webhook(id);
    }
    result<int> enqueue_outbound(const std::string& run_id, std::int64_t seq, millis at) override {
        return inner_->enqueue_outbound(run_id, seq, at);
    }
    result<std::vector<outbound_delivery>> claim_outbound_due(millis now, int limit, int per,
                                                              millis lease) override {
        return inner_->claim_outbound_due(now, limit, per, lease);
    }
    result<void> record_outbound_attempt(const outbound_attempt& a) override {
        return inner_->record_outbound_attempt(a);
    }
    result<int> count_outbound_failures(const std::string& id, millis since) override {
        return inner_->count_outbound_failures(id, since);
    }
    result<std::optional<millis>> outbound_next_due_at() override {
        return inner_->outbound_next_due_at();
    }
    result<std::vector<outbound_delivery>> list_outbound_deliveries(
        const std::string& id) override {
        return inner_->list_outbound_deliveries(id);
    }
    result<page<outbound_dead_letter>> list_outbound_dead_letters(const std::string& id,
                                                                  const page_request& req,
                                                                  millis now) override {
        return inner_->list_outbound_dead_letters(id, req, now);
    }
    result<std::vector<outbound_state_change>> list_outbound_state_changes(
        const std::string& id) override {
        return inner_->list_outbound_state_changes(id);
    }

    // replay_job_store
    result<void> create_replay_job(const replay_job_record& j,
                                   const std::vector<std::string>& ids) override {
        return inner_->create_replay_job(j, ids);
    }
    result<replay_job_record> get_replay_job(const std::string& id) override {
        return inner_->get_replay_job(id);
    }
    result<std::vector<replay_job_item>> unsettled_replay_job_items(const std::string& id) override {
        return inner_->unsettled_replay_job_items(id);
    }
    result<void> update_replay_job(const replay_job_update& u) override {
        return inner_->update_replay_job(u);
    }
    result<std::vector<replay_job_record>> claim_replay_jobs(const std::string& owner, millis now,
                                                             millis lease_ms) override {
        return inner_->claim_replay_jobs(owner, now, lease_ms);
    }
    result<int> release_replay_jobs(const std::string& owner) override {
        return inner_->release_replay_jobs(owner);
    }

    // node_registry
    result<int> release_all_claims() override { return inner_->release_all_claims(); }
    result<int> keep_node_alive(millis silent_ms) override {
        return inner_->keep_node_alive(silent_ms);
    }
    result<void> leave_cluster() override { return inner_->leave_cluster(); }

    // store_upkeep
    result<int> purge_expired(millis now) override { return inner_->purge_expired(now); }
    result<void> ping() override { return inner_->ping(); }
    result<void> probe_write() override { return inner_->probe_write(); }
    std::string damage() const override { return inner_->damage(); }
    store_stats stats() const override { return inner_->stats(); }

protected:
    std::unique_ptr<store> inner_;
};

} // namespace wopbridge
