#pragma once
// The header-only C++ side of the plugin ABI. A vendor writes an ordinary class derived from
// wopbridge::connector and adds WOPBRIDGE_CONNECTOR(type) once; this header builds the static
// descriptor and the trampolines that turn wb_str into std::string_view, catch every exception at
// the boundary (WB_ERR_INTERNAL plus a host log line) and keep C++ types on this side of it.
//
// What the class provides (static members are optional where marked):
//   static wopbridge::connector_info info();                                      required
//   static wopbridge::status validate(std::string_view config, std::string& err); optional
//   T(wopbridge::host& host, std::string_view config);   may throw on bad config (->
//   WB_ERR_INVALID) virtual overrides of start/subscribe/unsubscribe/on_http_request/stop       all
//   have defaults
//
// The `host&` handed to the constructor lives exactly as long as the connector object.

#include "wopbridge/connector.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace wopbridge {

enum class status : int {
    ok = WB_OK,
    invalid = WB_ERR_INVALID,
    unsupported = WB_ERR_UNSUPPORTED,
    internal = WB_ERR_INTERNAL,
    busy = WB_ERR_BUSY,
    state = WB_ERR_STATE,
};

enum class log_level : int {
    debug = WB_LOG_DEBUG,
    info = WB_LOG_INFO,
    warn = WB_LOG_WARN,
    error = WB_LOG_ERROR,
};

// What `wopbridge connectors` shows and the descriptor carries. Read once, kept for the module's
// life.
struct connector_info {
    std::string name;               // e.g. "hello"
    std::string version = "0.0.0";  // the module's own version
    std::string status = "wip";     // "stable" | "alpha" | "wip"
    std::string security_posture;   // one line: what it verifies, what it trusts
    std::string source = "webhook"; // "webhook" "email" "form" "queue"
    std::string config_schema_json = "{\"type\":\"object\"}";
    std::string subscription_schema_json = "{\"type\":\"object\"}";
    std::uint64_t capabilities = WB_CAP_HTTP_INGEST;
};

namespace detail {

inline std::string_view view(wb_str s) noexcept {
    return s.data == nullptr ? std::string_view{} : std::string_view(s.data, s.size);
}

inline wb_str str(std::string_view s) noexcept {
    return wb_str{s.data(), s.size()};
}

// Copies a one-line message into a caller's buffer: truncated, NUL-terminated, newlines flattened.
inline void copy_error(std::string_view message, char* buf, std::size_t size) noexcept {
    if (buf == nullptr || size == 0) {
        return;
    }
    const std::size_t n = message.size() < size - 1 ? message.size() : size - 1;
    for (std::size_t i = 0; i < n; ++i) {
        const char c = message[i];
        buf[i] = (c == '\n' || c == '\r') ? ' ' : c;
    }
    buf[n] = '\0';
}

// Is function member `offset` (of size `size`) inside the table the host handed us?
inline bool api_has(const wb_host_api* api, std::size_t offset, std::size_t size) noexcept {
    return api != nullptr && api->struct_size >= offset + size;
}

#define WOPBRIDGE_API_HAS(api, member)                                                             \
    (::wopbridge::detail::api_has((api), offsetof(wb_host_api, member),                            \
                                  sizeof(((wb_host_api*)nullptr)->member)) &&                      \
     (api)->member != nullptr)

inline bool ascii_iequals(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) {
        return false;
    }
    for (std::size_t i = 0; i < a.size(); ++i) {
        char x = a[i];
        char y = b[i];
        if (x >= 'A' && x <= 'Z') {
            x = static_cast<char>(x - 'A' + 'a');
        }
        if (y >= 'A' && y <= 'Z') {
            y = static_cast<char>(y - 'A' + 'a');
        }
        if (x != y) {
            return false;
        }
    }
    return true;
}

} // namespace detail

// ---- values handed to the connector (borrowed: valid only during the call) ----------------------

struct header_view {
    std::string_view name; // lower-case as delivered by the host
    std::string_view value;
};

struct http_request_view {
    std::string_view subscription_id;
    std::string_view method;
    std::string_view target;     // path + query as received
    std::string_view public_url; // the URL the provider signed (server.publicUrl + target)
    std::vector<header_view> headers;
    std::string_view body; // raw bytes: verify signatures on these
    std::string_view remote_address;
    std::int64_t received_at_ms = 0;

    // First header with this name, compared case-insensitively.
    std::optional<std::string_view> header(std::string_view name) const noexcept {
        for (const auto& h : headers) {
            if (detail::ascii_iequals(h.name, name)) {
                return h.value;
            }
        }
        return std::nullopt;
    }
};

