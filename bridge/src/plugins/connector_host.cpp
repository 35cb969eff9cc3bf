#include "plugins/connector_host.hpp"
#include "plugins/settings_schemas.hpp"

#include "core/blob_store.hpp"
#include "core/clock.hpp"
#include "core/log.hpp"

#include "wopbridge/connector.h"

#include <boost/json.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <thread>
#include <unordered_map>

namespace wopbridge::plugin_detail {
struct instance;

// What a wb_host* points at: which host and which instance a callback comes from. (The C type
// stays opaque; defining it here could clash with another definition in the same program.)
struct host_context {
    connector_host::impl* owner = nullptr;
    instance* inst = nullptr;
};

inline host_context* context_of(wb_host* h) noexcept {
    return reinterpret_cast<host_context*>(h);
}
} // namespace wopbridge::plugin_detail

namespace wopbridge {
namespace plugin_detail {

enum class phase { created, running, stopping, stopped, destroyed };

struct sub_entry {
    std::string source;
    std::string workflow_id;
    std::string settings_json;        // plain: what the module was given
    std::string stored_settings_json; // as the store keeps it (secrets sealed)
    // The same subscription for the module: sealing the same settings again (another nonce)
    // changes only the stored form.
    bool operator==(const sub_entry& o) const {
        return source == o.source && workflow_id == o.workflow_id &&
               settings_json == o.settings_json;
    }
    bool same_stored(const sub_entry& o) const {
        return source == o.source && workflow_id == o.workflow_id &&
               stored_settings_json == o.stored_settings_json;
    }
};

struct instance {
    std::string name;
    loaded_module module;
    settings_schemas schemas;
    std::string settings_json;
    host_context host_ctx;
    wb_connector* conn = nullptr;

    std::mutex control_mu; // the ABI's control thread: one lifecycle call at a time
    std::atomic<phase> state{phase::created};

    std::mutex mu; // guards everything below
    std::condition_variable cv;
    std::map<std::string, sub_entry> subs;
    int inflight_submits = 0;
    int inflight_tasks = 0; // queued or running
    int active_calls = 0;   // call slots taken: on_http_request in progress or draining the queue
    std::deque<std::function<void()>> queued_calls; // requests waiting for a call slot

    std::atomic<std::uint64_t> requests{0};
    std::atomic<std::uint64_t> responses{0};
    std::atomic<std::uint64_t> timeouts{0};
    std::atomic<std::uint64_t> busy{0};
    std::atomic<std::uint64_t> submits{0};
    std::atomic<std::uint64_t> errors{0};

    void add(int instance::*counter, int delta) {
        std::lock_guard lk(mu);
        this->*counter += delta;
        if (delta < 0) {
            cv.notify_all();
        }
    }
    bool subscribed(const std::string& id) {
        std::lock_guard lk(mu);
        return subs.count(id) != 0;
    }
};

std::string_view source_name(source_kind s) noexcept {
    switch (s) {
    case source_kind::webhook:
        return "webhook";
    case source_kind::schedule:
        return "schedule";
    case source_kind::queue:
        return "queue";
    case source_kind::email:
        return "email";
    case source_kind::form:
        return "form";
    }
    return "webhook";
}

std::optional<source_kind> source_from(std::string_view s) noexcept {
    if (s == "webhook") {
        return source_kind::webhook;
    }
    if (s == "schedule") {
        return source_kind::schedule;
    }
    if (s == "queue") {
        return source_kind::queue;
    }
    if (s == "email") {
        return source_kind::email;
    }
    if (s == "form") {
        return source_kind::form;
    }
    return std::nullopt;
}

std::string_view view(wb_str s) noexcept {
    return s.data == nullptr ? std::string_view{} : std::string_view(s.data, s.size);
}

wb_str str(std::string_view s) noexcept {
    return wb_str{s.data(), s.size()};
}

void copy_error(std::string_view msg, char* buf, std::size_t size) noexcept {
    if (buf == nullptr || size == 0) {
        return;
    }
    const std::size_t n = std::min(msg.size(), size - 1);
    std::copy_n(msg.data(), n, buf);
    buf[n] = '\0';
}

// The HTTP API's closed error envelope {error, message}, so host-made answers look like the rest.
std::string error_body(std::string_view code, std::string_view message) {
    return boost::json::serialize(boost::json::object{{"error", code}, {"message", message}});
}

bool token_char(char c) noexcept {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool header_value_ok(std::string_view v) noexcept {
    return std::none_of(v.begin(), v.end(),
                        [](char c) { return c == '\r' || c == '\n' || c == '\0'; });
}

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) {
        if (c >= 'A' && c <= 'Z') {
            c = static_cast<char>(c - 'A' + 'a');
        }
    }
    return out;
}

// A reason a module wrote may quote the settings it was given: their secrets never leave.
module_error redacted(module_error e, const std::string& settings_json,
                      const secret_fields& secrets) {
    e.message = redact_values(std::move(e.message), secret_values(settings_json, secrets));
    return e;
}

connector_stats stats_of(const instance& inst) {
    connector_stats s;
    s.requests = inst.requests.load();
    s.responses = inst.responses.load();
    s.timeouts = inst.timeouts.load();
    s.busy = inst.busy.load();
    s.submits = inst.submits.load();
    s.errors = inst.errors.load();
    return s;
}

struct pending_request {
    instance* inst = nullptr;
    ingest_reply_callback reply;
};

struct work_item {
    instance* inst = nullptr; // set for module tasks (drained at stop)
    std::function<void()> fn;
};

} // namespace plugin_detail

using namespace plugin_detail;

