// Dead-letter replay: impl::replay and all_dead_letters, single and bulk replays (replay jobs)
// and the dead-letter listing with the replays made of them.
#include "app/bridge_impl.hpp"

namespace wopbridge {

using namespace bridge_detail;

result<std::vector<dead_letter>>
bridge::impl::all_dead_letters(const std::string& sub_id) {
    std::vector<dead_letter> out;
    page_request pr;
    pr.limit = 1000;
    for (int guard = 0; guard < 100000; ++guard) {
        auto pg = st->list_dead_letters(sub_id, pr, now());
        if (!pg) {
            return pg.error();
        }
        out.insert(out.end(), pg->items.begin(), pg->items.end());
        if (pg->next_cursor.empty()) {
            break;
        }
        pr.cursor = pg->next_cursor;
    }
    return out;
}

result<replay_result> bridge::impl::replay(const subscription& sub,
                                           const dead_letter& dl) {
    if (dl.reason == dead_letter_reason::verification_failed || dl.delivery_id.empty()) {
        return make_error_code(errc::conflict); // its content was never stored
    }
    auto content = st->delivery_content(dl.delivery_id);
    if (!content) {
        return content.error();
    }
    intake_request req;
    req.subscription_id = sub.id;
    req.tenant = sub.tenant;
    req.dedup_key = replay_dedup_key(dl.attempt_event_id);
    req.dedup_enabled = true; // replaying the same dead letter twice is idempotent
    req.delivery_id = mint("dlv");
    req.run_id = mint("run");
    req.received_at = now();
    req.due_at = now();
    req.hold = !accepts_intake(sub.state);
    req.dedup_expires_at = req.received_at + std::max<millis>(settings.dedup_retention_ms,
                                                              dl.expires_at - req.received_at);
    req.content_json = std::move(*content);
    auto out = st->intake_sync(std::move(req));
    if (!out) {
        return out.error();
    }
    replay_result r;
    r.delivery_id = out->delivery_id;
    r.run_id = out->run_id;
    r.held = out->status == intake_status::held;
    r.repeated = out->status == intake_status::duplicate;
    log_line("info", "dead_letter.replayed",
             {{"subscriptionId", sub.id},
              {"attemptEventId", dl.attempt_event_id},
              {"deliveryId", r.delivery_id},
              {"runId", r.run_id},
              {"held", r.held},
              {"repeated", r.repeated}});
    if (!r.repeated) {
        metrics.increment("wopbridge_replays_total");
        wopbridge::lock_guard lock(mutex);
        reserved_runs[r.run_id] = sub.tenant;
    }
    engine->notify();
    return r;
}

// ---- bridge ------------------------------------------------------------------------------------------

result<replay_result> bridge::replay_dead_letter(const std::string& tenant,
                                                 const std::string& subscription_id,
                                                 const std::string& attempt_event_id) {
    auto& m = *impl_;
    auto sub = m.owned(tenant, subscription_id);
    if (!sub) {
        return sub.error();
    }
    auto all = m.all_dead_letters(sub->id);
    if (!all) {
        return all.error();
    }
    for (const auto& dl : *all) {
        if (dl.attempt_event_id == attempt_event_id) {
            return m.replay(*sub, dl);
        }
    }
    return make_error_code(errc::not_found);
}

result<std::string> bridge::replay_dead_letters(const std::string& tenant,
                                                const std::string& subscription_id,
                                                const replay_range& range, double rate_per_second) {
    auto& m = *impl_;
    if (!(rate_per_second > 0)) {
        return make_error_code(errc::invalid_argument);
    }
    if (!range.all && !range.from && !range.to) {
        return make_error_code(errc::invalid_argument); // say which: a range or all
    }
    auto sub = m.owned(tenant, subscription_id);
    if (!sub) {
        return sub.error();
    }
    auto all = m.all_dead_letters(sub->id);
    if (!all) {
        return all.error();
    }
    std::vector<dead_letter> selected;
    for (auto it = all->rbegin(); it != all->rend(); ++it) { // oldest first
        if (it->reason != dead_letter_reason::retries_exhausted) {
            continue;
        }
        if (!range.all && ((range.from && it->dead_lettered_at < *range.from) ||
                           (range.to && it->dead_lettered_at > *range.to))) {
            continue;
        }
        selected.push_back(*it);
    }
    return m.jobs->create(m.mint("rpl"), *sub, selected, rate_per_second);
}

result<replay_job_status> bridge::get_replay_job(const std::string& tenant, const std::string& job_id) {
    return impl_->jobs->get(tenant, job_id);
}

result<page<dead_letter_view>> bridge::list_dead_letters_with_replays(const std::string& tenant,
                                                                      const std::string& id,
                                                                      const page_request& req) {
    auto dls = list_dead_letters(tenant, id, req);
    if (!dls) {
        return dls.error();
    }
    std::vector<std::string> keys;
    for (const auto& d : dls->items) {
        if (d.reason == dead_letter_reason::retries_exhausted) {
            keys.push_back(replay_dedup_key(d.attempt_event_id));
        }
    }
    std::map<std::string, delivery> replays;
    if (!keys.empty()) {
        auto found = impl_->st->deliveries_by_dedup_key(id, keys);
        if (!found) {
            return found.error();
        }
        replays = std::move(*found);
    }
    page<dead_letter_view> out;
    out.next_cursor = std::move(dls->next_cursor);
    for (auto& d : dls->items) {
        dead_letter_view v;
        if (auto it = replays.find(replay_dedup_key(d.attempt_event_id)); it != replays.end()) {
            v.replay = it->second;
        }
        v.record = std::move(d);
        out.items.push_back(std::move(v));
    }
    return out;
}

} // namespace wopbridge
