// The rest of bridge's public API: settings, subscriptions (config and API), runs and their
// event watchers, readiness, connector settings, the overview and the runs listing.
#include "app/bridge_impl.hpp"

#include <wopbridge/signatures.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <set>

namespace wopbridge {

using namespace bridge_detail;

void bridge::impl::notify_run(const std::string& run_id) {
    std::vector<std::function<void()>> fire;
    {
        wopbridge::lock_guard lock(mutex);
        for (auto it = watchers.begin(); it != watchers.end();) {
            if (it->second.run_id == run_id) {
                fire.push_back(std::move(it->second.notify));
                it = watchers.erase(it);
            } else {
                ++it;
            }
        }
    }
    for (auto& f : fire) {
        f();
    }
}

// ---- bridge ------------------------------------------------------------------------------------------

const bridge_settings& bridge::settings() const noexcept { return impl_->settings; }

result<void> bridge::apply_config_subscriptions(const std::vector<subscription>& subs,
                                                const std::map<std::string, std::string>& secrets) {
    auto& m = *impl_;
    if (!m.box) {
        return m.box.error();
    }
    if (auto keyed = m.ensure_host_key(); !keyed) {
        return keyed.error();
    }
    std::set<std::string> in_file;
    std::map<std::string, std::string> providers;
    for (auto sub : subs) {
        if (!sub.provider.empty()) {
            providers[sub.id] = sub.provider;
        }
        if (sub.id.empty() || sub.workflow_id.empty()) {
            return make_error_code(errc::invalid_argument);
        }
        sub.origin = subscription::origin_kind::config;
        if (auto it = secrets.find(sub.id); it != secrets.end() && !it->second.empty()) {
            auto list = intake::split_secrets(it->second);
            sub.sealed_secret = m.box->seal(it->second, m.random);
            sub.secret_fingerprint = list.empty() ? "" : m.box->fingerprint(list.front());
        }
        if (sub.source == source_kind::webhook && sub.webhook_id.empty()) {
            sub.webhook_id = "wh_" + sub.id;
        }
        if (sub.created_at == 0) {
            sub.created_at = m.now();
        }
        sub.updated_at = m.now();
        auto stored = m.stored_settings(sub);
        if (!stored) {
            return stored.error();
        }
        sub.connector_settings_json = std::move(*stored);
        auto r = m.st->upsert_config_subscription(sub);
        if (!r) {
            return r.error();
        }
        in_file.insert(sub.id);
    }
    auto all = m.st->list_all_subscriptions();
    if (!all) {
        return all.error();
    }
    for (const auto& sub : *all) {
        if (sub.origin != subscription::origin_kind::config || in_file.count(sub.id)) {
            continue;
        }
        if (transition_allowed(sub.state, sub_state::paused)) {
            // Keep a content-free record of why it stopped before it goes.
            (void)m.st->change_state({sub.id, sub.source, sub.state, sub_state::paused,
                                      state_reason::source_removed},
                                     m.mint("evt"), m.now());
        }
        auto r = m.st->delete_subscription(sub.id);
        if (!r && r.error() != make_error_code(errc::not_found)) {
            return r.error();
        }
    }
    {
        wopbridge::lock_guard lock(m.mutex);
        m.providers_by_subscription = std::move(providers);
    }
    m.refresh_schedules();
    m.engine->notify();
    return {};
}

result<registration_result> bridge::register_subscription(const registration_request& req) {
    auto& m = *impl_;
    if (!m.box) {
        return m.box.error();
    }
    if (auto keyed = m.ensure_host_key(); !keyed) {
        return keyed.error();
    }
    if (req.tenant.empty() || req.workflow_id.empty() || is_seam_workflow(req.workflow_id)) {
        return make_error_code(errc::invalid_argument);
    }
    if (req.source == source_kind::schedule &&
        (!req.schedule || !cron_expr::parse(req.schedule->cron, req.schedule->time_zone))) {
        return make_error_code(errc::invalid_argument);
    }
    if (req.retry && req.retry->max_attempts < 1) {
        return make_error_code(errc::invalid_argument);
    }
    // A registration must not bind a workflow the host cannot start (an empty list = any, upstream).
    auto known = m.starter->workflow_ids();
    if (!m.starter->has_inner() ||
        (!known.empty() && std::find(known.begin(), known.end(), req.workflow_id) == known.end())) {
        return make_error_code(errc::invalid_argument);
    }
    subscription sub;
    sub.id = m.mint("sub");
    sub.tenant = req.tenant;
    sub.source = req.source;
    sub.state = initial_state();
    sub.workflow_id = req.workflow_id;
    sub.dedup_enabled = req.dedup_enabled;
    sub.retry = req.retry.value_or(m.settings.default_retry);
    sub.breaker = m.settings.default_breaker;
    sub.verification = req.verification;
    sub.schedule = req.schedule;
    sub.connector = req.connector;
    sub.connector_settings_json = req.connector_settings_json.empty() ? "{}" : req.connector_settings_json;
    sub.hold_when_not_active = req.hold_when_not_active;
    sub.origin = subscription::origin_kind::api;
    sub.created_at = sub.updated_at = m.now();

    registration_result out;
    if (sub.source == source_kind::webhook) {
        unsigned char raw[32];
        m.random.fill(raw, sizeof raw);
        out.signing_secret =
            "whsec_" + sig::base64_encode(std::string_view(reinterpret_cast<char*>(raw), sizeof raw));
        sub.sealed_secret = m.box->seal(out.signing_secret, m.random);
        sub.secret_fingerprint = m.box->fingerprint(out.signing_secret);
        sub.webhook_id = m.mint("wh");
    }
    auto stored = m.stored_settings(sub);
    if (!stored) {
        return stored.error();
    }
    sub.connector_settings_json = std::move(*stored);
    if (req.accept_before_write) {
        if (auto accepted = req.accept_before_write(sub); !accepted) {
            return accepted.error();
        }
    }
    auto ins = m.st->insert_subscription(sub);
    if (!ins) {
        return ins.error();
    }
    if (sub.source != source_kind::schedule) {
        std::string base = m.settings.public_url;
        while (!base.empty() && base.back() == '/') {
            base.pop_back();
        }
        out.ingest_url = base + "/v1/ingest/" + sub.id;
    }
    out.record = std::move(sub);
    if (out.record.source == source_kind::schedule) {
        m.refresh_schedules();
    }
    return out;
}

result<std::vector<subscription>> bridge::list_subscriptions(const std::string& tenant) {
    return impl_->st->list_subscriptions(tenant);
}

result<subscription_view> bridge::get_subscription(const std::string& tenant, const std::string& id) {
    auto sub = impl_->owned(tenant, id);
    if (!sub) {
        return sub.error();
    }
    subscription_view view;
    view.record = std::move(*sub);
    page_request pr;
    pr.limit = 20;
    if (auto recent = impl_->st->list_deliveries(id, pr)) {
        view.recent_deliveries = std::move(recent->items);
    }
    return view;
}

result<subscription> bridge::set_state(const std::string& tenant, const std::string& id, sub_state to) {
    auto& m = *impl_;
    auto sub = m.owned(tenant, id);
    if (!sub) {
        return sub.error();
    }
    if (sub->state == to) {
        return sub; // already there: a no-op, not a transition
    }
    if (auto ok = check_transition(sub->state, to); !ok) {
        return ok.error();
    }
    millis at = m.now();
    auto changed = m.st->change_state({sub->id, sub->source, sub->state, to, operator_reason(to)},
                                      m.mint("evt"), at);
    if (!changed) {
        return changed.error();
    }
    log_line("info", "subscription.state_changed",
             {{"subscriptionId", sub->id},
              {"fromState", std::string(to_string(sub->state))},
              {"toState", std::string(to_string(to))},
              {"by", "operator"}});
    if (to == sub_state::active) {
        (void)m.st->release_held(sub->id, at);
        m.engine->notify();
    }
    return m.st->get_subscription(id);
}

result<void> bridge::delete_subscription(const std::string& tenant, const std::string& id) {
    auto sub = impl_->owned(tenant, id);
    if (!sub) {
        return sub.error();
    }
    auto r = impl_->st->delete_subscription(id);
    if (r && sub->source == source_kind::schedule) {
        impl_->refresh_schedules();
    }
    return r;
}

result<page<delivery>> bridge::list_deliveries(const std::string& tenant, const std::string& id,
                                               const page_request& req) {
    auto sub = impl_->owned(tenant, id);
    if (!sub) {
        return sub.error();
    }
    return impl_->st->list_deliveries(id, req);
}

result<page<dead_letter>> bridge::list_dead_letters(const std::string& tenant, const std::string& id,
                                                    const page_request& req) {
    auto sub = impl_->owned(tenant, id);
    if (!sub) {
        return sub.error();
    }
    page_request clamped = req;
    clamped.limit = std::clamp(req.limit, 1, std::max(1, impl_->settings.dead_letter_max_page_size));
    return impl_->st->list_dead_letters(id, clamped, impl_->now());
}

result<std::vector<subscription>> bridge::all_subscriptions() {
    return impl_->st->list_all_subscriptions();
}

result<subscription> bridge::find_subscription(const std::string& id) {
    return impl_->st->get_subscription(id);
}

result<run_record> bridge::get_run(const std::string& tenant, const std::string& run_id) {
    auto run = impl_->st->get_run(run_id);
    if (!run) {
        return run.error();
    }
    if (run->tenant != tenant) {
        return make_error_code(errc::not_found);
    }
    if (!run->delivery_id.empty()) {
        // A replay's delivery carries the dead-lettered attempt in its dedup key.
        if (auto d = impl_->st->get_delivery(run->delivery_id)) {
            run->replay_of_attempt_event_id = replay_of(d->dedup_key);
        }
    }
    return run;
}

result<poll_result> bridge::read_events(const std::string& tenant, const std::string& run_id,
                                        std::int64_t after_sequence, int limit) {
    auto run = get_run(tenant, run_id);
    if (!run) {
        if (run.error() == make_error_code(errc::not_found) && impl_->is_reserved(run_id, tenant)) {
            return poll_result{}; // accepted, run.started not committed yet: nothing to read so far
        }
        return run.error();
    }
    limit = std::clamp(limit, 1, 1000);
    auto evs = impl_->st->run_events_after(run_id, after_sequence, limit);
    if (!evs) {
        return evs.error();
    }
    poll_result out;
    // Complete when the run is terminal and this read reached the end of its log.
    bool terminal = run->status == run_status::completed || run->status == run_status::failed;
    out.is_complete = terminal && static_cast<int>(evs->size()) < limit;
    out.events = std::move(*evs);
    return out;
}

std::uint64_t bridge::watch_run(const std::string& run_id, std::int64_t after_sequence,
                                std::function<void()> notify) {
    auto& m = *impl_;
    std::uint64_t token;
    {
        wopbridge::lock_guard lock(m.mutex);
        token = m.next_token++;
        m.watchers[token] = {run_id, after_sequence, std::move(notify)};
    }
    // Registered first, checked second: an event committed in between still fires the watcher.
    auto evs = m.st->run_events_after(run_id, after_sequence, 1);
    if (evs && !evs->empty()) {
        std::function<void()> fire;
        {
            wopbridge::lock_guard lock(m.mutex);
            if (auto it = m.watchers.find(token); it != m.watchers.end()) {
                fire = std::move(it->second.notify);
                m.watchers.erase(it);
            }
        }
        if (fire) {
            fire();
        }
    }
    return token;
}

void bridge::cancel_watch(std::uint64_t token) {
    wopbridge::lock_guard lock(impl_->mutex);
    impl_->watchers.erase(token);
}

std::uint64_t bridge::watch_changes(const std::string& tenant, std::function<void()> notify) {
    return impl_->changes.watch(tenant, std::move(notify));
}

void bridge::cancel_changes_watch(std::uint64_t token) { impl_->changes.cancel(token); }

result<void> bridge::ready() {
    auto& m = *impl_;
    // A damaged store fails ping(); note_store_failure names the damage (store.damaged).
    if (auto r = m.st->ping(); !r) {
        m.note_store_failure("ping", r.error());
        return r;
    }
    if (m.store_failing.load()) {
        // Not ready until a write commits again; the probe is what tells, without traffic.
        if (auto w = m.st->probe_write(); !w) {
            return w;
        }
        m.note_store_recovered();
    }
    return {};
}

void bridge::set_connector_settings_sealer(connector_settings_sealer sealer) {
    impl_->settings_sealer = std::move(sealer);
}

const secret_box* bridge::data_key_box() const noexcept {
    return impl_->box ? &*impl_->box : nullptr;
}

result<bool> bridge::replace_connector_settings(const std::string& id, const std::string& expected,
                                                const std::string& replacement) {
    return impl_->st->replace_connector_settings(id, expected, replacement);
}

result<std::vector<subscription_overview>> bridge::overview(const std::string& tenant) {
    auto& m = *impl_;
    auto subs = m.st->list_subscriptions(tenant);
    if (!subs) {
        return subs.error();
    }
    std::map<std::string, subscription_delivery_stats> counts;
    if (auto all = m.st->delivery_stats(m.now())) {
        for (auto& c : *all) {
            counts[c.subscription_id] = std::move(c);
        }
    }
    std::vector<subscription_overview> out;
    out.reserve(subs->size());
    for (auto& sub : *subs) {
        subscription_overview o;
        if (auto it = counts.find(sub.id); it != counts.end()) {
            o.counts = it->second;
        }
        o.counts.subscription_id = sub.id;
        page_request newest;
        newest.limit = 1;
        if (auto pg = m.st->list_deliveries(sub.id, newest); pg && !pg->items.empty()) {
            o.last_delivery = std::move(pg->items.front());
        }
        o.record = std::move(sub);
        out.push_back(std::move(o));
    }
    return out;
}

int bridge::run_due(millis now) { return impl_->engine->run_due(now); }

int bridge::run_schedules_due(millis now) { return impl_->sched->run_due(now); }

void bridge::add_run_event_observer(std::function<void(const run_event&)> observer) {
    wopbridge::lock_guard lock(impl_->observers_mutex);
    impl_->observers.push_back(std::move(observer));
}

outbound::webhook_dispatcher* bridge::webhooks() noexcept { return impl_->webhooks.get(); }

// ---- operator views: the run listing -----------------------------------------------------------

namespace {

// The filters a runs cursor was minted for: a cursor only continues the listing it came from.
boost::json::array run_filters_json(const run_list_request& req) {
    return boost::json::array{
        boost::json::value(req.subscription_id), boost::json::value(req.workflow_id),
        boost::json::value(req.status ? std::string(to_string(*req.status)) : std::string()),
        boost::json::value(req.from.value_or(-1)), boost::json::value(req.to.value_or(-1))};
}

// Opaque: hex of {"c":"runs","f":[filters],"t":created_at,"i":run id}.
std::string encode_runs_cursor(const run_list_request& req, const run_record& last) {
    boost::json::object o{{"c", "runs"},
                          {"f", run_filters_json(req)},
                          {"t", last.created_at},
                          {"i", last.id}};
    return sig::to_hex(boost::json::serialize(o));
}

std::optional<run_position> decode_runs_cursor(const run_list_request& req) {
    auto text = sig::from_hex(req.cursor);
    if (!text) {
        return std::nullopt;
    }
    boost::system::error_code ec;
    auto v = boost::json::parse(*text, ec);
    if (ec || !v.is_object()) {
        return std::nullopt;
    }
    const auto& o = v.get_object();
    const auto* c = o.if_contains("c");
    const auto* f = o.if_contains("f");
    const auto* t = o.if_contains("t");
    const auto* i = o.if_contains("i");
    if (!c || !f || !t || !i || !c->is_string() || c->get_string() != "runs" || !t->is_int64() ||
        !i->is_string() || *f != boost::json::value(run_filters_json(req))) {
        return std::nullopt;
    }
    return run_position{t->get_int64(), std::string(i->get_string())};
}

} // namespace

result<page<run_record>> bridge::list_runs(const std::string& tenant, const run_list_request& req) {
    auto& m = *impl_;
    run_query q;
    q.tenant = tenant;
    q.subscription_id = req.subscription_id;
    q.workflow_id = req.workflow_id;
    q.status = req.status;
    if (req.from) {
        q.created_from = *req.from;
    }
    if (req.to) {
        q.created_to = *req.to;
    }
    if (!req.cursor.empty()) {
        auto pos = decode_runs_cursor(req);
        if (!pos) {
            return make_error_code(errc::invalid_argument);
        }
        q.before = std::move(*pos);
    }
    const int limit = std::clamp(req.limit, 1, std::max(1, m.settings.dead_letter_max_page_size));
    q.limit = limit + 1; // one more tells whether there is a next page
    auto rows = m.st->list_runs(q);
    if (!rows) {
        return rows.error();
    }
    page<run_record> out;
    if (static_cast<int>(rows->size()) > limit) {
        rows->resize(static_cast<std::size_t>(limit));
        out.next_cursor = encode_runs_cursor(req, rows->back());
    }
    out.items = std::move(*rows);
    return out;
}

} // namespace wopbridge
