#include "support/connector_harness.hpp"

#include "core/blob_store.hpp"
#include "support/build_paths.hpp"
#include "support/temp_dir.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <thread>
#include <unordered_map>

#include <yaml-cpp/yaml.h>

namespace wopbridge::testing {

namespace {

std::string to_string(wb_str s) {
    return s.size == 0 ? std::string{} : std::string(s.data, s.size);
}

wb_str as_wb(std::string_view s) {
    return wb_str{s.data(), s.size()};
}

std::string lower(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && lower(a) == lower(b);
}

const char* level_name(wb_log_level level) {
    switch (level) {
    case WB_LOG_DEBUG:
        return "debug";
    case WB_LOG_INFO:
        return "info";
    case WB_LOG_WARN:
        return "warn";
    case WB_LOG_ERROR:
        return "error";
    }
    return "unknown";
}

// Copies the module's NUL-terminated error buffer, tolerating an unterminated one.
std::string from_buf(const char* buf, std::size_t size) {
    return std::string(buf, ::strnlen(buf, size));
}

std::int64_t system_now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::string substitute_env(const std::string& text) {
    std::string out;
    std::size_t pos = 0;
    while (pos < text.size()) {
        const auto open = text.find("${", pos);
        const auto close = open == std::string::npos ? std::string::npos : text.find('}', open);
        if (close == std::string::npos) {
            out.append(text, pos, std::string::npos);
            break;
        }
        out.append(text, pos, open - pos);
        out += "test-" + text.substr(open + 2, close - open - 2);
        pos = close + 1;
    }
    return out;
}

boost::json::value yaml_to_json(const YAML::Node& node) {
    switch (node.Type()) {
    case YAML::NodeType::Map: {
        boost::json::object obj;
        for (const auto& kv : node) {
            obj[kv.first.as<std::string>()] = yaml_to_json(kv.second);
        }
        return obj;
    }
    case YAML::NodeType::Sequence: {
        boost::json::array arr;
        for (const auto& item : node) {
            arr.push_back(yaml_to_json(item));
        }
        return arr;
    }
    case YAML::NodeType::Scalar: {
        const std::string text = node.Scalar();
        if (node.Tag() != "!") { // plain (unquoted) scalars may be numbers or booleans
            if (text == "true" || text == "false") {
                return text == "true";
            }
            if (!text.empty() && text.find_first_not_of("-0123456789") == std::string::npos) {
                try {
                    return std::stoll(text);
                } catch (...) {
                }
            }
        }
        return boost::json::string(substitute_env(text));
    }
    default:
        return nullptr;
    }
}

} // namespace

std::string settings_from_config(const std::string& yaml_path, std::string_view connector_name,
                                 bool subscription) {
    const YAML::Node root = YAML::LoadFile(yaml_path);
    const char* list = subscription ? "subscriptions" : "connectors";
    const char* key = subscription ? "id" : "name";
    for (const auto& entry : root[list]) {
        if (entry[key] && entry[key].as<std::string>() == connector_name) {
            if (!entry["settings"]) {
                return "{}";
            }
            return boost::json::serialize(yaml_to_json(entry["settings"]));
        }
    }
    throw std::runtime_error(yaml_path + ": no " + list + " entry " + std::string(connector_name));
}

// ---------------------------------------------------------------------------------------------
// pending_reply

struct pending_reply::state {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    http_reply reply;
};

bool pending_reply::ready() const {
    std::lock_guard lock(state_->mu);
    return state_->done;
}

std::optional<http_reply> pending_reply::wait(std::chrono::milliseconds timeout) {
    std::unique_lock lock(state_->mu);
    if (!state_->cv.wait_for(lock, timeout, [&] { return state_->done; })) {
        return std::nullopt;
    }
    return state_->reply;
}

std::string http_reply::header(std::string_view name) const {
    for (const auto& [n, v] : headers) {
        if (iequals(n, name)) {
            return v;
        }
    }
    return {};
}

bool http_reply::has_header(std::string_view name) const {
    return std::any_of(headers.begin(), headers.end(),
                       [&](const auto& h) { return iequals(h.first, name); });
}

// ---------------------------------------------------------------------------------------------
// impl: the host side

struct connector_harness::impl {
    void* dl = nullptr;
    const wb_connector_descriptor* desc = nullptr;
    wb_host_api api{};
    wb_connector* conn = nullptr;
    bool started = false;