struct connector_host::impl {
    impl(connector_host_options o, submit_sink& s, clock_source& c, random_source& r)
        : options(std::move(o)), sink(s), clock(c), random(r) {
        while (!options.public_url.empty() && options.public_url.back() == '/') {
            options.public_url.pop_back();
        }
        api.struct_size = sizeof(wb_host_api);
        api.abi_major = WOPBRIDGE_ABI_MAJOR;
        api.abi_minor = WOPBRIDGE_ABI_MINOR;
        api.log = &impl::api_log;
        api.now_ms = &impl::api_now_ms;
        api.random_bytes = &impl::api_random_bytes;
        api.submit = &impl::api_submit;
        api.respond = &impl::api_respond;
        api.register_subscription = &impl::api_register_subscription;
        api.post_task = &impl::api_post_task;
        api.has_capacity = &impl::api_has_capacity;
        api.store_attachment = &impl::api_store_attachment;
        if (!options.attachment_dir.empty()) {
            blobs = std::make_unique<blob_store>(options.attachment_dir, &clock);
        }

        timer_thread = std::thread([this] { timer_loop(); });
        const int n = std::max(1, options.worker_threads);
        for (int i = 0; i < n; ++i) {
            workers.emplace_back([this] { worker_loop(); });
        }
    }

    ~impl() {
        {
            std::lock_guard lk(timer_mu);
            threads_stopping = true;
        }
        timer_cv.notify_all();
        {
            std::lock_guard lk(work_mu);
            workers_stopping = true;
        }
        work_cv.notify_all();
        if (timer_thread.joinable()) {
            timer_thread.join();
        }
        for (auto& w : workers) {
            if (w.joinable()) {
                w.join();
            }
        }
    }

    connector_host_options options;
    submit_sink& sink;
    clock_source& clock;
    random_source& random;
    std::mutex random_mu;
    std::unique_ptr<blob_store> blobs; // null: no attachment directory configured
    wb_host_api api{};

    mutable std::shared_mutex inst_mu;
    std::vector<std::shared_ptr<instance>> instances; // in creation order
    std::vector<std::shared_ptr<instance>>
        retired; // kept until the host goes: late callbacks stay safe

    std::mutex req_mu;
    std::unordered_map<std::uint64_t, pending_request> pending;
    std::uint64_t next_request = 1;

    std::mutex timer_mu;
    std::condition_variable timer_cv;
    std::multimap<std::pair<millis, std::uint64_t>, work_item> timers;
    std::uint64_t timer_seq = 0;
    bool threads_stopping = false;
    std::thread timer_thread;

    std::mutex work_mu;
    std::condition_variable work_cv;
    std::deque<work_item> work;
    bool workers_stopping = false;
    std::vector<std::thread> workers;

    // ---- threads -------------------------------------------------------------------------------

    void timer_loop() {
        std::unique_lock lk(timer_mu);
        while (!threads_stopping) {
            const millis now = clock.now_ms();
            std::vector<work_item> due;
            while (!timers.empty() && timers.begin()->first.first <= now) {
                due.push_back(std::move(timers.begin()->second));
                timers.erase(timers.begin());
            }
            if (!due.empty()) {
                lk.unlock();
                for (auto& item : due) {
                    if (item.inst != nullptr) {
                        enqueue(std::move(item));
                    } else {
                        run_guarded(item.fn);
                    }
                }
                lk.lock();
                continue;
            }
            // The clock may be a test's fake clock: re-read it at least every 50 ms.
            millis wait = 50;
            if (!timers.empty()) {
                wait = std::clamp<millis>(timers.begin()->first.first - now, 1, 50);
            }
            timer_cv.wait_for(lk, std::chrono::milliseconds(wait));
        }
    }

    void worker_loop() {
        std::unique_lock lk(work_mu);
        for (;;) {
            work_cv.wait(lk, [this] { return workers_stopping || !work.empty(); });
            if (work.empty()) {
                return; // stopping and nothing left
            }
            work_item item = std::move(work.front());
            work.pop_front();
            lk.unlock();
            run_guarded(item.fn);
            lk.lock();
        }
    }

    void enqueue(work_item item) {
        {
            std::lock_guard lk(work_mu);
            work.push_back(std::move(item));
        }
        work_cv.notify_one();
    }

    void schedule(millis due, work_item item) {
        {
            std::lock_guard lk(timer_mu);
            timers.emplace(std::make_pair(due, timer_seq++), std::move(item));
        }
        timer_cv.notify_all();
    }

    static void run_guarded(const std::function<void()>& fn) noexcept {
        try {
            if (fn) {
                fn();
            }
        } catch (...) {
            // Host-side closures only wrap module calls that are guarded themselves.
        }
    }

    // ---- logging -------------------------------------------------------------------------------

    // One log shape for the host and its modules: {"ts","level","event",...fields,"connector"}.
    // A module that logs a JSON object with an "event" gives its fields (the host's ts, level
    // and connector win); any other message is {"event":"connector.log","msg":…}.
    void emit_log(std::string_view level, std::string_view connector, std::string_view msg) {
        constexpr std::size_t max_msg = 4096;
        if (!options.log_sink && !log_enabled(level)) {
            return;
        }
        boost::json::object line{{"ts", format_iso8601(system_clock_source{}.now_ms())},
                                 {"level", level}};
        boost::system::error_code ec;
        boost::json::value parsed;
        if (msg.size() <= max_msg && !msg.empty() && msg.front() == '{') {
            parsed = boost::json::parse(msg, ec);
        }
        const boost::json::value* event =
            !ec && parsed.is_object() ? parsed.as_object().if_contains("event") : nullptr;
        if (event && event->is_string() && !event->as_string().empty()) {
            line["event"] = *event;
            for (const auto& kv : parsed.as_object()) {
                if (kv.key() != "event" && kv.key() != "ts" && kv.key() != "level" &&
                    kv.key() != "connector") {
                    line[kv.key()] = kv.value();
                }
            }
        } else {
            line["event"] = "connector.log";
            line["msg"] = msg.substr(0, max_msg);
        }
        line["connector"] = connector;
        const std::string text = boost::json::serialize(line);
        if (options.log_sink) {
            try {
                options.log_sink(text);
            } catch (...) {
            }
        } else {
            std::fprintf(stderr, "%s\n", text.c_str());
        }
    }

    void host_log(instance& inst, std::string_view level, std::string_view msg) {
        emit_log(level, inst.name, msg);
    }

