#pragma once
// In-memory stand-ins for the HTTP layer's collaborators: a bridge_api whose answers tests set,
// a manually driven task_scheduler, and sinks that record what a handler answered.

#include "app/bridge_api.hpp"
#include "http/http_message.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <deque>
#include <map>
#include <mutex>

namespace wopbridge::http::testing {

class manual_scheduler final : public task_scheduler {
public:
    void post(std::function<void()> fn) override {
        std::lock_guard lock(mu_);
        queue_.push_back(std::move(fn));
    }
    std::uint64_t after(std::chrono::milliseconds delay, std::function<void()> fn) override {
        std::lock_guard lock(mu_);
        auto id = next_++;
        timers_[id] = {now_ + delay.count(), std::move(fn)};
        return id;
    }
    void cancel(std::uint64_t token) override {
        std::lock_guard lock(mu_);
        timers_.erase(token);
    }
    // Runs queued work until none is left.
    void drain() {
        for (;;) {
            std::function<void()> fn;
            {
                std::lock_guard lock(mu_);
                if (queue_.empty()) {
                    return;
                }
                fn = std::move(queue_.front());
                queue_.pop_front();
            }
            fn();
        }
    }
    // Moves time forward, firing due timers (their work is queued, then drained).
    void advance(std::chrono::milliseconds d) {
        std::vector<std::function<void()>> due;
        {
            std::lock_guard lock(mu_);
            now_ += d.count();
            for (auto it = timers_.begin(); it != timers_.end();) {
                if (it->second.first <= now_) {
                    due.push_back(std::move(it->second.second));
                    it = timers_.erase(it);
                } else {
                    ++it;
                }
            }
        }
        for (auto& fn : due) {
            post(std::move(fn));
        }
        drain();
    }
    std::size_t pending_timers() {
        std::lock_guard lock(mu_);
        return timers_.size();
    }

private:
    std::mutex mu_;
    std::deque<std::function<void()>> queue_;
    std::map<std::uint64_t, std::pair<long long, std::function<void()>>> timers_;
    std::uint64_t next_ = 1;
    long long now_ = 0;
};

class recording_stream final : public response_stream {
public:
    void write(std::string chunk) override {
        std::lock_guard lock(mu);
        if (!closed) {
            data += chunk;
        }
    }
    void close() override {
        std::lock_guard lock(mu);
        closed = true;
    }
    void on_abort(std::function<void()> fn) override {
        std::lock_guard lock(mu);
        abort_fn = std::move(fn);
    }
    void abort() {
        std::function<void()> fn;
        {
            std::lock_guard lock(mu);
            fn = std::move(abort_fn);
        }
        if (fn) {
            fn();
        }
    }
    std::mutex mu;
    std::string data;
    bool closed = false;
    std::function<void()> abort_fn;
};

class recording_sink final : public response_sink {
public:
    void send(http_response res) override {
        std::lock_guard lock(mu);
        ++sends;
        response = std::move(res);
    }
    std::shared_ptr<response_stream> open_stream(http_response head) override {
        std::lock_guard lock(mu);
        ++sends;
        stream_head = std::move(head);
        stream = std::make_shared<recording_stream>();
        return stream;
    }
    boost::json::value json() const { return boost::json::parse(response->body); }

    std::mutex mu;
    int sends = 0;
    std::optional<http_response> response;
    std::optional<http_response> stream_head;
    std::shared_ptr<recording_stream> stream;
};

// A bridge_api with canned behaviour: one tenant's data ("acme"); everything else is not_found.
class fake_bridge final : public bridge_api {
public:
    fake_bridge() {
        settings_.test_seams = true;
        settings_.local_workflows = {"conformance-noop"};
        settings_.default_retry.max_attempts = 8;
        subscription s;
        s.id = "sub_1";
        s.tenant = "acme";
        s.workflow_id = "conformance-noop";
        s.webhook_id = "wh_1";
        s.secret_fingerprint = "0123456789abcdef";
        s.sealed_secret = "whsec_SEALED_NEVER_SHOWN";
        subs[s.id] = s;
    }

    const bridge_settings& settings() const noexcept override { return settings_; }

