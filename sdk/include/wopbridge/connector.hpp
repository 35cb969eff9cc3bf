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

#include "wopbridge/connector_values.hpp"
#include "wopbridge/host.hpp"

// Everything connector.hpp included before it was split stays included (modules rely on it).
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