    std::atomic<std::int64_t> now{system_now_ms()};
    std::atomic<bool> capacity{true};
    temp_dir attachments_root;
    blob_store blobs{(attachments_root.path() / "attachments").string()};

    mutable std::mutex mu;
    std::condition_variable submits_cv;
    submit_mode mode = submit_mode::accept;
    std::string refuse_reason;
    int retry_after = 0;
    std::unordered_map<std::string, std::string> dedup; // sub id + '\0' + provider id -> run id
    int run_counter = 0;
    std::vector<recorded_submit> submits;
    std::set<std::string> subscribed;
    std::vector<std::string> logs;
    std::vector<std::string> violations;
    std::vector<std::string> registered;
    int uncommitted = 0; // submits whose outcome was not yet delivered
    bool paused = false;
    std::vector<std::function<void()>> deferred;
    std::map<wb_request_ctx*, std::shared_ptr<pending_reply::state>> in_flight;

    // Worker thread: post_task and submit completions.
    std::mutex work_mu;
    std::condition_variable work_cv;
    std::multimap<std::chrono::steady_clock::time_point, std::function<void()>> tasks;
    bool flush_all = false; // run delayed tasks now (stop/shutdown)
    bool quit = false;
    int running = 0;
    std::thread worker;

    impl() {
        api.struct_size = sizeof(wb_host_api);
        api.abi_major = WOPBRIDGE_ABI_MAJOR;
        api.abi_minor = WOPBRIDGE_ABI_MINOR;
        api.log = &host_log;
        api.now_ms = &host_now_ms;
        api.random_bytes = &host_random_bytes;
        api.submit = &host_submit;
        api.respond = &host_respond;
        api.register_subscription = &host_register_subscription;
        api.post_task = &host_post_task;
        api.has_capacity = &host_has_capacity;
        api.store_attachment = &host_store_attachment;
        worker = std::thread([this] { work_loop(); });
    }

    ~impl() {
        {
            std::lock_guard lock(work_mu);
            quit = true;
            flush_all = true;
        }
        work_cv.notify_all();
        worker.join();
    }

    wb_host* host() { return reinterpret_cast<wb_host*>(this); }
    static impl& self(wb_host* h) { return *reinterpret_cast<impl*>(h); }

    void violation(std::string what) {
        std::lock_guard lock(mu);
        violations.push_back(std::move(what));
    }

    void post(std::chrono::milliseconds delay, std::function<void()> fn) {
        {
            std::lock_guard lock(work_mu);
            tasks.emplace(std::chrono::steady_clock::now() + delay, std::move(fn));
        }
        work_cv.notify_all();
    }

    void work_loop() {
        std::unique_lock lock(work_mu);
        for (;;) {
            if (tasks.empty()) {
                if (quit) {
                    return;
                }
                work_cv.wait(lock);
                continue;
            }
            auto first = tasks.begin();
            if (!flush_all && first->first > std::chrono::steady_clock::now()) {
                work_cv.wait_until(lock, first->first);
                continue;
            }
            auto fn = std::move(first->second);
            tasks.erase(first);
            ++running;
            lock.unlock();
            fn();
            lock.lock();
            --running;
            work_cv.notify_all();
        }
    }

    // Runs every queued task (delayed ones too) and waits until the worker is idle.
    void drain() {
        std::unique_lock lock(work_mu);
        flush_all = true;
        work_cv.notify_all();
        work_cv.wait(lock, [&] { return tasks.empty() && running == 0; });
        flush_all = false;
    }