    // ---- requests ------------------------------------------------------------------------------

    std::optional<pending_request> take_pending(std::uint64_t id) {
        std::lock_guard lk(req_mu);
        auto it = pending.find(id);
        if (it == pending.end()) {
            return std::nullopt;
        }
        pending_request p = std::move(it->second);
        pending.erase(it);
        return p;
    }

    static void deliver(pending_request& p, ingest_reply reply) noexcept {
        try {
            p.reply(std::move(reply));
        } catch (...) {
        }
    }

    // One on_http_request call, on the calling thread, guarded (queued requests come here too).
    void call(instance& inst, const std::string& sub_id, const inbound_http_request& req,
              std::uint64_t id);

    void expire(std::uint64_t id) {
        auto p = take_pending(id);
        if (!p) {
            return; // answered in time
        }
        p->inst->timeouts++;
        p->inst->errors++;
        host_log(*p->inst, "warn",
                 "no response within " + std::to_string(options.respond_timeout_ms) +
                     " ms; the host answered 503");
        deliver(*p, ingest_reply{
                        503,
                        {{"content-type", "application/json"}, {"retry-after", "1"}},
                        error_body("service_unavailable", "the connector did not answer in time")});
    }

    // Answers every request of `inst` still open (used when it stops).
    void answer_leftovers(instance* inst) {
        std::vector<pending_request> left;
        {
            std::lock_guard lk(req_mu);
            for (auto it = pending.begin(); it != pending.end();) {
                if (it->second.inst == inst) {
                    left.push_back(std::move(it->second));
                    it = pending.erase(it);
                } else {
                    ++it;
                }
            }
        }
        for (auto& p : left) {
            deliver(p,
                    ingest_reply{503,
                                 {{"content-type", "application/json"}, {"retry-after", "1"}},
                                 error_body("service_unavailable", "the connector is stopping")});
        }
    }

    // ---- the C API table -----------------------------------------------------------------------

    static instance* inst_of(wb_host* h) noexcept {
        return h != nullptr ? context_of(h)->inst : nullptr;
    }

    static void api_log(wb_host* h, wb_log_level level, wb_str message) noexcept {
        instance* inst = inst_of(h);
        if (inst == nullptr) {
            return;
        }
        try {
            std::string_view lvl = "info";
            switch (level) {
            case WB_LOG_DEBUG:
                lvl = "debug";
                break;
            case WB_LOG_INFO:
                lvl = "info";
                break;
            case WB_LOG_WARN:
                lvl = "warn";
                break;
            case WB_LOG_ERROR:
                lvl = "error";
                inst->errors++;
                break;
            }
            context_of(h)->owner->emit_log(lvl, inst->name, view(message));
        } catch (...) {
        }
    }

    static std::int64_t api_now_ms(wb_host* h) noexcept {
        try {
            return h != nullptr ? context_of(h)->owner->clock.now_ms() : 0;
        } catch (...) {
            return 0;
        }
    }

    static wb_status api_random_bytes(wb_host* h, std::uint8_t* out, std::size_t n) noexcept {
        if (h == nullptr || (out == nullptr && n != 0)) {
            return WB_ERR_INVALID;
        }
        try {
            std::lock_guard lk(
                context_of(h)->owner->random_mu); // random sources need not be thread-safe
            context_of(h)->owner->random.fill(out, n);
            return WB_OK;
        } catch (...) {
            return WB_ERR_INTERNAL;
        }
    }

    static wb_status api_submit(wb_host* h, const wb_inbound_event* ev, wb_submit_done_fn done,
                                void* user) noexcept {
        instance* inst = inst_of(h);
        if (inst == nullptr || ev == nullptr || done == nullptr ||
            ev->struct_size < sizeof(wb_inbound_event)) {
            return WB_ERR_INVALID;
        }
        try {
            return context_of(h)->owner->submit(*inst, *ev, done, user);
        } catch (...) {
            inst->errors++;
            return WB_ERR_INTERNAL;
        }
    }

    wb_status submit(instance& inst, const wb_inbound_event& ev, wb_submit_done_fn done,
                     void* user) {
        // Allowed from create on: a listener started in start() may submit before start returns.
        const phase ph = inst.state.load();
        if (ph == phase::stopped || ph == phase::destroyed) {
            return WB_ERR_STATE;
        }
        inbound_submission s;
        s.subscription_id = std::string(view(ev.subscription_id));
        s.provider_event_id = std::string(view(ev.provider_event_id));
        s.received_at = ev.received_at_ms != 0 ? ev.received_at_ms : clock.now_ms();
        s.verified = ev.verified != 0;
        s.content_json = std::string(view(ev.content_json));
        // A connector submits only for subscriptions it was handed.
        if (s.subscription_id.empty() || !inst.subscribed(s.subscription_id)) {
            host_log(inst, "warn",
                     "submit refused: subscription '" + s.subscription_id +
                         "' is not one of this connector's");
            inst.errors++;
            return WB_ERR_INVALID;
        }
        boost::system::error_code ec;
        const auto content = boost::json::parse(s.content_json, ec);
        if (ec || !content.is_object() || content.as_object().size() != 1) {
            host_log(inst, "warn",
                     "submit refused: content_json must be a JSON object with one "
                     "per-source key");
            inst.errors++;
            return WB_ERR_INVALID;
        }

        // 0 = waiting, 1 = completed, 2 = cancelled (the sink threw before calling back).
        auto once = std::make_shared<std::atomic<int>>(0);
        inst.add(&instance::inflight_submits, +1);
        auto callback = [this, ip = &inst, done, user, once](submit_result r) {
            int expected = 0;
            if (!once->compare_exchange_strong(expected, 1)) {
                return;
            }
            // Module code never runs on the bridge's store/engine thread.
            enqueue(work_item{nullptr, [this, ip, done, user, r = std::move(r)] {
                                  call_done(*ip, r, done, user);
                                  ip->add(&instance::inflight_submits, -1);
                              }});
        };
        try {
            sink.submit(s, std::move(callback));
        } catch (...) {
            int expected = 0;
            if (once->compare_exchange_strong(expected, 2)) {
                inst.add(&instance::inflight_submits, -1);
                return WB_ERR_INTERNAL;
            }
        }
        inst.submits++;
        return WB_OK;
    }

