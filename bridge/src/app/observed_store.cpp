#include "app/observed_store.hpp"

#include "store/store_codec.hpp"
#include "store/store_forwarder.hpp"

namespace wopbridge {
namespace {

namespace codec = store_codec;

// Only the calls it watches are written out; the rest are the forwarder's.
class observed_store final : public store_forwarder {
public:
    observed_store(std::unique_ptr<store> inner, run_event_observer observer, change_feed* changes)
        : store_forwarder(std::move(inner)), observer_(std::move(observer)), changes_(changes) {}

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
    result<int> release_held(const std::string& id, millis now) override {
        auto r = inner_->release_held(id, now);
        if (r && *r > 0 && changes_) {
            changes_->subscription_changed(id);
        }
        return r;
    }
    result<run_record> get_run(const std::string& id) override {
        auto r = inner_->get_run(id);
        if (r && changes_ && (r->status == run_status::pending || r->status == run_status::running)) {
            changes_->note_run(r->id, r->subscription_id);
        }
        return r;
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

    run_event_observer observer_;
    change_feed* changes_;
};

} // namespace

std::unique_ptr<store> make_observed_store(std::unique_ptr<store> inner,
                                           run_event_observer observer, change_feed* changes) {
    return std::make_unique<observed_store>(std::move(inner), std::move(observer), changes);
}

} // namespace wopbridge