    // --- wb_host_api functions (C linkage not required: plain function pointers) -------------

    static void host_log(wb_host* h, wb_log_level level, wb_str message) {
        auto& s = self(h);
        std::lock_guard lock(s.mu);
        s.logs.push_back(std::string(level_name(level)) + " " + to_string(message));
    }

    static std::int64_t host_now_ms(wb_host* h) { return self(h).now.load(); }

    static wb_status host_random_bytes(wb_host*, std::uint8_t* out, std::size_t n) {
        if (out == nullptr && n > 0) {
            return WB_ERR_INVALID;
        }
        std::random_device rd;
        for (std::size_t i = 0; i < n; ++i) {
            out[i] = static_cast<std::uint8_t>(rd());
        }
        return WB_OK;
    }

    static wb_status host_submit(wb_host* h, const wb_inbound_event* event, wb_submit_done_fn done,
                                 void* user) {
        auto& s = self(h);
        if (event == nullptr || done == nullptr || event->struct_size < sizeof(wb_inbound_event)) {
            s.violation("submit: null event/callback or short struct_size");
            return WB_ERR_INVALID;
        }
        recorded_submit rec;
        rec.subscription_id = to_string(event->subscription_id);
        rec.provider_event_id = to_string(event->provider_event_id);
        rec.received_at_ms = event->received_at_ms;
        rec.verified = event->verified != 0;
        rec.content_json = to_string(event->content_json);

        // The content must be a JSON object with exactly one per-source key.
        boost::system::error_code ec;
        auto parsed = boost::json::parse(rec.content_json, ec);
        if (ec || !parsed.is_object() || parsed.as_object().size() != 1) {
            s.violation("submit: content_json is not an object with exactly one per-source key");
        }
        if (rec.provider_event_id.empty()) {
            s.violation("submit: empty provider_event_id");
        }

        std::string run_id;
        std::string delivery_id;
        {
            std::lock_guard lock(s.mu);
            const std::string key = rec.subscription_id + '\0' + rec.provider_event_id;
            if (s.subscribed.count(rec.subscription_id) == 0) {
                // As the real host: a connector only submits for subscriptions it was handed.
                return WB_ERR_INVALID;
            }
            if (auto it = s.dedup.find(key); it != s.dedup.end()) {
                rec.outcome = WB_SUBMIT_DUPLICATE;
                rec.run_id = it->second;
            } else if (s.mode == submit_mode::refuse) {
                rec.outcome = WB_SUBMIT_REFUSED;
                rec.reason = s.refuse_reason.empty() ? "subscription_not_active" : s.refuse_reason;
            } else {
                ++s.run_counter;
                std::string id = "run_" + std::to_string(s.run_counter);
                s.dedup.emplace(key, id);
                if (s.mode == submit_mode::accept) {
                    rec.outcome = WB_SUBMIT_ACCEPTED;
                    rec.run_id = id;
                } else {
                    rec.outcome = WB_SUBMIT_HELD;
                }
            }
            if (rec.outcome != WB_SUBMIT_REFUSED) {
                delivery_id = "dlv_" + std::to_string(s.submits.size() + 1);
            }
            run_id = rec.run_id;
            s.submits.push_back(rec);
            ++s.uncommitted;
        }
        s.submits_cv.notify_all();

        const int retry_after =
            rec.outcome == WB_SUBMIT_REFUSED &&
                    (rec.reason == "overloaded" || rec.reason == "store_unavailable")
                ? std::max(1, s.retry_after)
                : 0;
        auto complete = [&s, done, user, status = rec.outcome, run_id, delivery_id,
                         reason = rec.reason, retry_after] {
            {
                std::lock_guard lock(s.mu);
                --s.uncommitted;
            }
            wb_submit_outcome outcome{};
            outcome.struct_size = sizeof(wb_submit_outcome);
            outcome.status = status;
            outcome.run_id = as_wb(run_id);
            outcome.delivery_id = as_wb(delivery_id);
            outcome.reason = as_wb(reason);
            outcome.retry_after_seconds = retry_after;
            done(user, &outcome);
        };
        {
            std::lock_guard lock(s.mu);
            if (s.paused) {
                s.deferred.push_back(std::move(complete));
                return WB_OK;
            }
        }
        // Never inside submit(): a real host completes after its commit, on its own thread.
        s.post(std::chrono::milliseconds(0), std::move(complete));
        return WB_OK;
    }

