#pragma once
// The host as a connector sees it (wopbridge::host) and one inbound request awaiting its response
// (request_handle): C++ calls over the wb_host_api table, exceptions kept on this side of it.

#include "wopbridge/connector_values.hpp"

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace wopbridge {

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

} // namespace wopbridge
