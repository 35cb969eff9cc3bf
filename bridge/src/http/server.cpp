// The listener and the public API of the HTTP server. Asio/Beast stay in the server's files
// (server*.cpp, server_impl.hpp, server_sinks.hpp): sessions are C++20 coroutines on a
// per-connection strand; handler replies arrive from any thread through response_sink and are
// re-posted onto that strand; a wake-up timer lets the session coroutine wait for them without
// holding a thread.

#include "http/server.hpp"
#include "core/thread_name.hpp"

#include "http/server_impl.hpp"

namespace wopbridge::http {

using namespace server_detail;

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
        s.threads.emplace_back([&s] {
            name_this_thread("wb-http-io");
            s.ioc.run();
        });
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