struct subscription_info {
    std::string_view id;
    std::string_view source;
    std::string_view workflow_id;
    std::string_view settings_json;
    std::string_view ingest_url;
};

// ---- values the connector hands to the host (copied by the host) --------------------------------

struct inbound_event {
    std::string subscription_id;
    std::string provider_event_id; // the provider's stable id; a content hash when it has none
    std::int64_t received_at_ms = 0;
    bool verified = false;
    std::string content_json; // {"<source>":{...}}
};

enum class outcome_kind : int {
    accepted = WB_SUBMIT_ACCEPTED,
    duplicate = WB_SUBMIT_DUPLICATE,
    held = WB_SUBMIT_HELD,
    refused = WB_SUBMIT_REFUSED,
};

struct submit_outcome {
    outcome_kind kind = outcome_kind::refused;
    std::string run_id;
    std::string delivery_id;
    std::string reason;
    int retry_after_seconds = 0;
};

struct subscription_request {
    std::string id;
    std::string source;
    std::string workflow_id;
    std::string settings_json = "{}";
};

using header_list = std::vector<std::pair<std::string, std::string>>;

// ---- one inbound request awaiting its response --------------------------------------------------

// Move-only. respond() completes the request exactly once; a handle destroyed without a response
// answers 500 so the provider is never left hanging (and the host logs it).
class request_handle {
  public:
    request_handle() = default;
    request_handle(const wb_host_api* api, wb_host* host, wb_request_ctx* ctx) noexcept
        : api_(api), host_(host), ctx_(ctx) {}
    request_handle(const request_handle&) = delete;
    request_handle& operator=(const request_handle&) = delete;
    request_handle(request_handle&& other) noexcept
        : api_(other.api_), host_(other.host_), ctx_(std::exchange(other.ctx_, nullptr)) {}
    request_handle& operator=(request_handle&& other) noexcept {
        if (this != &other) {
            abandon();
            api_ = other.api_;
            host_ = other.host_;
            ctx_ = std::exchange(other.ctx_, nullptr);
        }
        return *this;
    }
    ~request_handle() { abandon(); }

    // True until respond() was called (or the handle was moved from).
    bool pending() const noexcept { return ctx_ != nullptr; }

    status respond(int http_status, const header_list& headers = {},
                   std::string_view body = {}) noexcept {
        wb_request_ctx* ctx = std::exchange(ctx_, nullptr);
        if (ctx == nullptr || !WOPBRIDGE_API_HAS(api_, respond)) {
            return status::state;
        }
        try {
            std::vector<wb_header> hs;
            hs.reserve(headers.size());
            for (const auto& [n, v] : headers) {
                hs.push_back(wb_header{detail::str(n), detail::str(v)});
            }
            wb_http_response resp{};
            resp.struct_size = sizeof(wb_http_response);
            resp.status = http_status;
            resp.headers = hs.data();
            resp.header_count = hs.size();
            resp.body = detail::str(body);
            return static_cast<status>(api_->respond(host_, ctx, &resp));
        } catch (...) {
            // Out of memory building the header array: still answer, without headers.
            wb_http_response resp{};
            resp.struct_size = sizeof(wb_http_response);
            resp.status = 500;
            return static_cast<status>(api_->respond(host_, ctx, &resp));
        }
    }

  private:
    void abandon() noexcept {
        if (ctx_ != nullptr) {
            if (WOPBRIDGE_API_HAS(api_, log)) {
                constexpr std::string_view msg = "request dropped without a response; answered 500";
                api_->log(host_, WB_LOG_ERROR, detail::str(msg));
            }
            respond(500);
        }
    }

    const wb_host_api* api_ = nullptr;
    wb_host* host_ = nullptr;
    wb_request_ctx* ctx_ = nullptr;
};

// ---- the host, as the connector sees it ---------------------------------------------------------

class host {
  public:
    host(const wb_host_api* api, wb_host* h) noexcept : api_(api), host_(h) {}
    host(const host&) = delete;
    host& operator=(const host&) = delete;

    const wb_host_api* api() const noexcept { return api_; }
    wb_host* handle() const noexcept { return host_; }

    void log(log_level level, std::string_view message) const noexcept {
        if (WOPBRIDGE_API_HAS(api_, log)) {
            api_->log(host_, static_cast<wb_log_level>(level), detail::str(message));
        }
    }

    std::int64_t now_ms() const noexcept {
        return WOPBRIDGE_API_HAS(api_, now_ms) ? api_->now_ms(host_) : 0;
    }

