// A connection's life on its strand: admission (connection limits), the TLS handshake, the request
// loop (serve_requests.hpp, instantiated per stream type in serve_requests_*.cpp) and the lingering
// close after an error.

#include "http/server_impl.hpp"

namespace wopbridge::http {

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

} // namespace wopbridge::http