    void call_done(instance& inst, const submit_result& r, wb_submit_done_fn done, void* user) {
        wb_submit_outcome o{};
        o.struct_size = sizeof(wb_submit_outcome);
        std::string_view reason;
        switch (r.status) {
        case submit_status::accepted:
            o.status = WB_SUBMIT_ACCEPTED;
            break;
        case submit_status::duplicate:
            o.status = WB_SUBMIT_DUPLICATE;
            break;
        case submit_status::held:
            o.status = WB_SUBMIT_HELD;
            break;
        case submit_status::not_active:
            o.status = WB_SUBMIT_REFUSED;
            reason = "subscription_not_active";
            break;
        case submit_status::signature_invalid:
            o.status = WB_SUBMIT_REFUSED;
            reason = "signature_invalid";
            break;
        case submit_status::not_found:
            o.status = WB_SUBMIT_REFUSED;
            reason = "not_found";
            break;
        case submit_status::invalid:
            o.status = WB_SUBMIT_REFUSED;
            reason = "invalid";
            break;
        case submit_status::overloaded:
            o.status = WB_SUBMIT_REFUSED;
            reason = "overloaded";
            break;
        case submit_status::unavailable:
            o.status = WB_SUBMIT_REFUSED;
            reason = "store_unavailable";
            break;
        }
        const bool refused = o.status == WB_SUBMIT_REFUSED;
        o.run_id = refused ? wb_str{} : str(r.run_id);
        o.delivery_id = refused ? wb_str{} : str(r.delivery_id);
        o.reason = str(reason);
        o.retry_after_seconds =
            (r.status == submit_status::overloaded || r.status == submit_status::unavailable)
                ? std::max(1, r.retry_after_seconds)
                : 0;
        try {
            done(user, &o);
        } catch (...) {
            inst.errors++;
            host_log(inst, "error", "exception escaped the submit completion callback");
        }
    }

    static wb_status api_respond(wb_host* h, wb_request_ctx* ctx,
                                 const wb_http_response* resp) noexcept {
        instance* inst = inst_of(h);
        if (inst == nullptr) {
            return WB_ERR_INVALID;
        }
        try {
            return context_of(h)->owner->respond(*inst, reinterpret_cast<std::uintptr_t>(ctx),
                                                 resp);
        } catch (...) {
            inst->errors++;
            return WB_ERR_INTERNAL;
        }
    }

    wb_status respond(instance& inst, std::uint64_t id, const wb_http_response* resp) {
        std::optional<pending_request> p;
        {
            std::lock_guard lk(req_mu);
            auto it = pending.find(id);
            if (it != pending.end() && it->second.inst == &inst) {
                p = std::move(it->second);
                pending.erase(it);
            }
        }
        if (!p) {
            inst.errors++;
            host_log(inst, "warn", "late or repeated respond ignored");
            return WB_ERR_STATE;
        }
        inst.responses++;
        const auto refuse = [&](std::string_view why) {
            inst.errors++;
            host_log(inst, "error",
                     std::string("invalid response (") + std::string(why) +
                         "); the host answered 500");
            deliver(*p, ingest_reply{500,
                                     {{"content-type", "application/json"}},
                                     error_body("internal_error",
                                                "the connector gave an invalid response")});
            return WB_ERR_INVALID;
        };
        if (resp == nullptr || resp->struct_size < sizeof(wb_http_response)) {
            return refuse("missing or short struct");
        }
        if (resp->status < 100 || resp->status > 599) {
            return refuse("status out of range");
        }
        if (resp->header_count > 0 && resp->headers == nullptr) {
            return refuse("null headers");
        }
        ingest_reply reply;
        reply.status = resp->status;
        for (std::size_t i = 0; i < resp->header_count; ++i) {
            const auto name = view(resp->headers[i].name);
            const auto value = view(resp->headers[i].value);
            if (name.empty() || !std::all_of(name.begin(), name.end(), token_char) ||
                !header_value_ok(value)) {
                return refuse("bad header");
            }
            std::string lname = lower(name);
            // Framing belongs to the HTTP layer.
            if (lname == "content-length" || lname == "transfer-encoding" ||
                lname == "connection") {
                continue;
            }
            reply.headers.emplace_back(std::move(lname), std::string(value));
        }
        reply.body = std::string(view(resp->body));
        deliver(*p, std::move(reply));
        return WB_OK;
    }

    static wb_status api_register_subscription(wb_host* h, const wb_subscription_request* req,
                                               char* error_buf,
                                               std::size_t error_buf_size) noexcept {
        instance* inst = inst_of(h);
        if (inst == nullptr || req == nullptr ||
            req->struct_size < sizeof(wb_subscription_request)) {
            copy_error("invalid request", error_buf, error_buf_size);
            return WB_ERR_INVALID;
        }
        try {
            return context_of(h)->owner->register_subscription(*inst, *req, error_buf,
                                                               error_buf_size);
        } catch (...) {
            inst->errors++;
            copy_error("internal error", error_buf, error_buf_size);
            return WB_ERR_INTERNAL;
        }
    }

    wb_status register_subscription(instance& inst, const wb_subscription_request& req,
                                    char* error_buf, std::size_t error_buf_size);

    static wb_status api_post_task(wb_host* h, std::int64_t delay_ms, wb_task_fn fn,
                                   void* user) noexcept {
        instance* inst = inst_of(h);
        if (inst == nullptr || fn == nullptr) {
            return WB_ERR_INVALID;
        }
        try {
            const phase ph = inst->state.load();
            if (ph == phase::stopped || ph == phase::destroyed) {
                return WB_ERR_STATE;
            }
            inst->add(&instance::inflight_tasks, +1);
            work_item item{inst, [inst, fn, user] {
                               try {
                                   fn(user);
                               } catch (...) {
                                   inst->errors++;
                               }
                               inst->add(&instance::inflight_tasks, -1);
                           }};
            impl* self = context_of(h)->owner;
            if (delay_ms <= 0) {
                self->enqueue(std::move(item));
            } else {
                self->schedule(self->clock.now_ms() + delay_ms, std::move(item));
            }
            return WB_OK;
        } catch (...) {
            return WB_ERR_INTERNAL;
        }
    }

