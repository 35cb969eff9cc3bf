#pragma once
// Internal to the HTTP server (server*.cpp and serve_requests* only): the server's state, its task
// scheduler and the bookkeeping stop() and the connection limits need. server.cpp holds the
// listener and the public API; server_connection.cpp and serve_requests.hpp a connection's
// request/response exchanges.

#include "http/server.hpp"
#include "core/thread_name.hpp"
#include "http/server_sinks.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

namespace wopbridge::http {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace ssl = boost::asio::ssl;
using tcp = net::ip::tcp;

namespace server_detail {

inline constexpr auto use_tuple = net::as_tuple(net::use_awaitable);

class scheduler_impl final : public task_scheduler {
public:
    scheduler_impl(net::io_context& ioc, net::thread_pool& pool, std::shared_ptr<post_gate> gate)
        : pool_(pool), strand_(net::make_strand(ioc)), gate_(std::move(gate)) {}

    void post(std::function<void()> fn) override { post_to_pool(std::move(fn)); }

    std::uint64_t after(std::chrono::milliseconds delay, std::function<void()> fn) override {
        auto id = next_.fetch_add(1);
        gate_->post(strand_, [this, id, delay, fn = std::move(fn)]() mutable {
            auto t = std::make_shared<net::steady_timer>(strand_, delay);
            timers_[id] = t;
            t->async_wait([this, id, t, fn = std::move(fn)](boost::system::error_code ec) mutable {
                timers_.erase(id);
                if (!ec) {
                    post_to_pool(std::move(fn));
                }
            });
        });
        return id;
    }

    void cancel(std::uint64_t token) override {
        gate_->post(strand_, [this, token] {
            auto it = timers_.find(token);
            if (it != timers_.end()) {
                it->second->cancel();
                timers_.erase(it);
            }
        });
    }

    void cancel_all() {
        gate_->post(strand_, [this] {
            for (auto& [id, t] : timers_) {
                t->cancel();
            }
            timers_.clear();
        });
    }

private:
    void post_to_pool(std::function<void()> fn) {
        net::post(pool_, [fn = std::move(fn)] {
            // The pool's threads are Asio's: each is named by the first task it runs.
            thread_local const bool named = (name_this_thread("wb-http-work"), true);
            (void)named;
            fn();
        });
    }

    net::thread_pool& pool_;
    net::strand<net::io_context::executor_type> strand_;
    std::shared_ptr<post_gate> gate_;
    std::atomic<std::uint64_t> next_{1};
    // Touched only on strand_.
    std::unordered_map<std::uint64_t, std::shared_ptr<net::steady_timer>> timers_;
};

// A live connection, as seen by stop().
struct connection_state {
    net::any_io_executor strand;
    bool idle = true;                 // strand only
    std::function<void()> cancel_io;  // strand only; empty once the session ended
    std::shared_ptr<exchange> current; // strand only
};

// One in-flight request slot; released when the exchange ends however it ends.
class in_flight_slot {
public:
    in_flight_slot() = default;
    explicit in_flight_slot(std::atomic<int>* counter) : counter_(counter) {}
    in_flight_slot(const in_flight_slot&) = delete;
    in_flight_slot& operator=(const in_flight_slot&) = delete;
    ~in_flight_slot() { release(); }
    void release() {
        if (counter_ != nullptr) {
            counter_->fetch_sub(1);
            counter_ = nullptr;
        }
    }

private:
    std::atomic<int>* counter_ = nullptr;
};

} // namespace server_detail

struct server::impl {
    explicit impl(server_options o)
        : opts(std::move(o)),
          ioc(std::max(1, opts.threads)),
          pool(static_cast<std::size_t>(std::max(1, opts.worker_threads))),
          gate(std::make_shared<server_detail::post_gate>()),
          scheduler(ioc, pool, gate),
          acceptor(net::make_strand(ioc)) {}

    server_options opts;
    net::io_context ioc;
    net::thread_pool pool;
    std::shared_ptr<server_detail::post_gate> gate;
    server_detail::scheduler_impl scheduler;
    std::optional<ssl::context> tls;
    tcp::acceptor acceptor;
    std::uint16_t bound_port = 0;
    request_handler* handler = nullptr;
    std::vector<std::thread> threads;
    std::optional<net::executor_work_guard<net::io_context::executor_type>> work;

    std::atomic<bool> started{false};
    std::atomic<bool> stopping{false};
    std::atomic<bool> stopped{false};
    std::atomic<int> in_flight{0};

    std::mutex conns_mu;
    std::condition_variable conns_cv;
    std::unordered_map<std::uint64_t, std::shared_ptr<server_detail::connection_state>> conns;
    std::unordered_map<std::string, int> per_address; // open connections by peer address
    std::uint64_t next_conn = 1;
    bool accepting = false;

    net::awaitable<void> accept_loop();
    net::awaitable<void> run_connection(tcp::socket sock);
    template <class Stream>
    net::awaitable<void>
    serve_requests(Stream& stream, beast::flat_buffer& buffer,
                   const std::shared_ptr<server_detail::connection_state>& conn, std::string remote,
                   bool& lingering_close);
    template <class Stream>
    net::awaitable<bool> write_response(Stream& stream, const http_response& r, bool keep_alive);
};

} // namespace wopbridge::http