    static wb_status host_respond(wb_host* h, wb_request_ctx* ctx,
                                  const wb_http_response* response) {
        auto& s = self(h);
        std::shared_ptr<pending_reply::state> st;
        {
            std::lock_guard lock(s.mu);
            auto it = s.in_flight.find(ctx);
            if (it == s.in_flight.end()) {
                s.violations.push_back("respond: unknown or already answered request");
                return WB_ERR_INVALID;
            }
            if (s.uncommitted > 0 && s.in_flight.size() == 1) {
                s.violations.push_back("respond: answered while a submit was not yet committed");
            }
            st = it->second;
            s.in_flight.erase(it);
        }
        http_reply reply;
        if (response == nullptr || response->struct_size < sizeof(wb_http_response)) {
            s.violation("respond: null response or short struct_size");
            reply.status = 500;
        } else {
            reply.status = response->status;
            for (std::size_t i = 0; i < response->header_count; ++i) {
                reply.headers.emplace_back(to_string(response->headers[i].name),
                                           to_string(response->headers[i].value));
            }
            reply.body = to_string(response->body);
        }
        {
            std::lock_guard lock(st->mu);
            st->reply = std::move(reply);
            st->done = true;
        }
        st->cv.notify_all();
        return WB_OK;
    }

    static wb_status host_register_subscription(wb_host* h, const wb_subscription_request* request,
                                                char* error_buf, std::size_t error_buf_size) {
        auto& s = self(h);
        if (request == nullptr) {
            return WB_ERR_INVALID;
        }
        std::string id = to_string(request->id);
        std::lock_guard lock(s.mu);
        if (id.empty() || s.subscribed.count(id) != 0 ||
            std::find(s.registered.begin(), s.registered.end(), id) != s.registered.end()) {
            if (error_buf != nullptr && error_buf_size > 0) {
                std::snprintf(error_buf, error_buf_size, "subscription id is empty or taken");
            }
            return WB_ERR_INVALID;
        }
        s.registered.push_back(std::move(id));
        return WB_OK;
    }

    static wb_status host_post_task(wb_host* h, std::int64_t delay_ms, wb_task_fn fn, void* user) {
        if (fn == nullptr) {
            return WB_ERR_INVALID;
        }
        self(h).post(std::chrono::milliseconds(std::max<std::int64_t>(0, delay_ms)),
                     [fn, user] { fn(user); });
        return WB_OK;
    }

    static int host_has_capacity(wb_host* h) { return self(h).capacity.load() ? 1 : 0; }