    static int api_has_capacity(wb_host* h) noexcept {
        try {
            return h != nullptr && context_of(h)->owner->sink.has_capacity() ? 1 : 0;
        } catch (...) {
            return 0;
        }
    }

    static wb_status api_store_attachment(wb_host* h, wb_str bytes, char* ref_buf,
                                          std::size_t ref_buf_size) noexcept {
        if (h == nullptr || ref_buf == nullptr || (bytes.data == nullptr && bytes.size != 0)) {
            return WB_ERR_INVALID;
        }
        try {
            blob_store* blobs = context_of(h)->owner->blobs.get();
            if (blobs == nullptr) {
                return WB_ERR_UNSUPPORTED;
            }
            auto ref = blobs->put(std::string_view(bytes.data, bytes.size));
            if (!ref) {
                return WB_ERR_BUSY; // the disk refused: the caller refuses the message, retry later
            }
            if (ref->size() + 1 > ref_buf_size) {
                return WB_ERR_INVALID;
            }
            std::copy(ref->begin(), ref->end(), ref_buf);
            ref_buf[ref->size()] = '\0';
            return WB_OK;
        } catch (...) {
            return WB_ERR_INTERNAL;
        }
    }

    // ---- lifecycle -----------------------------------------------------------------------------

    std::shared_ptr<instance> find(const std::string& name) const {
        std::shared_lock lk(inst_mu);
        for (const auto& i : instances) {
            if (i->name == name) {
                return i;
            }
        }
        return nullptr;
    }

    module_error fail(instance& inst, std::string_view what) {
        return module_error{errc::internal, inst.module.path + ": connector '" + inst.name + "' " +
                                                std::string(what)};
    }

    module_result<void> subscribe_locked(instance& inst, const std::string& id,
                                         const sub_entry& entry) {
        {
            std::lock_guard lk(inst.mu);
            auto it = inst.subs.find(id);
            if (it != inst.subs.end() && it->second == entry) {
                return {}; // already subscribed with these settings
            }
        }
        const std::string ingest_url = options.public_url + "/v1/ingest/" + id;
        wb_subscription sub{};
        sub.struct_size = sizeof(wb_subscription);
        sub.id = str(id);
        sub.source = str(entry.source);
        sub.workflow_id = str(entry.workflow_id);
        sub.settings_json = str(entry.settings_json);
        sub.ingest_url = str(ingest_url);
        std::array<char, 512> buf{};
        wb_status st = WB_ERR_INTERNAL;
        try {
            st = inst.module.descriptor->subscribe(inst.conn, &sub, buf.data(), buf.size());
        } catch (...) {
            st = WB_ERR_INTERNAL;
        }
        buf.back() = '\0';
        if (st != WB_OK) {
            if (st == WB_ERR_INTERNAL) {
                inst.errors++;
            }
            const std::string reason = buf[0] != '\0' ? buf.data() : "status " + std::to_string(st);
            return fail(inst, "refused subscription " + id + ": " + reason);
        }
        std::lock_guard lk(inst.mu);
        inst.subs[id] = entry;
        return {};
    }

    // An instance abandoned at stop (work still in flight): its threads may still run module code,
    // so the module stays mapped, and its connector object is never destroyed. Both stay reachable
    // from this process-lifetime list, so a leak checker reports kept memory as kept, not lost.
    static void keep_for_process_life(std::shared_ptr<void> module, wb_connector* conn) {
        struct abandoned {
            std::shared_ptr<void> module;
            wb_connector* conn;
        };
        static std::mutex mu;
        static auto* const kept = new std::vector<abandoned>();
        std::lock_guard lk(mu);
        kept->push_back({std::move(module), conn});
    }

    module_result<void> stop_instance(instance& inst) {
        std::lock_guard control(inst.control_mu);
        const phase ph = inst.state.load();
        if (ph == phase::destroyed) {
            return {};
        }
        module_result<void> outcome;
        const millis deadline = clock.now_ms() + options.stop_timeout_ms;
        if (ph == phase::running || ph == phase::created) {
            inst.state = phase::stopping; // no new requests
            wb_status st = WB_ERR_INTERNAL;
            try {
                st = inst.module.descriptor->stop(inst.conn, deadline);
            } catch (...) {
                st = WB_ERR_INTERNAL;
            }
            if (st != WB_OK) {
                inst.errors++;
                outcome = fail(inst, "stop failed (status " + std::to_string(st) + ")");
            }
        }
        inst.state = phase::stopped; // no new submits or tasks

        // Queued tasks run now, early: the contract says they run with the host shutting down.
        std::vector<work_item> drained;
        {
            std::lock_guard lk(timer_mu);
            for (auto it = timers.begin(); it != timers.end();) {
                if (it->second.inst == &inst) {
                    drained.push_back(std::move(it->second));
                    it = timers.erase(it);
                } else {
                    ++it;
                }
            }
        }
        {
            std::lock_guard lk(work_mu);
            for (auto it = work.begin(); it != work.end();) {
                if (it->inst == &inst) {
                    drained.push_back(std::move(*it));
                    it = work.erase(it);
                } else {
                    ++it;
                }
            }
        }
        for (auto& item : drained) {
            run_guarded(item.fn);
        }

        // In-flight work finishes before destroy; a module that never lets go is leaked, not freed
        // under its own feet.
        bool idle = false;
        {
            std::unique_lock lk(inst.mu);
            idle = inst.cv.wait_for(
                lk, std::chrono::milliseconds(std::max<millis>(options.stop_timeout_ms, 1)), [&] {
                    return inst.inflight_submits == 0 && inst.inflight_tasks == 0 &&
                           inst.active_calls == 0;
                });
        }
        answer_leftovers(&inst);
        if (!idle) {
            inst.errors++;
            host_log(inst, "error",
                     "in-flight work did not finish by the stop deadline; instance abandoned "
                     "(kept for the process's life)");
            keep_for_process_life(inst.module.handle, inst.conn);
            return fail(inst, "did not finish in-flight work by the stop deadline");
        }
        try {
            inst.module.descriptor->destroy(inst.conn);
        } catch (...) {
            inst.errors++;
        }
        inst.conn = nullptr;
        inst.state = phase::destroyed;
        {
            std::lock_guard lk(inst.mu);
            inst.subs.clear();
        }
        return outcome;
    }
};