    status random_bytes(void* out, std::size_t n) const noexcept {
        if (!WOPBRIDGE_API_HAS(api_, random_bytes)) {
            return status::unsupported;
        }
        return static_cast<status>(api_->random_bytes(host_, static_cast<std::uint8_t*>(out), n));
    }

    // `done` runs exactly once, on a host thread, after the durable commit (or refusal), when this
    // returns status::ok; otherwise it is never called.
    status submit(const inbound_event& event,
                  std::function<void(const submit_outcome&)> done) const noexcept {
        if (!WOPBRIDGE_API_HAS(api_, submit)) {
            return status::unsupported;
        }
        auto* pending = new (std::nothrow) submit_state{this, std::move(done)};
        if (pending == nullptr) {
            return status::internal;
        }
        wb_inbound_event ev{};
        ev.struct_size = sizeof(wb_inbound_event);
        ev.subscription_id = detail::str(event.subscription_id);
        ev.provider_event_id = detail::str(event.provider_event_id);
        ev.received_at_ms = event.received_at_ms;
        ev.verified = event.verified ? 1 : 0;
        ev.content_json = detail::str(event.content_json);
        const wb_status st = api_->submit(host_, &ev, &host::submit_done, pending);
        if (st != WB_OK) {
            delete pending;
        }
        return static_cast<status>(st);
    }

    // Completes a request; equivalent to req.respond(...). The handle is consumed.
    status respond(request_handle req, int http_status, const header_list& headers = {},
                   std::string_view body = {}) const noexcept {
        return req.respond(http_status, headers, body);
    }

    status register_subscription(const subscription_request& request,
                                 std::string& error) const noexcept {
        if (!WOPBRIDGE_API_HAS(api_, register_subscription)) {
            return status::unsupported;
        }
        wb_subscription_request req{};
        req.struct_size = sizeof(wb_subscription_request);
        req.id = detail::str(request.id);
        req.source = detail::str(request.source);
        req.workflow_id = detail::str(request.workflow_id);
        req.settings_json = detail::str(request.settings_json);
        char buf[512] = {0};
        const wb_status st = api_->register_subscription(host_, &req, buf, sizeof buf);
        if (st != WB_OK) {
            try {
                error.assign(buf);
            } catch (...) {
            }
        }
        return static_cast<status>(st);
    }

    // Runs fn on a host worker after delay_ms. Queued tasks still run (early) when the host stops.
    status post_task(std::int64_t delay_ms, std::function<void()> fn) const noexcept {
        if (!WOPBRIDGE_API_HAS(api_, post_task)) {
            return status::unsupported;
        }
        auto* task = new (std::nothrow) task_state{this, std::move(fn)};
        if (task == nullptr) {
            return status::internal;
        }
        const wb_status st = api_->post_task(host_, delay_ms, &host::run_task, task);
        if (st != WB_OK) {
            delete task;
        }
        return static_cast<status>(st);
    }

    // False when the bridge is saturated: queue-like sources should stop reading for a while.
    bool has_capacity() const noexcept {
        return !WOPBRIDGE_API_HAS(api_, has_capacity) || api_->has_capacity(host_) != 0;
    }

  private:
    struct submit_state {
        const host* owner;
        std::function<void(const submit_outcome&)> done;
    };
    struct task_state {
        const host* owner;
        std::function<void()> fn;
    };

    static void submit_done(void* user, const wb_submit_outcome* o) noexcept {
        std::unique_ptr<submit_state> state(static_cast<submit_state*>(user));
        if (!state || !state->done) {
            return;
        }
        try {
            submit_outcome out;
            if (o != nullptr) {
                out.kind = static_cast<outcome_kind>(o->status);
                out.run_id = std::string(detail::view(o->run_id));
                out.delivery_id = std::string(detail::view(o->delivery_id));
                out.reason = std::string(detail::view(o->reason));
                out.retry_after_seconds = o->retry_after_seconds;
            } else {
                out.reason = "internal";
            }
            state->done(out);
        } catch (const std::exception& e) {
            state->owner->log(log_level::error,
                              std::string("exception in submit callback: ") + e.what());
        } catch (...) {
            state->owner->log(log_level::error, "unknown exception in submit callback");
        }
    }

    static void run_task(void* user) noexcept {
        std::unique_ptr<task_state> task(static_cast<task_state*>(user));
        if (!task || !task->fn) {
            return;
        }
        try {
            task->fn();
        } catch (const std::exception& e) {
            task->owner->log(log_level::error,
                             std::string("exception in posted task: ") + e.what());
        } catch (...) {
            task->owner->log(log_level::error, "unknown exception in posted task");
        }
    }