    result<registration_result> register_subscription(const registration_request& req) override {
        last_registration = req;
        if (req.workflow_id == "unknown-workflow") {
            return make_error_code(errc::invalid_argument);
        }
        registration_result r;
        r.record.id = "sub_new";
        r.record.tenant = req.tenant;
        r.record.source = req.source;
        r.record.workflow_id = req.workflow_id;
        r.record.connector = req.connector;
        r.record.connector_settings_json = req.connector_settings_json;
        r.record.secret_fingerprint = "fedcba9876543210";
        r.record.sealed_secret = "sealed";
        r.ingest_url = "http://127.0.0.1:8080/v1/ingest/sub_new";
        r.signing_secret = "whsec_c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0";
        if (req.accept_before_write) { // as the real bridge: the module sees it before the write
            if (auto accepted = req.accept_before_write(r.record); !accepted) {
                return accepted.error();
            }
        }
        return r;
    }
    result<std::vector<subscription>> list_subscriptions(const std::string& tenant) override {
        std::vector<subscription> out;
        for (auto& [id, s] : subs) {
            if (s.tenant == tenant) {
                out.push_back(s);
            }
        }
        return out;
    }
    result<subscription_view> get_subscription(const std::string& tenant,
                                               const std::string& id) override {
        auto it = subs.find(id);
        if (it == subs.end() || it->second.tenant != tenant) {
            return make_error_code(errc::not_found);
        }
        subscription_view v;
        v.record = it->second;
        delivery d;
        d.id = "dlv_1";
        d.run_id = "run_1";
        d.status = delivery_status::delivered;
        d.attempts = 1;
        v.recent_deliveries.push_back(d);
        return v;
    }
    result<subscription> set_state(const std::string& tenant, const std::string& id,
                                   sub_state to) override {
        auto it = subs.find(id);
        if (it == subs.end() || it->second.tenant != tenant) {
            return make_error_code(errc::not_found);
        }
        if (it->second.state == sub_state::dead_lettered) {
            return make_error_code(errc::conflict);
        }
        it->second.state = to;
        return it->second;
    }
    result<void> delete_subscription(const std::string& tenant, const std::string& id) override {
        auto it = subs.find(id);
        if (it == subs.end() || it->second.tenant != tenant) {
            return make_error_code(errc::not_found);
        }
        subs.erase(it);
        return {};
    }
    result<page<delivery>> list_deliveries(const std::string& tenant, const std::string& id,
                                           const page_request& req) override {
        last_page = req;
        if (!subs.count(id) || subs[id].tenant != tenant) {
            return make_error_code(errc::not_found);
        }
        return page<delivery>{};
    }
    result<page<dead_letter>> list_dead_letters(const std::string& tenant, const std::string& id,
                                                const page_request& req) override {
        last_page = req;
        if (!subs.count(id) || subs[id].tenant != tenant) {
            return make_error_code(errc::not_found);
        }
        if (req.cursor == "foreign") {
            return make_error_code(errc::invalid_argument);
        }
        page<dead_letter> p;
        dead_letter d;
        d.subscription_id = id;
        d.attempt_event_id = "evt_1";
        d.attempt = {id, "dk_1", 3, attempt_outcome::dead_lettered, ""};
        d.caused_state_change =
            state_change{id, source_kind::webhook, sub_state::active, sub_state::dead_lettered,
                         state_reason::retry_exhausted};
        d.reason = dead_letter_reason::retries_exhausted;
        d.dead_lettered_at = 1767225600000;
        d.expires_at = d.dead_lettered_at + 7LL * 86400 * 1000;
        p.items.push_back(d);
        if (req.cursor.empty()) {
            p.next_cursor = "c2";
        }
        return p;
    }
    result<subscription> find_subscription(const std::string& id) override {
        auto it = subs.find(id);
        if (it == subs.end()) {
            return make_error_code(errc::not_found);
        }
        return it->second;
    }
    void ingest_webhook(const std::string& subscription_id, const inbound_http_request& req,
                        submit_callback done) override {
        last_ingest = req;
        pending_submit = std::move(done);
    }
    void ingest_webhook(const subscription& sub, const inbound_http_request& req,
                        submit_callback done) override {
        ingest_webhook(sub.id, req, std::move(done));
    }
    result<run_record> get_run(const std::string& tenant, const std::string& run_id) override {
        if (tenant != "acme" || run_id != "run_1") {
            return make_error_code(errc::not_found);
        }
        run_record r;
        r.id = run_id;
        r.tenant = tenant;
        r.workflow_id = "conformance-noop";
        r.subscription_id = "sub_1";
        r.delivery_id = "dlv_1";
        r.status = run_status::running;
        return r;
    }
    result<poll_result> read_events(const std::string& tenant, const std::string& run_id,
                                    std::int64_t after_sequence, int limit) override {
        std::lock_guard lock(mu);
        ++reads;
        if (tenant != "acme" || (run_id != "run_1" && run_id != "run_reserved")) {
            return make_error_code(errc::not_found);
        }
        poll_result r;
        for (const auto& e : events) {
            if (e.sequence > after_sequence) {
                r.events.push_back(e);
                r.is_complete = r.is_complete || e.type == "run.completed";
            }
        }
        return r;
    }
    std::uint64_t watch_run(const std::string& run_id, std::int64_t after_sequence,
                            std::function<void()> notify) override {
        std::lock_guard lock(mu);
        auto id = next_watch++;
        watches[id] = std::move(notify);
        return id;
    }
    void cancel_watch(std::uint64_t token) override {
        std::lock_guard lock(mu);
        watches.erase(token);
    }
    // Appends an event and notifies every watcher (as the engine does after a commit).
    void append(const std::string& type) {
        std::map<std::uint64_t, std::function<void()>> fire;
        {
            std::lock_guard lock(mu);
            run_event e;
            e.event_id = "evt_" + std::to_string(events.size());
            e.run_id = "run_1";
            e.type = type;
            e.payload_json = R"({"workflowId":"conformance-noop"})";
            e.timestamp = 1767225600000;
            e.sequence = static_cast<std::int64_t>(events.size());
            if (type == "run.started") {
                e.causation_id = "evt_0";
            }
            events.push_back(e);
            fire.swap(watches);
        }
        for (auto& [id, fn] : fire) {
            fn();
        }
    }
    result<seam_deliver_result> seam_deliver(const seam_deliver_request& req) override {
        last_seam = req;
        seam_deliver_result r;
        r.run_id = "run_seam";
        r.subscription_id = "sub_seam";
        r.outcome = "delivered";
        r.delivered_count = 1;
        return r;
    }
    result<std::vector<run_event>> seam_events(const std::string& tenant,
                                               const std::string& run_id) override {
        if (run_id != "run_1") {
            return make_error_code(errc::not_found);
        }
        std::lock_guard lock(mu);
        return events;
    }
    result<void> seam_reset(const std::string&) override {
        ++resets;
        return {};
    }
    result<void> ready() override {
        if (!is_ready) {
            return make_error_code(errc::store_unavailable);
        }
        return {};
    }