    static wb_status host_store_attachment(wb_host* h, wb_str bytes, char* ref_buf,
                                           std::size_t ref_buf_size) {
        auto& s = self(h);
        auto ref =
            s.blobs.put(std::string_view(bytes.data == nullptr ? "" : bytes.data, bytes.size));
        if (!ref) {
            return WB_ERR_BUSY;
        }
        if (ref_buf == nullptr || ref_buf_size < ref->size() + 1) {
            return WB_ERR_INVALID;
        }
        std::memcpy(ref_buf, ref->c_str(), ref->size() + 1);
        return WB_OK;
    }
};

// ---------------------------------------------------------------------------------------------
// connector_harness

std::string connector_harness::module_path(std::string_view name) {
    return std::string(WOPBRIDGE_MODULE_DIR) + "/" + std::string(name) + ".so";
}

connector_harness::connector_harness(std::string_view name) : impl_(std::make_unique<impl>()) {
    const std::string path =
        name.find('/') == std::string_view::npos ? module_path(name) : std::string(name);
    impl_->dl = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (impl_->dl == nullptr) {
        const char* err = ::dlerror();
        throw std::runtime_error("dlopen " + path + ": " + (err ? err : "unknown error"));
    }
    auto entry = reinterpret_cast<wb_entry_fn>(::dlsym(impl_->dl, WOPBRIDGE_ENTRY_SYMBOL));
    if (entry == nullptr) {
        ::dlclose(impl_->dl);
        throw std::runtime_error(path + ": no " WOPBRIDGE_ENTRY_SYMBOL " symbol");
    }
    descriptor_ = entry();
    if (descriptor_ == nullptr) {
        ::dlclose(impl_->dl);
        throw std::runtime_error(path + ": entry returned no descriptor");
    }
    impl_->desc = descriptor_;
}

connector_harness::~connector_harness() {
    if (impl_->started) {
        stop();
    }
    destroy();
    impl_->drain();
    // Join the worker before unloading the code its tasks point into.
    void* dl = impl_->dl;
    impl_.reset();
    if (dl != nullptr) {
        ::dlclose(dl);
    }
}

std::string connector_harness::descriptor_problem() const {
    const auto& d = *descriptor_;
    if (d.struct_size < sizeof(wb_connector_descriptor)) {
        return "descriptor struct_size is smaller than this host's descriptor";
    }
    if (d.abi_major != WOPBRIDGE_ABI_MAJOR || d.abi_minor > WOPBRIDGE_ABI_MINOR) {
        return "descriptor ABI version is not loadable by this host";
    }
    for (auto [field, value] : {std::pair{"name", d.name},
                                {"version", d.version},
                                {"status", d.status},
                                {"security_posture", d.security_posture},
                                {"sdk_build_id", d.sdk_build_id},
                                {"source", d.source},
                                {"config_schema_json", d.config_schema_json},
                                {"subscription_schema_json", d.subscription_schema_json}}) {
        if (value == nullptr || *value == '\0') {
            return std::string("descriptor field ") + field + " is empty";
        }
    }
    const std::string status = d.status;
    if (status != "stable" && status != "alpha" && status != "wip") {
        return "descriptor status is not stable|alpha|wip";
    }
    const std::string source = d.source;
    static const std::set<std::string> sources{"webhook", "email", "form", "queue", "schedule"};
    if (sources.count(source) == 0) {
        return "descriptor source is not a trigger source kind";
    }
    if (std::string_view(d.security_posture).find('\n') != std::string_view::npos) {
        return "descriptor security_posture is not one line";
    }
    for (auto [field, value] : {std::pair{"config_schema_json", d.config_schema_json},
                                {"subscription_schema_json", d.subscription_schema_json}}) {
        boost::system::error_code ec;
        auto v = boost::json::parse(value, ec);
        if (ec || !v.is_object()) {
            return std::string("descriptor ") + field + " is not a JSON object";
        }
    }
    if (!d.validate || !d.create || !d.start || !d.subscribe || !d.unsubscribe || !d.stop ||
        !d.destroy) {
        return "descriptor lacks a lifecycle function";
    }
    const bool http = (d.capabilities & WB_CAP_HTTP_INGEST) != 0;
    if (http != (d.on_http_request != nullptr)) {
        return "on_http_request must be present exactly when WB_CAP_HTTP_INGEST is set";
    }
    return {};
}

std::pair<wb_status, std::string> connector_harness::validate(std::string_view config_json) const {
    char buf[512] = {};
    wb_status st = descriptor_->validate(as_wb(config_json), buf, sizeof buf);
    return {st, from_buf(buf, sizeof buf)};
}

wb_status connector_harness::create(std::string_view config_json, std::string* error) {
    if (impl_->conn != nullptr) {
        return WB_ERR_STATE;
    }
    char buf[512] = {};
    wb_connector* out = nullptr;
    wb_status st =
        descriptor_->create(&impl_->api, impl_->host(), as_wb(config_json), &out, buf, sizeof buf);
    if (error != nullptr) {
        *error = from_buf(buf, sizeof buf);
    }
    if (st == WB_OK) {
        if (out == nullptr) {
            impl_->violation("create: WB_OK without an instance");
            return WB_ERR_INTERNAL;
        }
        impl_->conn = out;
    }
    return st;
}

wb_status connector_harness::start() {
    if (impl_->conn == nullptr) {
        return WB_ERR_STATE;
    }
    wb_status st = descriptor_->start(impl_->conn);
    impl_->started = st == WB_OK;
    return st;
}

wb_status connector_harness::subscribe(const subscription_spec& sub, std::string* error) {
    if (impl_->conn == nullptr) {
        return WB_ERR_STATE;
    }
    const std::string ingest_url =
        sub.ingest_url.empty() ? std::string(public_base) + "/v1/ingest/" + sub.id : sub.ingest_url;
    wb_subscription s{};
    s.struct_size = sizeof(wb_subscription);
    s.id = as_wb(sub.id);
    s.source = as_wb(sub.source);
    s.workflow_id = as_wb(sub.workflow_id);
    s.settings_json = as_wb(sub.settings_json);
    s.ingest_url = as_wb(ingest_url);
    char buf[512] = {};
    wb_status st = descriptor_->subscribe(impl_->conn, &s, buf, sizeof buf);
    if (error != nullptr) {
        *error = from_buf(buf, sizeof buf);
    }
    if (st == WB_OK) {
        std::lock_guard lock(impl_->mu);
        impl_->subscribed.insert(sub.id);
    }
    return st;
}

wb_status connector_harness::unsubscribe(std::string_view id) {
    if (impl_->conn == nullptr) {
        return WB_ERR_STATE;
    }
    wb_status st = descriptor_->unsubscribe(impl_->conn, as_wb(id));
    if (st == WB_OK) {
        std::lock_guard lock(impl_->mu);
        impl_->subscribed.erase(std::string(id));
    }
    return st;
}

wb_status connector_harness::stop(std::chrono::milliseconds grace) {
    if (impl_->conn == nullptr || !impl_->started) {
        return WB_ERR_STATE;
    }
    resume_submit_completion();
    wb_status st = descriptor_->stop(impl_->conn, impl_->now.load() + grace.count());
    impl_->started = false;
    impl_->drain();
    return st;
}

void connector_harness::destroy() {
    if (impl_->conn == nullptr) {
        return;
    }
    resume_submit_completion();
    impl_->drain();
    descriptor_->destroy(impl_->conn);
    impl_->conn = nullptr;
}

wb_status connector_harness::bring_up(std::string_view config_json, const subscription_spec& sub,
                                      std::string* error) {
    wb_status st = create(config_json, error);
    if (st != WB_OK) {
        return st;
    }
    st = start();
    if (st != WB_OK) {
        return st;
    }
    return subscribe(sub, error);
}

pending_reply connector_harness::send_async(const http_request_spec& request) {
    auto st = std::make_shared<pending_reply::state>();
    if (impl_->conn == nullptr || descriptor_->on_http_request == nullptr) {
        impl_->violation("send: no instance or no on_http_request");
        return pending_reply(st);
    }
    // Local copies: the module may only borrow them for the duration of the call.
    std::string sub_id = request.subscription_id;
    std::string method = request.method;
    std::string target = request.target.empty() ? "/v1/ingest/" + sub_id : request.target;
    std::string public_url =
        request.public_url.empty() ? std::string(public_base) + target : request.public_url;
    std::string body = request.body;
    std::string remote = request.remote_address;
    header_list headers;
    for (const auto& [n, v] : request.headers) {
        headers.emplace_back(lower(n), v);
    }
    std::vector<wb_header> wire;
    wire.reserve(headers.size());
    for (const auto& [n, v] : headers) {
        wire.push_back(wb_header{as_wb(n), as_wb(v)});
    }
    wb_http_request req{};
    req.struct_size = sizeof(wb_http_request);
    req.subscription_id = as_wb(sub_id);
    req.method = as_wb(method);
    req.target = as_wb(target);
    req.public_url = as_wb(public_url);
    req.headers = wire.data();
    req.header_count = wire.size();
    req.body = as_wb(body);
    req.remote_address = as_wb(remote);
    req.received_at_ms = request.received_at_ms != 0 ? request.received_at_ms : impl_->now.load();

    auto* ctx = reinterpret_cast<wb_request_ctx*>(st.get());
    {
        std::lock_guard lock(impl_->mu);
        impl_->in_flight.emplace(ctx, st);
    }
    descriptor_->on_http_request(impl_->conn, ctx, &req);
    // Poison the borrowed buffers so a module that kept pointers reads garbage, not valid data.
    std::fill(body.begin(), body.end(), '#');
    for (auto& [n, v] : headers) {
        std::fill(v.begin(), v.end(), '#');
    }
    return pending_reply(st);
}

http_reply connector_harness::send(const http_request_spec& request,
                                   std::chrono::milliseconds timeout) {
    auto pending = send_async(request);
    auto reply = pending.wait(timeout);
    return reply ? *reply : http_reply{};
}

void connector_harness::set_now_ms(std::int64_t ms) noexcept {
    impl_->now.store(ms);
}

std::int64_t connector_harness::now_ms() const noexcept {
    return impl_->now.load();
}

void connector_harness::set_submit_mode(submit_mode mode, std::string reason,
                                        int retry_after_seconds) {
    std::lock_guard lock(impl_->mu);
    impl_->mode = mode;
    impl_->refuse_reason = std::move(reason);
    impl_->retry_after = retry_after_seconds;
}

void connector_harness::pause_submit_completion() {
    std::lock_guard lock(impl_->mu);
    impl_->paused = true;
}

void connector_harness::resume_submit_completion() {
    std::vector<std::function<void()>> queued;
    {
        std::lock_guard lock(impl_->mu);
        impl_->paused = false;
        queued.swap(impl_->deferred);
    }
    for (auto& fn : queued) {
        impl_->post(std::chrono::milliseconds(0), std::move(fn));
    }
}

void connector_harness::set_capacity(bool has_capacity) noexcept {
    impl_->capacity.store(has_capacity);
}

std::vector<recorded_submit> connector_harness::submits() const {
    std::lock_guard lock(impl_->mu);
    return impl_->submits;
}

bool connector_harness::wait_for_submits(std::size_t n, std::chrono::milliseconds timeout) {
    std::unique_lock lock(impl_->mu);
    return impl_->submits_cv.wait_for(lock, timeout, [&] { return impl_->submits.size() >= n; });
}

std::vector<std::string> connector_harness::log_lines() const {
    std::lock_guard lock(impl_->mu);
    return impl_->logs;
}

std::vector<std::string> connector_harness::violations() const {
    std::lock_guard lock(impl_->mu);
    return impl_->violations;
}

std::vector<std::string> connector_harness::registered_subscriptions() const {
    std::lock_guard lock(impl_->mu);
    return impl_->registered;
}

std::filesystem::path connector_harness::attachment_dir() const {
    return impl_->blobs.directory();
}

std::optional<std::string> connector_harness::attachment(std::string_view ref) const {
    auto bytes = impl_->blobs.get(ref);
    if (!bytes) {
        return std::nullopt;
    }
    return *bytes;
}

} // namespace wopbridge::testing