    const wb_host_api* api_;
    wb_host* host_;
};

// ---- the class a vendor derives from ------------------------------------------------------------

class connector {
  public:
    virtual ~connector() = default;
    // Starts listeners/pollers. Called once, after construction.
    virtual status start() { return status::ok; }
    // Idempotent: subscribing an id twice updates its settings.
    virtual status subscribe(const subscription_info& sub, std::string& error) {
        return status::ok;
    }
    // Idempotent: unknown ids are ok.
    virtual status unsubscribe(std::string_view id) { return status::ok; }
    // Must not block: answer now or keep `req` and answer later (from any thread).
    virtual void on_http_request(request_handle req, const http_request_view& r) {
        req.respond(404, {{"content-type", "application/json"}}, R"({"error":"not_found"})");
    }
    // Stops listeners and finishes in-flight work before deadline_ms (absolute, epoch ms).
    virtual status stop(std::int64_t deadline_ms) { return status::ok; }
};

namespace detail {

struct instance {
    instance(const wb_host_api* api, wb_host* h) : host_(api, h) {}
    wopbridge::host host_;
    std::unique_ptr<connector> self_;
};

inline instance* as_instance(wb_connector* c) noexcept {
    return reinterpret_cast<instance*>(c);
}

template <class Fn> wb_status guarded(wb_connector* c, const char* what, Fn&& fn) noexcept {
    instance* inst = as_instance(c);
    if (inst == nullptr || !inst->self_) {
        return WB_ERR_STATE;
    }
    try {
        return static_cast<wb_status>(fn());
    } catch (const std::exception& e) {
        inst->host_.log(log_level::error, std::string("exception in ") + what + ": " + e.what());
    } catch (...) {
        inst->host_.log(log_level::error, std::string("unknown exception in ") + what);
    }
    return WB_ERR_INTERNAL;
}

template <class T>
wb_status validate_trampoline(wb_str config, char* error_buf, std::size_t error_buf_size) noexcept {
    if constexpr (requires(std::string & e) { T::validate(std::string_view{}, e); }) {
        try {
            std::string error;
            const status st = T::validate(view(config), error);
            if (st != status::ok) {
                copy_error(error.empty() ? std::string_view("invalid settings") : error, error_buf,
                           error_buf_size);
            }
            return static_cast<wb_status>(st);
        } catch (const std::exception& e) {
            copy_error(e.what(), error_buf, error_buf_size);
            return WB_ERR_INVALID;
        } catch (...) {
            copy_error("unknown exception in validate", error_buf, error_buf_size);
            return WB_ERR_INTERNAL;
        }
    } else {
        return WB_OK;
    }
}

template <class T>
wb_status create_trampoline(const wb_host_api* api, wb_host* h, wb_str config, wb_connector** out,
                            char* error_buf, std::size_t error_buf_size) noexcept {
    if (out == nullptr) {
        return WB_ERR_INVALID;
    }
    *out = nullptr;
    if (api == nullptr || api->abi_major != WOPBRIDGE_ABI_MAJOR) {
        copy_error("host ABI major does not match the module's", error_buf, error_buf_size);
        return WB_ERR_UNSUPPORTED;
    }
    std::unique_ptr<instance> inst;
    try {
        inst = std::make_unique<instance>(api, h);
        inst->self_ = std::make_unique<T>(inst->host_, view(config));
    } catch (const std::exception& e) {
        // A constructor that throws is refusing its settings.
        copy_error(e.what(), error_buf, error_buf_size);
        return WB_ERR_INVALID;
    } catch (...) {
        copy_error("unknown exception in create", error_buf, error_buf_size);
        return WB_ERR_INTERNAL;
    }
    *out = reinterpret_cast<wb_connector*>(inst.release());
    return WB_OK;
}

inline wb_status start_trampoline(wb_connector* c) noexcept {
    return guarded(c, "start", [&] { return as_instance(c)->self_->start(); });
}

inline wb_status subscribe_trampoline(wb_connector* c, const wb_subscription* sub, char* error_buf,
                                      std::size_t error_buf_size) noexcept {
    if (sub == nullptr) {
        return WB_ERR_INVALID;
    }
    return guarded(c, "subscribe", [&] {
        subscription_info info;
        info.id = view(sub->id);
        info.source = view(sub->source);
        info.workflow_id = view(sub->workflow_id);
        info.settings_json = view(sub->settings_json);
        info.ingest_url = view(sub->ingest_url);
        std::string error;
        const status st = as_instance(c)->self_->subscribe(info, error);
        if (st != status::ok) {
            copy_error(error, error_buf, error_buf_size);
        }
        return st;
    });
}

inline wb_status unsubscribe_trampoline(wb_connector* c, wb_str id) noexcept {
    return guarded(c, "unsubscribe", [&] { return as_instance(c)->self_->unsubscribe(view(id)); });
}

inline void on_http_request_trampoline(wb_connector* c, wb_request_ctx* ctx,
                                       const wb_http_request* request) noexcept {
    instance* inst = as_instance(c);
    if (inst == nullptr) {
        return;
    }
    // Owns the ctx from here: if anything below throws, its destructor answers 500.
    request_handle handle(inst->host_.api(), inst->host_.handle(), ctx);
    guarded(c, "on_http_request", [&] {
        if (request == nullptr) {
            handle.respond(400);
            return status::invalid;
        }
        http_request_view v;
        v.subscription_id = view(request->subscription_id);
        v.method = view(request->method);
        v.target = view(request->target);
        v.public_url = view(request->public_url);
        v.headers.reserve(request->header_count);
        for (std::size_t i = 0; i < request->header_count; ++i) {
            v.headers.push_back(
                header_view{view(request->headers[i].name), view(request->headers[i].value)});
        }
        v.body = view(request->body);
        v.remote_address = view(request->remote_address);
        v.received_at_ms = request->received_at_ms;
        inst->self_->on_http_request(std::move(handle), v);
        return status::ok;
    });
}

inline wb_status stop_trampoline(wb_connector* c, std::int64_t deadline_ms) noexcept {
    return guarded(c, "stop", [&] { return as_instance(c)->self_->stop(deadline_ms); });
}

inline void destroy_trampoline(wb_connector* c) noexcept {
    instance* inst = as_instance(c);
    if (inst == nullptr) {
        return;
    }
    try {
        inst->self_.reset();
    } catch (...) {
        inst->host_.log(log_level::error, "exception in connector destructor");
    }
    delete inst;
}

#ifdef WOPBRIDGE_SDK_BUILD_ID
inline constexpr const char* sdk_build_id = WOPBRIDGE_SDK_BUILD_ID;
#else
inline constexpr const char* sdk_build_id = "unknown";
#endif

template <class T> const wb_connector_descriptor* descriptor_for() noexcept {
    static_assert(std::is_base_of_v<connector, T>, "a connector derives from wopbridge::connector");
    static_assert(std::is_constructible_v<T, wopbridge::host&, std::string_view>,
                  "a connector is constructible from (wopbridge::host&, std::string_view config)");
    try {
        // Function-local statics: built once, thread-safe, alive until the module is unloaded.
        static const connector_info info = T::info();
        static const wb_connector_descriptor descriptor = [] {
            wb_connector_descriptor d{};
            d.struct_size = sizeof(wb_connector_descriptor);
            d.abi_major = WOPBRIDGE_ABI_MAJOR;
            d.abi_minor = WOPBRIDGE_ABI_MINOR;
            d.name = info.name.c_str();
            d.version = info.version.c_str();
            d.status = info.status.c_str();
            d.security_posture = info.security_posture.c_str();
            d.sdk_build_id = sdk_build_id;
            d.source = info.source.c_str();
            d.config_schema_json = info.config_schema_json.c_str();
            d.subscription_schema_json = info.subscription_schema_json.c_str();
            d.capabilities = info.capabilities;
            d.validate = &validate_trampoline<T>;
            d.create = &create_trampoline<T>;
            d.start = &start_trampoline;
            d.subscribe = &subscribe_trampoline;
            d.unsubscribe = &unsubscribe_trampoline;
            d.on_http_request = &on_http_request_trampoline;
            d.stop = &stop_trampoline;
            d.destroy = &destroy_trampoline;
            return d;
        }();
        return &descriptor;
    } catch (...) {
        return nullptr; // the host reports "invalid descriptor"
    }
}

} // namespace detail
} // namespace wopbridge

static_assert(std::string_view(WOPBRIDGE_ENTRY_SYMBOL) == "wopbridge_connector_entry_v1",
              "WOPBRIDGE_CONNECTOR must define the entry symbol the host looks up");

// Defines the module's one exported symbol. Use once per module, at namespace scope.
#define WOPBRIDGE_CONNECTOR(type)                                                                  \
    extern "C" WOPBRIDGE_EXPORT const wb_connector_descriptor* wopbridge_connector_entry_v1(       \
        void) {                                                                                    \
        return ::wopbridge::detail::descriptor_for<type>();                                        \
    }