    // What these handler tests do not exercise: answered as "not served here".
    std::uint64_t watch_changes(const std::string&, std::function<void()>) override { return 0; }
    void cancel_changes_watch(std::uint64_t) override {}
    void count_ingest(const std::string&, submit_status) override {}
    void count_rate_limited(const std::string& subscription_id, std::string_view limit,
                            std::string_view address) override {
        rate_limited.push_back(subscription_id + "|" + std::string(limit) + "|" + std::string(address));
    }
    std::vector<std::string> rate_limited; // "subscription|limit|address"
    result<replay_result> replay_dead_letter(const std::string&, const std::string&,
                                             const std::string&) override {
        return make_error_code(errc::unsupported);
    }
    result<std::string> replay_dead_letters(const std::string&, const std::string&,
                                            const replay_range&, double) override {
        return make_error_code(errc::unsupported);
    }
    result<replay_job_status> get_replay_job(const std::string&, const std::string&) override {
        return make_error_code(errc::unsupported);
    }
    std::string metrics_text(const std::optional<std::string>&) override { return {}; }
    outbound::webhook_dispatcher* webhooks() noexcept override { return nullptr; }
    result<std::vector<subscription_overview>> overview(const std::string&) override {
        return make_error_code(errc::unsupported);
    }
    result<page<run_record>> list_runs(const std::string&, const run_list_request&) override {
        return make_error_code(errc::unsupported);
    }
    result<page<dead_letter_view>> list_dead_letters_with_replays(const std::string&,
                                                                  const std::string&,
                                                                  const page_request&) override {
        return make_error_code(errc::unsupported);
    }

    bridge_settings settings_;
    std::map<std::string, subscription> subs;
    std::optional<registration_request> last_registration;
    std::optional<page_request> last_page;
    std::optional<inbound_http_request> last_ingest;
    std::optional<seam_deliver_request> last_seam;
    submit_callback pending_submit;
    std::mutex mu;
    std::vector<run_event> events;
    std::map<std::uint64_t, std::function<void()>> watches;
    std::uint64_t next_watch = 1;
    int reads = 0;
    int resets = 0;
    bool is_ready = true;
};

} // namespace wopbridge::http::testing
