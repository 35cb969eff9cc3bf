#pragma once
// Internal to the HTTP server (server*.cpp only): a request's reply state and the sinks and
// streams through which handlers answer it from any thread. Replies are re-posted onto the
// connection's strand through the post gate, which drops them once the server is gone.

#include "http/error_mapping.hpp"
#include "http/http_message.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace wopbridge::http {

namespace net = boost::asio;

namespace server_detail {

class stream_impl;

// One request's reply state; touched only on the connection's strand.
struct exchange {
    explicit exchange(const net::any_io_executor& ex) : signal(ex) {}
    net::steady_timer signal; // cancelled to wake the session coroutine
    std::optional<http_response> response;
    std::optional<http_response> stream_head;
    std::shared_ptr<stream_impl> stream;
    std::deque<std::string> chunks;
    bool stream_closed = false;
    bool force_closed = false;
    void wake() { signal.cancel(); }
};

// Guards posting into the io_context: sinks may outlive the server (a late bridge callback);
// once the gate is shut their posts are dropped.
struct post_gate {
    std::mutex mu;
    bool open = true;

    template <class Executor, class Fn>
    void post(const Executor& ex, Fn&& fn) {
        std::lock_guard lock(mu);
        if (open) {
            net::post(ex, std::forward<Fn>(fn));
        }
    }
    // Onto the exchange's strand, if the exchange and the server are both still there. Sinks and
    // streams keep no executor of their own: a strand copy dropped by a store thread after the
    // io_context is gone reads its freed service. The exchange is locked, used and released under
    // the gate, so its last owner can never be dropped here after shut().
    template <class Fn>
    void post(const std::weak_ptr<exchange>& wex, Fn&& fn) {
        std::lock_guard lock(mu);
        if (!open) {
            return;
        }
        if (auto ex = wex.lock()) {
            net::post(ex->signal.get_executor(), std::forward<Fn>(fn));
        }
    }
    void shut() {
        std::lock_guard lock(mu);
        open = false;
    }
};

class stream_impl final : public response_stream {
public:
    stream_impl(std::weak_ptr<exchange> ex, std::shared_ptr<post_gate> gate, task_scheduler& tasks)
        : ex_(std::move(ex)), gate_(std::move(gate)), tasks_(tasks) {}

    void write(std::string chunk) override {
        gate_->post(ex_, [wex = ex_, c = std::move(chunk)]() mutable {
            auto ex = wex.lock();
            if (ex && !ex->stream_closed) {
                ex->chunks.push_back(std::move(c));
                ex->wake();
            }
        });
    }
    void close() override {
        gate_->post(ex_, [wex = ex_] {
            if (auto ex = wex.lock()) {
                ex->stream_closed = true;
                ex->wake();
            }
        });
    }
    void on_abort(std::function<void()> fn) override {
        {
            std::lock_guard lock(mu_);
            if (!aborted_) {
                abort_fn_ = std::move(fn);
                return;
            }
        }
        fn();
    }
    // From the strand: the stream ended without close().
    void fire_abort() {
        std::function<void()> fn;
        {
            std::lock_guard lock(mu_);
            if (aborted_) {
                return;
            }
            aborted_ = true;
            fn = std::move(abort_fn_);
        }
        if (fn) {
            tasks_.post(std::move(fn)); // may take the api's locks: not on the I/O thread
        }
    }

private:
    // Weak: the session owns its exchange. A stream or sink a handler keeps past the session (or
    // past the server: a store thread may drop the last copy) must not keep the exchange's timer
    // alive beyond its io_context.
    std::weak_ptr<exchange> ex_;
    std::shared_ptr<post_gate> gate_;
    task_scheduler& tasks_;
    std::mutex mu_;
    bool aborted_ = false;
    std::function<void()> abort_fn_;
};

class sink_impl final : public response_sink {
public:
    sink_impl(const std::shared_ptr<exchange>& ex, std::shared_ptr<post_gate> gate,
              task_scheduler& tasks)
        : ex_(ex), gate_(std::move(gate)), tasks_(tasks) {}

    ~sink_impl() override {
        if (!used_.exchange(true)) {
            // A handler dropped the request without answering: never leave the client hanging.
            deliver(error_response(500, "internal_error", "the request was not answered"));
        }
    }

    void send(http_response res) override {
        if (used_.exchange(true)) {
            return;
        }
        deliver(std::move(res));
    }

    std::shared_ptr<response_stream> open_stream(http_response head) override {
        auto st = std::make_shared<stream_impl>(ex_, gate_, tasks_);
        if (used_.exchange(true)) {
            return st;
        }
        gate_->post(ex_, [wex = ex_, st, h = std::move(head)]() mutable {
            if (auto ex = wex.lock()) {
                ex->stream = st;
                ex->stream_head = std::move(h);
                ex->wake();
            }
        });
        return st;
    }

private:
    void deliver(http_response res) {
        gate_->post(ex_, [wex = ex_, r = std::move(res)]() mutable {
            if (auto ex = wex.lock()) {
                ex->response = std::move(r);
                ex->wake();
            }
        });
    }

    std::weak_ptr<exchange> ex_; // weak, as in stream_impl

    std::shared_ptr<post_gate> gate_;
    task_scheduler& tasks_;
    std::atomic<bool> used_{false};
};

} // namespace server_detail

} // namespace wopbridge::http
