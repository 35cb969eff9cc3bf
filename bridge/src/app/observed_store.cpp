#include "app/observed_store.hpp"

#include "store/store_codec.hpp"

namespace wopbridge {
namespace {

namespace codec = store_codec;

class observed_store final : public store {
public:
    observed_store(std::unique_ptr<store> inner, run_event_observer observer, change_feed* changes)
        : inner_(std::move(inner)), observer_(std::move(observer)), changes_(changes) {}

    result<void> insert_subscription(const subscription& s) override {
        auto r = inner_->insert_subscription(s);
        if (r && changes_) {
            changes_->note_subscription(s.id, s.tenant);
            changes_->tenant_changed(s.tenant);
        }
        return r;
    }
    result<void> upsert_config_subscription(const subscription& s) override {
        auto r = inner_->upsert_config_subscription(s);
        if (r && changes_) {
            changes_->note_subscription(s.id, s.tenant);
            changes_->tenant_changed(s.tenant);
        }
        return r;
    }
    result<subscription> get_subscription(const std::string& id) override {
        auto r = inner_->get_subscription(id);
        if (r && changes_) {
            changes_->note_subscription(r->id, r->tenant);
        }
        return r;
    }
    result<std::vector<subscription>> list_subscriptions(const std::string& tenant) override {
        return noted(inner_->list_subscriptions(tenant));
    }
    result<std::vector<subscription>> list_all_subscriptions() override {
        return noted(inner_->list_all_subscriptions());
    }
    result<void> delete_subscription(const std::string& id) override {
        return changed(inner_->delete_subscription(id), id);
    }
    result<void> change_state(const state_change& c, const std::string& event_id,
                              millis at) override {
        return changed(inner_->change_state(c, event_id, at), c.subscription_id);
    }
    void intake(intake_request req, intake_callback done) override {
        if (!changes_) {
            inner_->intake(std::move(req), std::move(done));
            return;
        }
        changes_->note_subscription(req.subscription_id, req.tenant);
        std::string tenant = req.tenant;
        inner_->intake(std::move(req), [changes = changes_, tenant = std::move(tenant),
                                        done = std::move(done)](result<intake_outcome> outcome) mutable {
            if (outcome) {
                changes->tenant_changed(tenant); // committed: the watchers only schedule
            }
            done(std::move(outcome));
        });
    }
    result<void> record_verification_refusal(const verification_refusal& r) override {
        return changed(inner_->record_verification_refusal(r), r.subscription_id);
    }
    result<std::vector<delivery>> claim_due(millis now, int limit, millis lease_ms) override {
        return inner_->claim_due(now, limit, lease_ms);
    }
    result<std::string> delivery_content(const std::string& id) override {
        return inner_->delivery_content(id);
    }
    result<void> record_attempt(const attempt_record& rec) override {
        auto r = inner_->record_attempt(rec);
        if (r) {
            observe_new_run(rec);
            attempt_changed(rec);
        }
        return r;
    }
    std::vector<result<void>> record_attempts(const std::vector<attempt_record>& recs) override {
        auto out = inner_->record_attempts(recs);
        for (std::size_t i = 0; i < recs.size() && i < out.size(); ++i) {
            if (out[i]) {
                observe_new_run(recs[i]);
                attempt_changed(recs[i]);
            }
        }
        return out;
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
        auto r = inner_->release_held(id, now);
        if (r && *r > 0 && changes_) {
            changes_->subscription_changed(id);
        }
        return r;
    }
    result<page<dead_letter>> list_dead_letters(const std::string& id, const page_request& req,
                                                millis now) override {
        return inner_->list_dead_letters(id, req, now);
    }
    result<run_record> get_run(const std::string& id) override {
        auto r = inner_->get_run(id);
        if (r && changes_ && (r->status == run_status::pending || r->status == run_status::running)) {
            changes_->note_run(r->id, r->subscription_id);
        }
        return r;
    }
    result<std::vector<run_event>> run_events_after(const std::string& id, std::int64_t after,
                                                    int limit) override {
        return inner_->run_events_after(id, after, limit);
    }
    result<run_event> append_run_event(const std::string& run_id, const std::string& type,
                                       const std::string& payload_json,
                                       const std::string& causation_id,
                                       const std::string& event_id, millis at) override {
        auto e = inner_->append_run_event(run_id, type, payload_json, causation_id, event_id, at);
        if (e && observer_) {
            observer_(*e);
        }
        if (e && changes_) {
            changes_->run_changed(run_id, false);
        }
        return e;
    }
    result<void> set_run_status(const std::string& id, run_status s, millis at) override {
        auto r = inner_->set_run_status(id, s, at);
        if (r && changes_) {
            changes_->run_changed(id, s == run_status::completed || s == run_status::failed);
        }
        return r;
    }
    result<std::string> bind_host_key_check(const std::string& check,
                                            const std::string& wrapped_data_key) override {
        return inner_->bind_host_key_check(check, wrapped_data_key);
    }
    result<bool> has_keyed_rows() override { return inner_->has_keyed_rows(); }
    result<int> keep_node_alive(millis silent_ms) override {
        return inner_->keep_node_alive(silent_ms);
    }
    result<void> leave_cluster() override { return inner_->leave_cluster(); }
    result<std::map<std::string, std::string>> data_key_wraps() override {
        return inner_->data_key_wraps();
    }
    result<void> add_data_key_wrap(const std::string& check, const std::string& wrapped) override {
        return inner_->add_data_key_wrap(check, wrapped);
    }
    result<int> retire_data_key_wraps(const std::string& keep_check) override {
        return inner_->retire_data_key_wraps(keep_check);
    }
    result<std::string> host_key_check() override { return inner_->host_key_check(); }
    result<void> probe_write() override { return inner_->probe_write(); }
    result<int> release_all_claims() override { return inner_->release_all_claims(); }
    result<run_event> end_run(const std::string& run_id, const std::string& type,
                              const std::string& payload_json, const std::string& event_id,
                              run_status status, millis at) override {
        auto e = inner_->end_run(run_id, type, payload_json, event_id, status, at);
        if (e && observer_) {
            observer_(*e);
        }
        if (e && changes_) {
            changes_->run_changed(run_id, true);
        }
        return e;
    }
    result<std::vector<run_record>> list_runs_with_status(run_status s) override {
        return inner_->list_runs_with_status(s);
    }
    result<std::vector<run_event>> subscription_events(const std::string& id) override {
        return inner_->subscription_events(id);
    }
    result<int> purge_expired(millis now) override { return inner_->purge_expired(now); }
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
    result<void> ping() override { return inner_->ping(); }
    store_stats stats() const override { return inner_->stats(); }

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