wb_status connector_host::impl::register_subscription(instance& inst,
                                                      const wb_subscription_request& req,
                                                      char* error_buf, std::size_t error_buf_size) {
    if (!options.register_subscription) {
        copy_error("this host does not register discovered subscriptions", error_buf,
                   error_buf_size);
        return WB_ERR_UNSUPPORTED;
    }
    discovered_subscription d;
    d.connector = inst.name;
    d.id = std::string(view(req.id));
    d.source = std::string(view(req.source));
    d.workflow_id = std::string(view(req.workflow_id));
    d.settings_json = std::string(view(req.settings_json));
    if (d.settings_json.empty()) {
        d.settings_json = "{}";
    }
    if (d.id.empty() || !source_from(d.source)) {
        copy_error("a subscription needs an id and a known source", error_buf, error_buf_size);
        return WB_ERR_INVALID;
    }
    if (auto err = options.register_subscription(d)) {
        copy_error(*err, error_buf, error_buf_size);
        return WB_ERR_INVALID;
    }
    // subscribe() for it runs later on a worker, outside the connector's current call.
    instance* ip = &inst;
    sub_entry entry{d.source, d.workflow_id, d.settings_json, {}};
    enqueue(work_item{nullptr, [this, ip, id = d.id, entry] {
                          if (ip->state.load() != phase::running) {
                              return; // do not queue behind a stop that waits for the workers
                          }
                          std::lock_guard control(ip->control_mu);
                          if (ip->state.load() == phase::running) {
                              if (auto r = subscribe_locked(*ip, id, entry); !r) {
                                  host_log(*ip, "warn", r.error().message);
                              }
                          }
                      }});
    return WB_OK;
}

// ---- connector_host -----------------------------------------------------------------------------

connector_host::connector_host(connector_host_options options, submit_sink& sink,
                               clock_source& clock, random_source& random)
    : impl_(std::make_unique<impl>(std::move(options), sink, clock, random)) {}

connector_host::~connector_host() {
    stop_all();
    impl_.reset(); // joins the threads before the modules are unloaded
}

module_result<void> connector_host::add_instance(const connector_instance_config& config) {
    if (config.name.empty()) {
        return module_error{errc::invalid_argument, "connector instance: empty name"};
    }
    if (impl_->find(config.name)) {
        return module_error{errc::already_exists,
                            "connector instance '" + config.name + "' is defined twice"};
    }
    auto mod = load_module(config.module, impl_->options.module_dirs);
    if (!mod) {
        return mod.error();
    }
    const std::string settings = config.settings_json.empty() ? "{}" : config.settings_json;
    auto schemas = settings_schemas::compile(*mod);
    if (!schemas) {
        return schemas.error();
    }
    if (auto c = schemas->check_config(settings, config.name); !c) {
        return c.error();
    }
    if (auto v = mod->validate(settings); !v) {
        return redacted(v.error(), settings, schemas->config_secrets());
    }
    auto inst = std::make_shared<instance>();
    inst->name = config.name;
    inst->module = std::move(*mod);
    inst->schemas = std::move(*schemas);
    inst->settings_json = settings;
    inst->host_ctx.owner = impl_.get();
    inst->host_ctx.inst = inst.get();

    std::lock_guard control(inst->control_mu);
    const auto* d = inst->module.descriptor;
    std::array<char, 512> buf{};
    wb_status st = WB_ERR_INTERNAL;
    try {
        st = d->create(&impl_->api, reinterpret_cast<wb_host*>(&inst->host_ctx), str(settings),
                       &inst->conn, buf.data(), buf.size());
    } catch (...) {
        st = WB_ERR_INTERNAL;
    }
    buf.back() = '\0';
    if (st != WB_OK || inst->conn == nullptr) {
        const std::string reason = buf[0] != '\0' ? buf.data() : "status " + std::to_string(st);
        return redacted(
            {errc::invalid_argument, inst->module.path + ": config rejected: " + reason}, settings,
            inst->schemas.config_secrets());
    }
    try {
        st = d->start(inst->conn);
    } catch (...) {
        st = WB_ERR_INTERNAL;
    }
    if (st != WB_OK) {
        inst->errors++;
        try {
            d->destroy(inst->conn);
        } catch (...) {
        }
        inst->conn = nullptr;
        inst->state = phase::destroyed;
        std::unique_lock lk(impl_->inst_mu);
        impl_->retired.push_back(inst);
        return module_error{errc::internal, inst->module.path + ": connector '" + config.name +
                                                "' failed to start (status " + std::to_string(st) +
                                                ")"};
    }
    inst->state = phase::running;
    std::unique_lock lk(impl_->inst_mu);
    impl_->instances.push_back(std::move(inst));
    return {};
}

module_result<void>
connector_host::add_instances(const std::vector<connector_instance_config>& configs) {
    for (const auto& c : configs) {
        if (auto r = add_instance(c); !r) {
            return r;
        }
    }
    return {};
}

