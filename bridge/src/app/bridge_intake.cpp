// Inbound events: impl::submit and webhook ingest (verification, dedup keys, intake commits),
// their metrics (declared here, rendered by metrics_text) and the attempt log line.
#include "app/bridge_impl.hpp"
#include "intake/provider_verify.hpp"

#include <future>
#include <set>

namespace wopbridge {

using namespace bridge_detail;

std::string_view bridge::impl::outcome_name(submit_status s) {
    switch (s) {
    case submit_status::accepted: return "accepted";
    case submit_status::duplicate: return "duplicate";
    case submit_status::held: return "held";
    case submit_status::not_active: return "not_active";
    case submit_status::signature_invalid: return "signature_invalid";
    case submit_status::not_found: return "not_found";
    case submit_status::invalid: return "invalid";
    case submit_status::overloaded: return "overloaded";
    case submit_status::unavailable: return "unavailable";
    }
    return "unknown";
}

void bridge::impl::log_attempt(const attempt_report& rep) {
    const char* level = rep.outcome == attempt_outcome::retrying ? "debug" : "info";
    if (!log_enabled(level)) {
        return;
    }
    boost::json::object f{{"subscriptionId", rep.subscription_id},
                          {"deliveryId", rep.delivery_id},
                          {"outcome", std::string(to_string(rep.outcome))}};
    if (rep.run_started) {
        f["runId"] = rep.run_id;
    }
    if (rep.state_changed) {
        f["fromState"] = std::string(to_string(rep.state_changed->from));
        f["toState"] = std::string(to_string(rep.state_changed->to));
    }
    log_line(level, "delivery.attempted", std::move(f));
}

void bridge::impl::declare_metrics() {
    const std::vector<double> latency{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
                                      30, 60, 300};
    metrics.declare("wopbridge_ingests_total", metric_kind::counter,
                    "Inbound events by subscription and outcome.", {"subscription", "outcome"});
    metrics.declare("wopbridge_delivery_attempts_total", metric_kind::counter,
                    "Delivery attempts by outcome.", {"outcome"});
    metrics.declare("wopbridge_dead_letters_total", metric_kind::counter,
                    "Dead letters written, by reason.", {"reason"});
    metrics.declare("wopbridge_ingest_latency_seconds", metric_kind::histogram,
                    "Accept to durable commit of an inbound event.", {}, latency);
    metrics.declare("wopbridge_store_commit_latency_seconds", metric_kind::histogram,
                    "Store write transactions as seen by the bridge, by operation.",
                    {"operation"}, latency);
    metrics.declare("wopbridge_run_start_latency_seconds", metric_kind::histogram,
                    "Intake of an event to the commit of the run.started it caused.", {},
                    latency);
    metrics.declare("wopbridge_subscriptions", metric_kind::gauge, "Subscriptions by state.",
                    {"state"});
    metrics.declare("wopbridge_subscription_state", metric_kind::gauge,
                    "1 for the state each subscription is in.", {"subscription", "state"});
    metrics.declare("wopbridge_deliveries_due", metric_kind::gauge,
                    "Pending deliveries due now (the engine is behind or they are paused).",
                    {});
    metrics.declare("wopbridge_deliveries_in_flight", metric_kind::gauge,
                    "Deliveries claimed by an engine whose attempt has not been recorded.", {});
    metrics.declare("wopbridge_deliveries_pending", metric_kind::gauge,
                    "Pending deliveries, due or backing off.", {});
    metrics.declare("wopbridge_deliveries_held", metric_kind::gauge,
                    "Deliveries held while their subscription is not active.", {});
    metrics.declare("wopbridge_dead_letters_stored", metric_kind::gauge,
                    "Unexpired dead letters, by subscription.", {"subscription"});
    metrics.declare("wopbridge_replays_total", metric_kind::counter,
                    "Dead-letter replays committed.", {});
    metrics.declare("wopbridge_purged_rows_total", metric_kind::counter,
                    "Expired dedup rows and dead letters removed by housekeeping.", {});
    metrics.declare("wopbridge_verification_refusals_unrecorded_total", metric_kind::counter,
                    "Refused signatures answered but not written as dead letters "
                    "(past deadLetter.refusedSignatureRecords).",
                    {"subscription"});
}

bool bridge::impl::refusal_record_admitted(const std::string& sub_id) {
    const auto& per_sub = settings.refused_records_per_subscription;
    // Per-subscription keys carry a prefix the total's key lacks: no id can collide with it.
    if (refusal_records.take("s/" + sub_id, per_sub) == 0 &&
        refusal_records.take("total", settings.refused_records_total) == 0) {
        return true;
    }
    metrics.increment("wopbridge_verification_refusals_unrecorded_total",
                      {{"subscription", sub_id}});
    const millis t = now();
    std::uint64_t count = 0;
    {
        wopbridge::lock_guard lock(refusal_log_mutex);
        count = refusals_unrecorded[sub_id].count_one(t, 60 * 1000);
    }
    if (count == 0) {
        return false;
    }
    boost::json::object f;
    f["subscription"] = sub_id;
    f["unrecorded"] = count;
    f["detail"] = "refused signatures past deadLetter.refusedSignatureRecords are answered and "
                  "counted (wopbridge_verification_refusals_unrecorded_total), not written";
    log_line("warn", "dead_letter.refusals_unrecorded", std::move(f));
    return false;
}

void bridge::impl::count_ingest(const std::string& sub_id, submit_status status) {
    // An unknown id is caller-chosen text: never a label value.
    metrics.increment("wopbridge_ingests_total",
                      {{"subscription", status == submit_status::not_found ? "unknown" : sub_id},
                       {"outcome", std::string(outcome_name(status))}});
}

void bridge::impl::count_rate_limited(const std::string& sub_id, std::string_view limit,
                                      std::string_view address) {
    metrics.increment("wopbridge_ingests_total",
                      {{"subscription", sub_id.empty() ? "unknown" : sub_id}, {"outcome", "rate_limited"}});
    const millis t = now();
    std::uint64_t count = 0;
    {
        wopbridge::lock_guard lock(refusal_log_mutex);
        auto it = rate_limited_unlogged.find(limit);
        if (it == rate_limited_unlogged.end()) {
            it = rate_limited_unlogged.emplace(std::string(limit), unrecorded_refusals{}).first;
        }
        count = it->second.count_one(t, 10 * 1000);
    }
    if (count == 0) {
        return;
    }
    boost::json::object f;
    f["limit"] = limit;
    f["refused"] = count;
    f["lastAddress"] = address;
    if (!sub_id.empty()) {
        f["lastSubscription"] = sub_id;
    }
    f["detail"] = limit == "perSourceAddress"
                      ? "an address past server.rateLimits.perSourceAddress (refused requests per "
                        "address) is answered 429; behind a reverse proxy list it in "
                        "server.trustedProxies (docs/deployment.md#behind-a-reverse-proxy)"
                      : "a subscription past its rate limit is answered 429";
    log_line("warn", "ingest.rate_limited", std::move(f));
}

submit_callback bridge::impl::counted(const std::string& sub_id, submit_callback done_in) {
    return [this, sub_id, accepted_at = now(), done_in = std::move(done_in)](submit_result r) {
        count_ingest(sub_id, r.status);
        if (r.status == submit_status::accepted || r.status == submit_status::held) {
            double secs = static_cast<double>(now() - accepted_at) / 1000.0;
            metrics.observe("wopbridge_ingest_latency_seconds", {}, secs);
            metrics.observe("wopbridge_store_commit_latency_seconds", {{"operation", "intake"}},
                            secs);
        }
        done_in(std::move(r));
    };
}

std::optional<submit_result> bridge::impl::admit(const subscription& sub, bool& hold) {
    hold = false;
    if (!accepts_intake(sub.state)) {
        if (!sub.hold_when_not_active) {
            return status_only(submit_status::not_active, "subscription not active");
        }
        // whenNotActive: hold: committed `held`, released by store::release_held on resume.
        hold = true;
    }
    if (!ensure_host_key()) {
        return status_only(submit_status::unavailable, "host key unavailable");
    }
    return std::nullopt;
}

void bridge::impl::submit(const inbound_submission& s, submit_callback done_in) {
    auto done = counted(s.subscription_id, std::move(done_in));
    auto sub = st->get_subscription(s.subscription_id);
    if (!sub) {
        done(status_only(sub.error() == make_error_code(errc::not_found)
                             ? submit_status::not_found
                             : submit_status::unavailable));
        return;
    }
    bool hold = false;
    if (auto refused = admit(*sub, hold)) {
        done(std::move(*refused));
        return;
    }
    commit_intake(s, *sub, hold, std::move(done));
}

void bridge::impl::commit_intake(const inbound_submission& s, const subscription& admitted,
                                 bool hold, submit_callback done) {
    const subscription* sub = &admitted;
    if (pending_intake.fetch_add(1) >= std::max(1, settings.max_pending_intake)) {
        pending_intake.fetch_sub(1);
        done(status_only(submit_status::overloaded, "intake queue full"));
        return;
    }
    millis received = s.received_at > 0 ? s.received_at : now();
    std::string dedup_key;
    if (!s.verbatim_dedup_key.empty()) {
        dedup_key = s.verbatim_dedup_key;
    } else if (!s.provider_event_id.empty()) {
        dedup_key = box->dedup_key(sub->id, s.provider_event_id);
    } else {
        // No provider id: nothing to de-duplicate on; a fresh opaque key per event.
        dedup_key = box->dedup_key(sub->id, mint("evt"));
    }
    intake_request req;
    req.subscription_id = sub->id;
    req.tenant = sub->tenant;
    req.dedup_key = dedup_key;
    req.dedup_enabled = sub->dedup_enabled;
    req.delivery_id = mint("dlv");
    req.run_id = mint("run");
    req.received_at = received;
    req.due_at = now();
    req.hold = hold;
    req.dedup_expires_at = received + settings.dedup_retention_ms;
    events::trigger_event_fields f;
    f.source = sub->source;
    f.subscription_id = sub->id;
    f.delivery_id = req.delivery_id;
    f.received_at = received;
    f.dedup_key = dedup_key;
    f.verified = s.verified;
    auto trigger_event = events::trigger_event_json(f, s.content_json);
    if (!trigger_event) {
        pending_intake.fetch_sub(1);
        done(status_only(submit_status::invalid, "malformed submission content"));
        return;
    }
    req.content_json = std::move(*trigger_event);
    st->intake(std::move(req), [this, tenant = sub->tenant,
                                done = std::move(done)](result<intake_outcome> out) {
        pending_intake.fetch_sub(1);
        if (!out && out.error() != make_error_code(errc::invalid_argument)) {
            note_store_failure("intake", out.error());
        } else if (out && store_failing.load(std::memory_order_relaxed)) {
            note_store_recovered();
        }
        if (!out) {
            done(status_only(out.error() == make_error_code(errc::invalid_argument)
                                 ? submit_status::invalid
                                 : submit_status::unavailable,
                             "the submission could not be committed"));
            return;
        }
        submit_result r;
        r.run_id = out->run_id;
        r.delivery_id = out->delivery_id;
        switch (out->status) {
        case intake_status::accepted:
            r.status = submit_status::accepted;
            {
                wopbridge::lock_guard lock(mutex);
                reserved_runs[r.run_id] = tenant;
            }
            engine->notify();
            break;
        case intake_status::duplicate: r.status = submit_status::duplicate; break;
        case intake_status::held:
            r.status = submit_status::held;
            {
                wopbridge::lock_guard lock(mutex);
                reserved_runs[r.run_id] = tenant;
            }
            break;
        }
        done(std::move(r));
    });
}

void bridge::impl::ingest_webhook(const std::string& id, const inbound_http_request& req,
                                  submit_callback done) {
    auto sub = st->get_subscription(id);
    if (!sub) {
        auto status = sub.error() == make_error_code(errc::not_found) ? submit_status::not_found
                                                                      : submit_status::unavailable;
        count_ingest(id, status);
        done(status_only(status));
        return;
    }
    ingest_webhook(*sub, req, std::move(done));
}

void bridge::impl::ingest_webhook(const subscription& found, const inbound_http_request& req,
                                  submit_callback submitted) {
    const subscription* sub = &found;
    // Answers given here are counted here; a submission is counted by submit().
    auto done = [this, &found, &submitted](submit_result r) {
        count_ingest(found.id, r.status);
        submitted(std::move(r));
    };
    if (sub->source != source_kind::webhook) {
        done(status_only(submit_status::not_found));
        return;
    }
    bool hold = false;
    if (auto refused = admit(*sub, hold)) {
        done(std::move(*refused));
        return;
    }
    millis t = now();
    std::vector<std::string> secrets;
    if (sub->verification != verification_mode::none && !sub->sealed_secret.empty()) {
        auto plain = box->unseal(sub->sealed_secret);
        if (plain) {
            secrets = intake::split_secrets(*plain);
        }
    }
    const auto provider_name = provider_of(sub->id);
    const auto* provider = provider_name.empty() ? nullptr : providers::find(provider_name);
    auto v = provider != nullptr
                 ? intake::verify_provider(*provider, sub->verification, secrets, req, t / 1000)
                 : intake::verify_webhook(sub->verification, secrets, req, t / 1000);
    if (v.refused) {
        // Recorded within the budget (RFC 0230 §C.1: a malformed post is a refused ingest too);
        // past it answered alike, counted and not written, so a flood cannot fill the disk.
        if (refusal_record_admitted(sub->id)) {
            verification_refusal ref;
            ref.subscription_id = sub->id;
            ref.dedup_key =
                box->dedup_key(sub->id, v.webhook_id.empty() ? mint("evt") : v.webhook_id);
            ref.attempt_event_id = mint("evt");
            ref.at = t;
            // The advertised retention, as every dead letter (RFC 0232 §C: expiresAt −
            // deadLetteredAt = retentionDays); the budget, not a shorter life, bounds the disk.
            ref.expires_at = t + settings.dead_letter_retention_days * 24LL * 3600 * 1000;
            if (!st->record_verification_refusal(ref)) {
                done(status_only(submit_status::unavailable, "the refusal could not be recorded"));
                return;
            }
            metrics.increment("wopbridge_dead_letters_total", {{"reason", "verification_failed"}});
        }
        // A header not of its form is the sender's request error, so it is told which one.
        if (!v.malformed_header.empty()) {
            done(status_only(submit_status::invalid, v.malformed_header));
            return;
        }
        done(status_only(submit_status::signature_invalid, "signature verification failed"));
        return;
    }
    if (v.answer) {
        // A verified endpoint check (Discord PING, Zoom URL validation): answered, not stored,
        // not counted as an ingest.
        submit_result r;
        r.handshake = std::move(v.answer);
        submitted(std::move(r));
        return;
    }
    inbound_submission s;
    s.subscription_id = sub->id;
    s.provider_event_id = v.webhook_id;
    s.received_at = t;
    s.verified = v.verified;
    s.content_json = provider != nullptr
                         ? intake::webhook_content_json(req, intake::provider_headers(*provider))
                         : intake::webhook_content_json(req);
    commit_intake(s, *sub, hold, counted(sub->id, std::move(submitted)));
}

submit_result bridge::impl::submit_sync(const inbound_submission& s) {
    auto p = std::make_shared<std::promise<submit_result>>();
    auto f = p->get_future();
    submit(s, [p](submit_result r) { p->set_value(std::move(r)); });
    if (f.wait_for(seam_deadline) != std::future_status::ready) {
        return status_only(submit_status::unavailable, "intake did not commit in time");
    }
    return f.get();
}

// ---- bridge ------------------------------------------------------------------------------------------

void bridge::ingest_webhook(const std::string& subscription_id, const inbound_http_request& req,
                            submit_callback done) {
    impl_->ingest_webhook(subscription_id, req, std::move(done));
}

void bridge::ingest_webhook(const subscription& sub, const inbound_http_request& req,
                            submit_callback done) {
    impl_->ingest_webhook(sub, req, std::move(done));
}

void bridge::submit(const inbound_submission& s, submit_callback done) {
    impl_->submit(s, std::move(done));
}

void bridge::count_ingest(const std::string& subscription_id, submit_status status) {
    impl_->count_ingest(subscription_id, status);
}

void bridge::count_rate_limited(const std::string& subscription_id, std::string_view limit,
                                std::string_view address) {
    impl_->count_rate_limited(subscription_id, limit, address);
}

bool bridge::has_intake_capacity() const noexcept {
    return impl_->pending_intake.load() < std::max(1, impl_->settings.max_pending_intake);
}

std::string bridge::metrics_text() {
    return metrics_text_for(nullptr);
}

std::string bridge::metrics_text(const std::optional<std::string>& tenant) {
    return metrics_text_for(&tenant);
}

// scoped: nullptr = every series; nullopt = none naming a subscription; a tenant = its own.
std::string bridge::metrics_text_for(const std::optional<std::string>* scoped) {
    auto& m = *impl_;
    const std::string* tenant = scoped != nullptr && scoped->has_value() ? &**scoped : nullptr;
    std::set<std::string, std::less<>> own; // the scraping tenant's subscription ids
    // Answers given before any subscription was read (unknown ids, an address past its budget)
    // belong to no tenant: every tenant's scrape sees them.
    own.insert("unknown");
    // Snapshots computed at scrape time.
    if (auto subs = m.st->list_all_subscriptions()) {
        std::map<std::string, int> by_state{{"active", 0}, {"paused", 0}, {"failed", 0},
                                            {"dead-lettered", 0}};
        for (const auto& sub : *subs) {
            ++by_state[std::string(to_string(sub.state))];
            if (tenant != nullptr && sub.tenant == *tenant) {
                own.insert(sub.id);
            }
        }
        m.metrics.clear("wopbridge_subscriptions");
        for (const auto& [state, n] : by_state) {
            m.metrics.set("wopbridge_subscriptions", {{"state", state}}, n);
        }
        m.metrics.clear("wopbridge_subscription_state");
        for (const auto& sub : *subs) {
            for (const auto& [state, n] : by_state) {
                m.metrics.set("wopbridge_subscription_state",
                              {{"subscription", sub.id}, {"state", state}},
                              state == to_string(sub.state) ? 1 : 0);
            }
        }
    }
    if (auto counts = m.st->outstanding_work(m.now())) {
        subscription_delivery_stats total;
        m.metrics.clear("wopbridge_dead_letters_stored");
        for (const auto& c : *counts) {
            total.due += c.due;
            total.in_flight += c.in_flight;
            total.pending += c.pending;
            total.held += c.held;
            if (c.dead_letters > 0) {
                m.metrics.set("wopbridge_dead_letters_stored",
                              {{"subscription", c.subscription_id}},
                              static_cast<double>(c.dead_letters));
            }
        }
        m.metrics.set("wopbridge_deliveries_due", {}, static_cast<double>(total.due));
        m.metrics.set("wopbridge_deliveries_in_flight", {}, static_cast<double>(total.in_flight));
        m.metrics.set("wopbridge_deliveries_pending", {}, static_cast<double>(total.pending));
        m.metrics.set("wopbridge_deliveries_held", {}, static_cast<double>(total.held));
    }
    std::string text = scoped == nullptr  ? m.metrics.exposition()
                       : scoped->has_value() ? m.metrics.exposition_for(own)
                                             : m.metrics.exposition_without_subscriptions();
    auto st = m.st->stats();
    text += "# HELP wopbridge_store_commits_total Write transactions committed by the store.\n"
            "# TYPE wopbridge_store_commits_total counter\n"
            "wopbridge_store_commits_total " + std::to_string(st.commits) + "\n";
    // Networked backends (PostgreSQL): statements sent, and the intake group commits, so round
    // trips per accepted event can be read off a running node.
    text += "# HELP wopbridge_store_round_trips_total Statements sent to the database server.\n"
            "# TYPE wopbridge_store_round_trips_total counter\n"
            "wopbridge_store_round_trips_total " + std::to_string(st.round_trips) + "\n";
    text += "# HELP wopbridge_store_intake_batches_total Intake group-commit transactions.\n"
            "# TYPE wopbridge_store_intake_batches_total counter\n"
            "wopbridge_store_intake_batches_total " + std::to_string(st.intake_batches) + "\n";
    text += "# HELP wopbridge_store_intake_requests_total Intake requests answered by those "
            "batches.\n"
            "# TYPE wopbridge_store_intake_requests_total counter\n"
            "wopbridge_store_intake_requests_total " + std::to_string(st.intake_requests) + "\n";
    std::vector<std::function<std::string()>> sources;
    {
        wopbridge::lock_guard lock(m.observers_mutex);
        sources = m.metrics_sources;
    }
    for (const auto& render : sources) {
        text += render();
    }
    return text;
}

void bridge::add_metrics_source(std::function<std::string()> render) {
    wopbridge::lock_guard lock(impl_->observers_mutex);
    impl_->metrics_sources.push_back(std::move(render));
}

} // namespace wopbridge