    result<std::vector<subscription_delivery_stats>> delivery_stats(millis now) override {
        return inner_->delivery_stats(now);
    }
    result<bool> replace_connector_settings(const std::string& id, const std::string& expected,
                                            const std::string& replacement) override {
        return inner_->replace_connector_settings(id, expected, replacement);
    }
    result<std::vector<run_record>> list_runs(const run_query& q) override {
        return inner_->list_runs(q);
    }
    result<std::map<std::string, delivery>>
    deliveries_by_dedup_key(const std::string& id, const std::vector<std::string>& keys) override {
        return inner_->deliveries_by_dedup_key(id, keys);
    }

private:
    result<void> changed(result<void> r, const std::string& subscription_id) {
        if (r && changes_) {
            changes_->subscription_changed(subscription_id);
        }
        return r;
    }
    result<std::vector<subscription>> noted(result<std::vector<subscription>> r) {
        if (r && changes_) {
            for (const auto& s : *r) {
                changes_->note_subscription(s.id, s.tenant);
            }
        }
        return r;
    }
    void attempt_changed(const attempt_record& rec) {
        if (!changes_) {
            return;
        }
        if (rec.run) {
            changes_->note_run(rec.run->id, rec.subscription_id);
        }
        changes_->subscription_changed(rec.subscription_id);
    }

    // A new run: its whole log was appended by the record's transaction, in the order every backend
    // writes it (the attempt at 0, run.started at 1, the follow-ups after), so it is told from the
    // record itself rather than read back (a read per run start).
    void observe_new_run(const attempt_record& rec) {
        if (!rec.run || !observer_) {
            return;
        }
        const std::string& run_id = rec.run->id;
        delivery_attempt attempt = rec.attempt;
        attempt.subscription_id = rec.subscription_id;
        if (attempt.run_id.empty()) {
            attempt.run_id = run_id;
        }
        std::int64_t sequence = 0;
        observer_({rec.attempt_event_id, run_id, std::string(codec::event_delivery_attempted),
                   codec::attempt_payload_json(attempt), rec.at, sequence++, ""});
        observer_({rec.run_started_event_id, run_id, std::string(codec::event_run_started),
                   rec.run_started_payload_json, rec.at, sequence++, rec.attempt_event_id});
        for (std::size_t i = 0; i < rec.extra_run_events.size(); ++i) {
            std::string id =
                i < rec.extra_run_event_ids.size() ? rec.extra_run_event_ids[i] : std::string{};
            if (id.empty()) {
                id = rec.run_started_event_id + "." + std::to_string(i + 1);
            }
            const auto& [type, payload] = rec.extra_run_events[i];
            observer_({std::move(id), run_id, type, payload, rec.at, sequence++, ""});
        }
    }

    std::unique_ptr<store> inner_;
    run_event_observer observer_;
    change_feed* changes_;
};

} // namespace

std::unique_ptr<store> make_observed_store(std::unique_ptr<store> inner,
                                           run_event_observer observer, change_feed* changes) {
    return std::make_unique<observed_store>(std::move(inner), std::move(observer), changes);
}

} // namespace wopbridge