module_result<void> connector_host::subscribe(const subscription& sub) {
    auto inst = impl_->find(sub.connector);
    if (!inst) {
        return module_error{errc::not_found, "subscription " + sub.id + ": connector instance '" +
                                                 sub.connector + "' is not loaded"};
    }
    std::lock_guard control(inst->control_mu);
    if (inst->state.load() != phase::running) {
        return module_error{errc::conflict, "connector '" + inst->name + "' is not running"};
    }
    sub_entry entry{std::string(source_name(sub.source)), sub.workflow_id, {},
                    sub.connector_settings_json.empty() ? "{}" : sub.connector_settings_json};
    {
        // Unchanged (the connector sync asks again every pass): nothing opened or checked, no
        // module call.
        std::lock_guard lk(inst->mu);
        if (auto it = inst->subs.find(sub.id);
            it != inst->subs.end() && it->second.same_stored(entry)) {
            return {};
        }
    }
    auto opened = open_stored_settings(entry.stored_settings_json, impl_->options.box);
    if (!opened) {
        return module_error{errc::invalid_argument,
                            "settings of subscription " + sub.id +
                                " hold a sealed secret this host key cannot open (sealed under "
                                "another key, or altered)"};
    }
    entry.settings_json = std::move(*opened);
    {
        std::lock_guard lk(inst->mu);
        if (auto it = inst->subs.find(sub.id); it != inst->subs.end() && it->second == entry) {
            it->second.stored_settings_json = entry.stored_settings_json;
            return {};
        }
    }
    // Checked plain: the schema describes the values, not their sealed form.
    if (auto c = inst->schemas.check_subscription(entry.settings_json, sub.id); !c) {
        return c.error();
    }
    if (auto r = impl_->subscribe_locked(*inst, sub.id, entry); !r) {
        return redacted(r.error(), entry.settings_json, inst->schemas.subscription_secrets());
    }
    return {};
}

module_result<sealed_settings> connector_host::seal_settings(const std::string& connector,
                                                             std::string_view settings_json,
                                                             seal_mode mode) const {
    if (impl_->options.box == nullptr) {
        return module_error{errc::unsupported, "this host has no key to seal settings with"};
    }
    auto inst = impl_->find(connector);
    const auto fields =
        inst ? inst->schemas.subscription_secrets() : secret_fields::every_setting();
    std::lock_guard lk(impl_->random_mu);
    auto r = seal_secret_settings(settings_json, fields, *impl_->options.box, impl_->random, mode);
    if (!r) {
        return module_error{errc::invalid_argument,
                            "settings must be a JSON object without the key \"$sealed\" (reserved "
                            "for secrets sealed at rest)"};
    }
    return std::move(*r);
}

module_result<void> connector_host::unsubscribe(const std::string& connector,
                                                const std::string& subscription_id) {
    auto inst = impl_->find(connector);
    if (!inst) {
        return {};
    }
    std::lock_guard control(inst->control_mu);
    if (inst->state.load() != phase::running || !inst->subscribed(subscription_id)) {
        return {};
    }
    wb_status st = WB_ERR_INTERNAL;
    try {
        st = inst->module.descriptor->unsubscribe(inst->conn, str(subscription_id));
    } catch (...) {
        st = WB_ERR_INTERNAL;
    }
    {
        // Forgotten either way: the host stops routing and accepting submits for it.
        std::lock_guard lk(inst->mu);
        inst->subs.erase(subscription_id);
    }
    if (st != WB_OK) {
        inst->errors++;
        return impl_->fail(*inst, "failed to unsubscribe " + subscription_id + " (status " +
                                      std::to_string(st) + ")");
    }
    return {};
}

module_result<void> connector_host::remove_instance(const std::string& name) {
    std::shared_ptr<instance> inst = impl_->find(name);
    if (!inst) {
        return {};
    }
    // Stays findable while it stops, so its requests are answered 503 rather than 404.
    auto outcome = impl_->stop_instance(*inst);
    std::unique_lock lk(impl_->inst_mu);
    auto& v = impl_->instances;
    if (auto it = std::find(v.begin(), v.end(), inst); it != v.end()) {
        v.erase(it);
        impl_->retired.push_back(inst);
    }
    return outcome;
}

void connector_host::stop_all() {
    if (!impl_) {
        return;
    }
    std::vector<std::string> names;
    {
        std::shared_lock lk(impl_->inst_mu);
        for (auto it = impl_->instances.rbegin(); it != impl_->instances.rend(); ++it) {
            names.push_back((*it)->name);
        }
    }
    for (const auto& n : names) {
        if (auto r = remove_instance(n); !r) {
            impl_->emit_log("error", n, r.error().message);
        }
    }
}

bool connector_host::serves(const subscription& sub) const {
    if (sub.connector.empty()) {
        return false;
    }
    auto inst = impl_->find(sub.connector);
    return inst && (inst->module.capabilities & WB_CAP_HTTP_INGEST) != 0 &&
           inst->module.descriptor->on_http_request != nullptr;
}

void connector_host::handle(const subscription& sub, const inbound_http_request& req,
                            ingest_reply_callback reply) {
    auto inst = impl_->find(sub.connector);
    if (!inst || (inst->module.capabilities & WB_CAP_HTTP_INGEST) == 0 ||
        inst->module.descriptor->on_http_request == nullptr) {
        reply(ingest_reply{404,
                           {{"content-type", "application/json"}},
                           error_body("not_found", "no connector serves this subscription")});
        return;
    }
    bool running = false;
    bool full = false;
    {
        std::lock_guard lk(inst->mu);
        running = inst->state.load() == phase::running;
        full = inst->active_calls >= std::max(1, impl_->options.max_calls_per_instance) &&
               inst->queued_calls.size() >= impl_->options.max_queued_calls;
    }
    if (!running) {
        reply(ingest_reply{503,
                           {{"content-type", "application/json"}, {"retry-after", "1"}},
                           error_body("service_unavailable", "the connector is not running")});
        return;
    }
    if (full) {
        inst->busy++;
        inst->errors++;
        reply(ingest_reply{503,
                           {{"content-type", "application/json"}, {"retry-after", "1"}},
                           error_body("service_unavailable", "the connector is busy")});
        return;
    }
    std::uint64_t id = 0;
    {
        std::lock_guard lk(impl_->req_mu);
        id = impl_->next_request++;
        impl_->pending.emplace(id, pending_request{inst.get(), std::move(reply)});
    }
    impl_->schedule(impl_->clock.now_ms() + impl_->options.respond_timeout_ms,
                    work_item{nullptr, [im = impl_.get(), id] { im->expire(id); }});

    {
        // Checked under mu so stop_instance's idle wait sees this call.
        std::lock_guard lk(inst->mu);
        if (inst->active_calls >= std::max(1, impl_->options.max_calls_per_instance)) {
            inst->queued_calls.push_back([im = impl_.get(), inst, sub_id = sub.id, req, id] {
                im->call(*inst, sub_id, req, id);
            });
            return; // the thread that frees a slot runs it
        }
        ++inst->active_calls;
    }
    impl_->call(*inst, sub.id, req, id);
    // Keep the slot while requests queued behind a slow call are waiting: run them here.
    for (;;) {
        std::function<void()> next;
        {
            std::lock_guard lk(inst->mu);
            if (inst->queued_calls.empty()) {
                --inst->active_calls;
                inst->cv.notify_all();
                break;
            }
            next = std::move(inst->queued_calls.front());
            inst->queued_calls.pop_front();
        }
        next();
    }
}

