// The only translation unit with Asio/Beast: sessions are C++20 coroutines on a per-connection
// strand; handler replies arrive from any thread through response_sink and are re-posted onto that
// strand; a wake-up timer lets the session coroutine wait for them without holding a thread.

#include "http/server.hpp"

#include "http/error_mapping.hpp"
#include "http/request_framing.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
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

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace ssl = boost::asio::ssl;
using tcp = net::ip::tcp;

namespace {

constexpr auto use_tuple = net::as_tuple(net::use_awaitable);

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

class scheduler_impl final : public task_scheduler {
public:
    scheduler_impl(net::io_context& ioc, net::thread_pool& pool, std::shared_ptr<post_gate> gate)
        : pool_(pool), strand_(net::make_strand(ioc)), gate_(std::move(gate)) {}

    void post(std::function<void()> fn) override { net::post(pool_, std::move(fn)); }

    std::uint64_t after(std::chrono::milliseconds delay, std::function<void()> fn) override {
        auto id = next_.fetch_add(1);
        gate_->post(strand_, [this, id, delay, fn = std::move(fn)]() mutable {
            auto t = std::make_shared<net::steady_timer>(strand_, delay);
            timers_[id] = t;
            t->async_wait([this, id, t, fn = std::move(fn)](boost::system::error_code ec) mutable {
                timers_.erase(id);
                if (!ec) {
                    net::post(pool_, std::move(fn));
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

bhttp::response<bhttp::string_body> to_beast(const http_response& r, bool keep_alive) {
    bhttp::response<bhttp::string_body> res{static_cast<bhttp::status>(r.status), 11};
    res.set(bhttp::field::server, "wopbridge");
    for (const auto& [k, v] : r.headers) {
        res.set(k, v);
    }
    res.body() = r.body;
    res.keep_alive(keep_alive);
    res.prepare_payload();
    return res;
}

// Built outside coroutine bodies: GCC 12 miscompiles string literals inside co_await expressions.
http_response overloaded(int retry_after_s) {
    return error_response(503, "service_unavailable", "the server is at capacity; retry later",
                          std::nullopt, std::max(1, retry_after_s));
}

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

http_response bad_framing() {
    return error_response(400, "bad_request",
                          "ambiguous request framing: only one Content-Length, or "
                          "Transfer-Encoding: chunked alone, is accepted");
}

http_response too_large(std::size_t limit) {
    return error_response(413, "payload_too_large", "the request body exceeds the limit",
                          boost::json::object{{"maxBodyBytes", limit}});
}

} // namespace

struct server::impl {
    explicit impl(server_options o)
        : opts(std::move(o)),
          ioc(std::max(1, opts.threads)),
          pool(static_cast<std::size_t>(std::max(1, opts.worker_threads))),
          gate(std::make_shared<post_gate>()),
          scheduler(ioc, pool, gate),
          acceptor(net::make_strand(ioc)) {}

    server_options opts;
    net::io_context ioc;
    net::thread_pool pool;
    std::shared_ptr<post_gate> gate;
    scheduler_impl scheduler;
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
    std::unordered_map<std::uint64_t, std::shared_ptr<connection_state>> conns;
    std::unordered_map<std::string, int> per_address; // open connections by peer address
    std::uint64_t next_conn = 1;
    bool accepting = false;

    net::awaitable<void> accept_loop();
    net::awaitable<void> run_connection(tcp::socket sock);
    template <class Stream>
    net::awaitable<void> serve_requests(Stream& stream, beast::flat_buffer& buffer,
                                        const std::shared_ptr<connection_state>& conn,
                                        std::string remote, bool& lingering_close);
    template <class Stream>
    net::awaitable<bool> write_response(Stream& stream, const http_response& r, bool keep_alive);
};

template <class Stream>
net::awaitable<bool> server::impl::write_response(Stream& stream, const http_response& r,
                                                  bool keep_alive) {
    auto res = to_beast(r, keep_alive);
    beast::get_lowest_layer(stream).expires_after(opts.write_timeout);
    auto [ec, n] = co_await bhttp::async_write(stream, res, use_tuple);
    co_return !ec;
}

template <class Stream>
net::awaitable<void> server::impl::serve_requests(Stream& stream, beast::flat_buffer& buffer,
                                                  const std::shared_ptr<connection_state>& conn,
                                                  std::string remote, bool& lingering_close) {
    auto& lowest = beast::get_lowest_layer(stream);
    for (;;) {
        if (stopping) {
            co_return;
        }
        conn->idle = true;
        if (buffer.size() == 0) {
            lowest.expires_after(opts.idle_timeout);
            auto [ec, n] = co_await stream.async_read_some(buffer.prepare(8192), use_tuple);
            if (ec) {
                co_return;
            }
            buffer.commit(n);
        }
        conn->idle = false;

        bhttp::request_parser<bhttp::string_body> parser;
        parser.header_limit(static_cast<std::uint32_t>(opts.max_header_bytes));
        // Beast's default body limit (1 MiB) would refuse a larger Content-Length inside the header
        // read, before the route's own limit is known; the route's limit is applied below instead.
        parser.body_limit(boost::none);
        lowest.expires_after(opts.header_timeout);
        {
            auto [ec, n] = co_await bhttp::async_read_header(stream, buffer, parser, use_tuple);
            if (ec == bhttp::error::header_limit) {
                auto res = error_response(431, "header_too_large", "request header too large");
                co_await write_response(stream, res, false);
                lingering_close = true;
                co_return;
            }
            if (ec) {
                if (ec.category() == bhttp::make_error_code(bhttp::error::bad_target).category()) {
                    auto res = error_response(400, "bad_request", "malformed HTTP request");
                    co_await write_response(stream, res, false);
                    lingering_close = true;
                }
                co_return;
            }
        }
        const auto& hdr = parser.get();
        std::vector<header_view> fields;
        for (const auto& f : hdr) {
            fields.emplace_back(std::string_view(f.name_string().data(), f.name_string().size()),
                                std::string_view(f.value().data(), f.value().size()));
        }
        auto framing = framing_of(fields);
        if (!framing) {
            // The body's end is unknown, so is the next request's start: answer and close.
            auto res = bad_framing();
            co_await write_response(stream, res, false);
            lingering_close = true;
            co_return;
        }
        std::string method(hdr.method_string());
        std::string target(hdr.target());
        std::string path = target.substr(0, target.find('?'));
        const std::size_t limit = handler->body_limit(method, path);
        if (framing->kind == body_framing::content_length && framing->content_length > limit) {
            auto res = too_large(limit);
            co_await write_response(stream, res, false);
            lingering_close = true;
            co_return;
        }
        const int slots = std::max(1, opts.max_in_flight_requests) +
                          (handler->is_control_route(method, path)
                               ? std::max(0, opts.reserved_in_flight_requests)
                               : 0);
        if (in_flight.fetch_add(1) >= slots) {
            in_flight.fetch_sub(1);
            auto res = overloaded(opts.overload_retry_after_s);
            co_await write_response(stream, res, false);
            lingering_close = true;
            co_return;
        }
        in_flight_slot slot(&in_flight);
        parser.body_limit(limit);
        if (bhttp::token_list{hdr[bhttp::field::expect]}.exists("100-continue")) {
            bhttp::response<bhttp::empty_body> cont{bhttp::status::continue_, 11};
            lowest.expires_after(opts.write_timeout);
            auto [ec, n] = co_await bhttp::async_write(stream, cont, use_tuple);
            if (ec) {
                co_return;
            }
        }
        {
            // The deadline moves with what arrived: a trickle that holds a slot is cut off once
            // past the grace period it falls below the minimum rate, long before body_timeout.
            const auto body_start = std::chrono::steady_clock::now();
            const auto hard_deadline = body_start + opts.body_timeout;
            std::uint64_t received = 0;
            boost::system::error_code ec;
            while (!parser.is_done()) {
                auto deadline = hard_deadline;
                if (opts.min_body_bytes_per_second > 0) {
                    deadline = std::min(
                        deadline, body_start + opts.body_grace +
                                      std::chrono::milliseconds(
                                          received * 1000 / opts.min_body_bytes_per_second));
                }
                lowest.expires_at(deadline);
                auto [e, n] = co_await bhttp::async_read_some(stream, buffer, parser, use_tuple);
                if (e) {
                    ec = e;
                    break;
                }
                received += n;
            }
            if (ec == bhttp::error::body_limit) {
                auto res = too_large(limit);
                co_await write_response(stream, res, false);
                lingering_close = true;
                co_return;
            }
            if (ec) { // also a trickle past its deadline: tcp_stream has closed the socket
                co_return;
            }
        }
        lowest.expires_never();

        auto msg = parser.release();
        const bool client_keep_alive = msg.keep_alive();
        header_list headers;
        for (const auto& f : msg) {
            headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
        }
        auto req = http_request::make(std::move(method), std::move(target), std::move(headers),
                                      std::move(msg.body()), remote);

        auto ex = std::make_shared<exchange>(conn->strand);
        conn->current = ex;
        // A stream and its exchange point at each other (the stream posts into the exchange);
        // the request's end, however it ends (also a coroutine destroyed at shutdown), breaks
        // the cycle, or every streamed response would leak both.
        struct stream_release {
            exchange& ex;
            ~stream_release() { ex.stream.reset(); }
        } release_stream{*ex};
        {
            auto sink = std::make_shared<sink_impl>(ex, gate, scheduler);
            handler->handle(std::move(req), std::move(sink));
        }
        while (!ex->response && !ex->stream_head && !ex->force_closed) {
            ex->signal.expires_at(net::steady_timer::time_point::max());
            co_await ex->signal.async_wait(use_tuple);
        }
        slot.release(); // answered (or streaming): its request body is no longer held
        if (ex->force_closed) {
            co_return;
        }
        if (ex->response) {
            const bool keep = client_keep_alive && !stopping;
            bool ok = co_await write_response(stream, *ex->response, keep);
            conn->current.reset();
            if (!ok || !keep) {
                co_return;
            }
            continue;
        }

        // Streamed response (SSE): chunked, written as the handler produces it.
        const bool keep = client_keep_alive && !stopping;
        bhttp::response<bhttp::empty_body> head{static_cast<bhttp::status>(ex->stream_head->status),
                                                11};
        head.set(bhttp::field::server, "wopbridge");
        for (const auto& [k, v] : ex->stream_head->headers) {
            head.set(k, v);
        }
        head.keep_alive(keep);
        head.chunked(true);
        bhttp::response_serializer<bhttp::empty_body> sr{head};
        lowest.expires_after(opts.write_timeout);
        bool ok = !std::get<0>(co_await bhttp::async_write_header(stream, sr, use_tuple));
        while (ok) {
            while (ok && !ex->chunks.empty()) {
                std::string chunk = std::move(ex->chunks.front());
                ex->chunks.pop_front();
                lowest.expires_after(opts.write_timeout);
                auto [ec, n] =
                    co_await net::async_write(stream, bhttp::make_chunk(net::buffer(chunk)), use_tuple);
                ok = !ec;
            }
            if (!ok || ex->force_closed) {
                ok = false;
                break;
            }
            if (ex->stream_closed) {
                lowest.expires_after(opts.write_timeout);
                auto [ec, n] = co_await net::async_write(stream, bhttp::make_chunk_last(), use_tuple);
                ok = !ec;
                break;
            }
            ex->signal.expires_at(net::steady_timer::time_point::max());
            co_await ex->signal.async_wait(use_tuple);
        }
        lowest.expires_never();
        if (!ok || !ex->stream_closed) {
            ex->stream->fire_abort();
        }
        conn->current.reset();
        if (!ok || !keep) {
            co_return;
        }
    }
}

net::awaitable<void> server::impl::run_connection(tcp::socket sock) {
    auto strand = co_await net::this_coro::executor;
    auto conn = std::make_shared<connection_state>();
    conn->strand = strand;
    std::uint64_t id = 0;
    std::string remote;
    {
        boost::system::error_code ec;
        auto ep = sock.remote_endpoint(ec);
        if (!ec) {
            remote = ep.address().to_string();
        }
    }
    {
        std::lock_guard lock(conns_mu);
        // One address cannot hold every connection (or, through them, every in-flight slot).
        if (stopping || static_cast<int>(conns.size()) >= opts.max_connections ||
            per_address[remote] >= std::max(1, opts.max_connections_per_address)) {
            if (per_address[remote] == 0) {
                per_address.erase(remote);
            }
            boost::system::error_code ec;
            sock.close(ec);
            co_return;
        }
        ++per_address[remote];
        id = next_conn++;
        conns.emplace(id, conn);
    }
    beast::flat_buffer buffer;
    bool lingering_close = false;
    if (tls) {
        beast::ssl_stream<beast::tcp_stream> stream(beast::tcp_stream(std::move(sock)), *tls);
        conn->cancel_io = [&stream] { beast::get_lowest_layer(stream).cancel(); };
        beast::get_lowest_layer(stream).expires_after(opts.header_timeout);
        auto [ec] = co_await stream.async_handshake(ssl::stream_base::server, use_tuple);
        if (!ec) {
            co_await serve_requests(stream, buffer, conn, remote, lingering_close);
            beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(2));
            co_await stream.async_shutdown(use_tuple);
        }
        conn->cancel_io = nullptr;
        boost::system::error_code ignored;
        beast::get_lowest_layer(stream).socket().close(ignored);
    } else {
        beast::tcp_stream stream(std::move(sock));
        conn->cancel_io = [&stream] { stream.cancel(); };
        co_await serve_requests(stream, buffer, conn, remote, lingering_close);
        boost::system::error_code ignored;
        stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
        if (lingering_close) {
            // Let the client read the error before the close resets the connection: drain what
            // it still sends, for a bounded time.
            stream.expires_after(std::chrono::seconds(2));
            std::size_t drained = 0;
            std::vector<char> scratch(16384);
            while (drained < 8 * 1024 * 1024) {
                auto [ec, n] = co_await stream.async_read_some(net::buffer(scratch), use_tuple);
                if (ec) {
                    break;
                }
                drained += n;
            }
        }
        conn->cancel_io = nullptr;
        stream.socket().close(ignored);
    }
    {
        std::lock_guard lock(conns_mu);
        conns.erase(id);
        if (--per_address[remote] <= 0) {
            per_address.erase(remote);
        }
    }
    conns_cv.notify_all();
}

net::awaitable<void> server::impl::accept_loop() {
    for (;;) {
        auto [ec, sock] = co_await acceptor.async_accept(net::make_strand(ioc), use_tuple);
        if (ec) {
            if (!acceptor.is_open() || stopping) {
                break;
            }
            continue;
        }
        auto ex = sock.get_executor();
        net::co_spawn(ex, run_connection(std::move(sock)), net::detached);
    }
    {
        std::lock_guard lock(conns_mu);
        accepting = false;
    }
    conns_cv.notify_all();
}

server::server(server_options opts) : impl_(std::make_shared<impl>(std::move(opts))) {}

server::~server() { stop(std::chrono::milliseconds(0)); }

task_scheduler& server::scheduler() noexcept { return impl_->scheduler; }

std::uint16_t server::port() const noexcept { return impl_->bound_port; }

result<void> server::start(request_handler& handler) {
    auto& s = *impl_;
    if (s.started.exchange(true)) {
        return make_error_code(errc::conflict);
    }
    s.handler = &handler;
    boost::system::error_code ec;
    auto address = net::ip::make_address(s.opts.host, ec);
    if (ec) {
        return make_error_code(errc::invalid_argument);
    }
    if (s.opts.tls) {
        s.tls.emplace(ssl::context::tls_server);
        s.tls->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                           ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                           ssl::context::no_tlsv1_1);
        s.tls->use_certificate_chain_file(s.opts.tls->cert_file, ec);
        if (!ec) {
            s.tls->use_private_key_file(s.opts.tls->key_file, ssl::context::pem, ec);
        }
        if (ec) {
            return make_error_code(errc::invalid_argument);
        }
    }
    tcp::endpoint ep{address, s.opts.port};
    s.acceptor.open(ep.protocol(), ec);
    if (!ec) {
        s.acceptor.set_option(net::socket_base::reuse_address(true), ec);
    }
    if (!ec) {
        s.acceptor.bind(ep, ec);
    }
    if (!ec) {
        s.acceptor.listen(net::socket_base::max_listen_connections, ec);
    }
    if (ec) {
        return ec; // the system's reason (address in use, permission denied) is the operator's fix
    }
    s.bound_port = s.acceptor.local_endpoint().port();
    s.accepting = true;
    s.work.emplace(s.ioc.get_executor());
    net::co_spawn(s.acceptor.get_executor(), s.accept_loop(), net::detached);
    for (int i = 0; i < std::max(1, s.opts.threads); ++i) {
        s.threads.emplace_back([&s] { s.ioc.run(); });
    }
    return {};
}

void server::stop(std::chrono::milliseconds deadline) {
    auto& s = *impl_;
    if (s.stopped.exchange(true)) {
        return;
    }
    if (!s.started) {
        s.gate->shut();
        return;
    }
    s.stopping = true;
    net::post(s.acceptor.get_executor(), [&s] {
        boost::system::error_code ec;
        s.acceptor.close(ec);
    });
    if (s.handler) {
        s.handler->begin_shutdown();
    }
    auto close_where = [&s](bool only_idle) {
        std::lock_guard lock(s.conns_mu);
        for (auto& entry : s.conns) {
            net::post(entry.second->strand, [conn = entry.second, only_idle] {
                if (only_idle && !conn->idle) {
                    return;
                }
                if (conn->current) {
                    conn->current->force_closed = true;
                    conn->current->wake();
                }
                if (conn->cancel_io) {
                    conn->cancel_io();
                }
            });
        }
    };
    close_where(true);
    {
        std::unique_lock lock(s.conns_mu);
        auto until = std::chrono::steady_clock::now() + deadline;
        while (!(s.conns.empty() && !s.accepting)) {
            if (s.conns_cv.wait_until(lock, until) == std::cv_status::timeout) {
                break;
            }
            // Connections that finished a request meanwhile may now be idle.
            lock.unlock();
            close_where(true);
            lock.lock();
        }
    }
    close_where(false);
    {
        std::unique_lock lock(s.conns_mu);
        s.conns_cv.wait_for(lock, std::chrono::seconds(5),
                            [&s] { return s.conns.empty() && !s.accepting; });
    }
    s.scheduler.cancel_all();
    s.pool.join();
    s.work.reset();
    s.gate->shut();
    s.ioc.stop();
    for (auto& t : s.threads) {
        if (t.joinable()) {
            t.join();
        }
    }
}

} // namespace wopbridge::http
