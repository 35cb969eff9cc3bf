// The connector host's own threads (a timer, a small worker pool), its log lines, and the helpers
// its other translation units share (connector_host_impl.hpp).
#include "plugins/connector_host_impl.hpp"
#include "core/thread_name.hpp"

#include "core/clock.hpp"
#include "core/log.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace wopbridge {

using namespace plugin_detail;

namespace plugin_detail {

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

} // namespace plugin_detail

connector_host::impl::impl(connector_host_options o, submit_sink& s, clock_source& c,
                           random_source& r)
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

    timer_thread = std::thread([this] {
        name_this_thread("wb-conn-timer");
        timer_loop();
    });
    const int n = std::max(1, options.worker_threads);
    for (int i = 0; i < n; ++i) {
        workers.emplace_back([this] {
            name_this_thread("wb-conn-work");
            worker_loop();
        });
    }
}

connector_host::impl::~impl() {
    {
        wopbridge::lock_guard lk(timer_mu);
        threads_stopping = true;
    }
    timer_cv.notify_all();
    {
        wopbridge::lock_guard lk(work_mu);
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

void connector_host::impl::timer_loop() {
    wopbridge::unique_lock lk(timer_mu);
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
        lk.wait_for(timer_cv, std::chrono::milliseconds(wait));
    }
}

void connector_host::impl::worker_loop() {
    wopbridge::unique_lock lk(work_mu);
    for (;;) {
        lk.wait(work_cv, [this]() REQUIRES(work_mu) { return workers_stopping || !work.empty(); });
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

void connector_host::impl::enqueue(work_item item) {
    {
        wopbridge::lock_guard lk(work_mu);
        work.push_back(std::move(item));
    }
    work_cv.notify_one();
}

void connector_host::impl::schedule(millis due, work_item item) {
    {
        wopbridge::lock_guard lk(timer_mu);
        timers.emplace(std::make_pair(due, timer_seq++), std::move(item));
    }
    timer_cv.notify_all();
}

void connector_host::impl::run_guarded(const std::function<void()>& fn) noexcept {
    try {
        if (fn) {
            fn();
        }
    } catch (...) {
        // Host-side closures only wrap module calls that are guarded themselves.
    }
}

// One log shape for the host and its modules: {"ts","level","event",...fields,"connector"}.
// A module that logs a JSON object with an "event" gives its fields (the host's ts, level
// and connector win); any other message is {"event":"connector.log","msg":…}.
void connector_host::impl::emit_log(std::string_view level, std::string_view connector,
                                    std::string_view msg) {
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

void connector_host::impl::host_log(instance& inst, std::string_view level, std::string_view msg) {
    emit_log(level, inst.name, msg);
}

} // namespace wopbridge
