#pragma once
// A small libcurl (easy interface) client for integration tests: one call in, status + headers +
// body out. Streaming calls (SSE) hand the body over as it arrives and stop when told to.

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace wopbridge::testing {
// Inline namespace: connector_harness.hpp has another testing::http_reply; this keeps the two
// apart at link time (no TU includes both).
inline namespace http_client {

using http_headers = std::vector<std::pair<std::string, std::string>>;

struct http_call {
    std::string method = "GET";
    std::string url;
    http_headers headers;
    std::string body;
    long timeout_ms = 20000;
    std::string local_address; // a loopback address to connect from ("127.0.0.7"): another peer
    std::string ca_file;       // a certificate to trust for https (a test's self-signed one)
};

struct http_reply {
    long status = 0;          // 0 when the transfer failed (see error)
    http_headers headers;     // names lower-case, in order
    std::string body;
    std::string error;        // curl's message on failure
    double seconds = 0;       // total transfer time

    std::optional<std::string> header(std::string_view name) const;
};

http_reply perform(const http_call& call);

// Streams the body: `on_data` sees the whole body received so far and returns true to stop early.
// Returns when it stopped, the server closed the response, or the timeout passed.
http_reply perform_streaming(const http_call& call,
                             const std::function<bool(const std::string&)>& on_data);

} // namespace http_client
} // namespace wopbridge::testing