void connector_host::impl::call(instance& inst, const std::string& sub_id,
                                const inbound_http_request& req, std::uint64_t id) {
    {
        // A queued request may have been answered meanwhile (its deadline, or a stop).
        std::lock_guard lk(req_mu);
        if (!pending.count(id)) {
            return;
        }
    }
    if (inst.state.load() != phase::running) {
        return; // stop_instance answers what is left
    }
    std::vector<std::string> names;
    names.reserve(req.headers.size());
    for (const auto& h : req.headers) {
        names.push_back(lower(h.first));
    }
    std::vector<wb_header> headers;
    headers.reserve(req.headers.size());
    for (std::size_t i = 0; i < req.headers.size(); ++i) {
        headers.push_back(wb_header{str(names[i]), str(req.headers[i].second)});
    }
    const std::string public_url = options.public_url + req.target;
    wb_http_request r{};
    r.struct_size = sizeof(wb_http_request);
    r.subscription_id = str(sub_id);
    r.method = str(req.method);
    r.target = str(req.target);
    r.public_url = str(public_url);
    r.headers = headers.data();
    r.header_count = headers.size();
    r.body = str(req.body);
    r.remote_address = str(req.remote_address);
    r.received_at_ms = clock.now_ms();

    inst.requests++;
    bool threw = false;
    try {
        inst.module.descriptor->on_http_request(inst.conn, reinterpret_cast<wb_request_ctx*>(id),
                                                &r);
    } catch (...) {
        threw = true;
    }
    if (threw) {
        inst.errors++;
        host_log(inst, "error", "exception escaped on_http_request; the host answered 500");
        if (auto p = take_pending(id)) {
            deliver(*p, ingest_reply{500,
                                     {{"content-type", "application/json"}},
                                     error_body("internal_error", "the connector failed")});
        }
    }
}

std::vector<std::string> connector_host::sources() const {
    std::set<std::string> out;
    std::shared_lock lk(impl_->inst_mu);
    for (const auto& i : impl_->instances) {
        out.insert(i->module.source);
    }
    return {out.begin(), out.end()};
}

std::vector<std::string> connector_host::queue_backends() const {
    // The in-tree queue modules by engine; a vendor's queue module counts when its name is one
    // of the contract's backend names (queueBus.backends is a closed enum).
    static const std::set<std::string> contract_names = {
        "rabbitmq", "kafka", "sqs", "sns", "pubsub", "mqtt", "nats", "redis-streams", "in-memory"};
    std::set<std::string> out;
    std::shared_lock lk(impl_->inst_mu);
    for (const auto& i : impl_->instances) {
        if (i->module.source != "queue") {
            continue;
        }
        const std::string& name = i->module.name;
        if (name == "queue") {
            out.insert("redis-streams");
        } else if (contract_names.count(name) > 0) {
            out.insert(name);
        }
    }
    return {out.begin(), out.end()};
}

std::vector<std::string> connector_host::connector_names() const {
    std::vector<std::string> out;
    std::shared_lock lk(impl_->inst_mu);
    for (const auto& i : impl_->instances) {
        out.push_back(i->name);
    }
    return out;
}

result<void> connector_host::attach(const subscription& sub, std::string& why) {
    auto r = subscribe(sub);
    if (!r) {
        why = r.error().message;
        return make_error_code(r.error().code);
    }
    return {};
}

void connector_host::detach(const subscription& sub) {
    if (!sub.connector.empty()) {
        (void)unsubscribe(sub.connector, sub.id);
    }
}

std::vector<connector_instance_info> connector_host::instances() const {
    std::vector<connector_instance_info> out;
    std::shared_lock lk(impl_->inst_mu);
    for (const auto& i : impl_->instances) {
        connector_instance_info info;
        info.name = i->name;
        info.module_name = i->module.name;
        info.module_path = i->module.path;
        info.version = i->module.version;
        info.source = i->module.source;
        info.capabilities = i->module.capabilities;
        info.running = i->state.load() == phase::running;
        {
            std::lock_guard il(i->mu);
            for (const auto& [id, _] : i->subs) {
                info.subscriptions.push_back(id);
            }
        }
        info.stats = stats_of(*i);
        out.push_back(std::move(info));
    }
    return out;
}

std::optional<connector_stats> connector_host::stats(const std::string& name) const {
    std::shared_ptr<instance> inst = impl_->find(name);
    if (!inst) {
        std::shared_lock lk(impl_->inst_mu);
        for (const auto& i : impl_->retired) {
            if (i->name == name) {
                inst = i;
            }
        }
    }
    if (!inst) {
        return std::nullopt;
    }
    return stats_of(*inst);
}

std::uint64_t connector_host::errors(const std::string& name) const {
    auto s = stats(name);
    return s ? s->errors : 0;
}

} // namespace wopbridge
