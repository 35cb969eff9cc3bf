// The request loop over TLS connections (one of two instantiations; see serve_requests.hpp).

#include "http/serve_requests.hpp"

namespace wopbridge::http {

template net::awaitable<void> server::impl::serve_requests<beast::ssl_stream<beast::tcp_stream>>(
    beast::ssl_stream<beast::tcp_stream>& stream, beast::flat_buffer& buffer,
    const std::shared_ptr<server_detail::connection_state>& conn, std::string remote,
    bool& lingering_close);

} // namespace wopbridge::http
