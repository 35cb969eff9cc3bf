// The conformance suite's test seams (settings.test_seams): driving the engine to a settled
// delivery, seam subscriptions, and bridge::seam_deliver/seam_events/seam_reset.
#include "app/bridge_impl.hpp"

#include <future>

namespace wopbridge {

using namespace bridge_detail;

result<delivery> bridge::impl::drive(const std::string& delivery_id) {
    auto until = std::chrono::steady_clock::now() + seam_deadline;
    for (;;) {
        auto d = st->get_delivery(delivery_id);
        if (!d) {
            return d.error();
        }
        if (d->status == delivery_status::delivered || d->status == delivery_status::dead_lettered) {
            return d;
        }
        if (std::chrono::steady_clock::now() >= until) {
            return make_error_code(errc::internal);
        }
        std::uint64_t seen;
        {
            wopbridge::lock_guard lock(mutex);
            seen = progress;
        }
        int n = 0;
        if (d->status == delivery_status::pending) {
            n = engine->run_due(std::max(now(), d->due_at));
        }
        if (n == 0) {
            // In flight on the engine thread (or probing): wait for the next recorded attempt.
            wopbridge::unique_lock lock(mutex);
            lock.wait_for(progress_cv, std::chrono::milliseconds(50),
                          [&]() REQUIRES(mutex) { return progress != seen; });
        }
    }
}

result<subscription> bridge::impl::make_seam_subscription(const std::string& tenant,
                                                          source_kind source,
                                                          std::string_view workflow,
                                                          retry_policy retry,
                                                          std::string sealed_secret) {
    subscription sub;
    sub.id = mint("sub");
    sub.tenant = tenant;
    sub.source = source;
    sub.state = initial_state();
    sub.workflow_id = std::string(workflow);
    sub.dedup_enabled = true;
    sub.retry = retry;
    sub.breaker = settings.default_breaker;
    sub.verification =
        sealed_secret.empty() ? verification_mode::none : verification_mode::required;
    sub.sealed_secret = std::move(sealed_secret);
    sub.origin = subscription::origin_kind::seam;
    sub.created_at = sub.updated_at = now();
    auto ins = st->insert_subscription(sub);
    if (!ins) {
        return ins.error();
    }
    return sub;
}

// ---- bridge ------------------------------------------------------------------------------------------

result<seam_deliver_result> bridge::seam_deliver(const seam_deliver_request& req) {
    auto& m = *impl_;
    if (!m.settings.test_seams) {
        return make_error_code(errc::not_found);
    }
    if (auto keyed = m.ensure_host_key(); !keyed) {
        return keyed.error();
    }
    auto source = req.source.empty() ? std::optional(source_kind::webhook) : parse_source_kind(req.source);
    if (!source) {
        return make_error_code(errc::invalid_argument);
    }
    const std::string tenant = req.tenant.empty() ? "default" : req.tenant;
    seam_deliver_result out;

    auto submission = [&](const subscription& sub) {
        inbound_submission s;
        s.subscription_id = sub.id;
        s.provider_event_id = m.mint("evt");
        s.received_at = m.now();
        s.verified = true;
        s.content_json = std::string("{\"") + std::string(to_string(sub.source)) + "\":{}}";
        return s;
    };

    if (req.scenario == "dedup" || req.scenario == "deliver") {
        retry_policy quick{3, backoff_kind::fixed, 50, 50, false};
        auto sub = req.subscription_id.empty()
                       ? m.make_seam_subscription(tenant, *source, seam_noop_workflow, quick)
                       : m.owned(tenant, req.subscription_id);
        if (!sub) {
            return sub.error();
        }
        auto s = submission(*sub);
        if (req.scenario == "dedup") {
            s.verbatim_dedup_key = req.dedup_key.empty() ? m.mint("seam") : req.dedup_key;
        }
        auto first = m.submit_sync(s);
        if (first.status != submit_status::accepted && first.status != submit_status::duplicate) {
            return make_error_code(first.status == submit_status::unavailable ? errc::store_unavailable
                                                                               : errc::internal);
        }
        auto d = m.drive(first.delivery_id);
        if (!d) {
            return d.error();
        }
        out.subscription_id = sub->id;
        out.run_id = first.run_id;
        out.outcome = std::string(to_string(attempt_outcome::delivered));
        out.delivered_count = d->status == delivery_status::delivered ? 1 : 0;
        if (req.scenario == "dedup") {
            auto second = m.submit_sync(s); // same key: a no-op returning the prior run
            if (second.status == submit_status::accepted) {
                return make_error_code(errc::internal); // dedup broken: say so rather than pass
            }
        }
        return out;
    }
    if (req.scenario == "exhaust") {
        retry_policy quick{2, backoff_kind::fixed, 20, 20, false};
        auto sub = m.make_seam_subscription(tenant, *source, seam_fail_workflow, quick);
        if (!sub) {
            return sub.error();
        }
        auto first = m.submit_sync(submission(*sub));
        if (first.status != submit_status::accepted) {
            return make_error_code(first.status == submit_status::unavailable ? errc::store_unavailable
                                                                               : errc::internal);
        }
        auto d = m.drive(first.delivery_id);
        if (!d) {
            return d.error();
        }
        out.subscription_id = sub->id;
        out.run_id = sub->id; // the carrier: seam_events serves the subscription's run-less log
        out.outcome = std::string(to_string(attempt_outcome::dead_lettered));
        out.delivered_count = 0;
        return out;
    }
    if (req.scenario == "refused") {
        // A signed subscription and one post whose signature cannot match, through the webhook
        // intake's verification and refusal recording (the path a forged request takes).
        retry_policy quick{3, backoff_kind::fixed, 50, 50, false};
        auto sub = m.make_seam_subscription(tenant, *source, seam_noop_workflow, quick,
                                            m.box->seal("whsec_" + m.mint("seam"), m.random));
        if (!sub) {
            return sub.error();
        }
        inbound_http_request forged;
        forged.target = "/v1/ingest/" + sub->id;
        forged.body = "{}";
        const std::string ts = std::to_string(m.now() / 1000);
        forged.headers = {{"content-type", "application/json"},
                          {"webhook-id", m.mint("msg")},
                          {"webhook-timestamp", ts},
                          {"webhook-signature", "v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}};
        subscription as_webhook = *sub; // verification is the webhook intake's for every source
        as_webhook.source = source_kind::webhook;
        auto p = std::make_shared<std::promise<submit_result>>();
        auto f = p->get_future();
        m.ingest_webhook(as_webhook, forged, [p](submit_result r) { p->set_value(std::move(r)); });
        auto refused = f.get();
        if (refused.status != submit_status::signature_invalid) {
            return make_error_code(refused.status == submit_status::unavailable
                                       ? errc::store_unavailable
                                       : errc::internal);
        }
        auto after = m.st->get_subscription(sub->id);
        if (!after) {
            return after.error();
        }
        out.subscription_id = sub->id;
        out.run_id = sub->id; // the carrier, as for exhaust: the refusal is in the run-less log
        out.outcome = std::string(to_string(attempt_outcome::dead_lettered));
        out.subscription_state = std::string(to_string(after->state));
        out.delivered_count = 0;
        return out;
    }
    return make_error_code(errc::invalid_argument);
}

result<std::vector<run_event>> bridge::seam_events(const std::string& tenant, const std::string& run_id) {
    auto& m = *impl_;
    if (!m.settings.test_seams) {
        return make_error_code(errc::not_found);
    }
    if (auto run = m.st->get_run(run_id); run && run->tenant == tenant) {
        return m.st->run_events_after(run_id, -1, 100000);
    }
    if (auto sub = m.st->get_subscription(run_id); sub && sub->tenant == tenant) {
        return m.st->subscription_events(run_id);
    }
    return std::vector<run_event>{};
}

result<void> bridge::seam_reset(const std::string& tenant) {
    auto& m = *impl_;
    if (!m.settings.test_seams) {
        return make_error_code(errc::not_found);
    }
    auto subs = m.st->list_subscriptions(tenant);
    if (!subs) {
        return subs.error();
    }
    for (const auto& sub : *subs) {
        if (sub.origin == subscription::origin_kind::seam) {
            (void)m.st->delete_subscription(sub.id);
        }
    }
    return {};
}

} // namespace wopbridge
