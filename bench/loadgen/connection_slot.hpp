#pragma once
// One connection slot of the load generator: its socket, where its current request stands, and
// the reader of its response.

#include "response_parser.hpp"

#include <cstddef>
#include <cstdint>

namespace wopbridge::bench {

struct conn {
    enum class st { closed, connecting, idle, busy };
    int fd = -1;
    st state = st::closed;
    bool in_idle_stack = false;
    bool resend = false;        // connecting again to resend the current request
    bool want_out = false;      // EPOLLOUT registered
    bool got_bytes = false;     // a byte of the current response arrived
    bool retried = false;       // the current request was resent once already
    std::uint64_t served = 0;   // responses on this socket
    std::size_t req = 0;        // global request index
    std::uint64_t t0_ns = 0;    // latency origin: scheduled (open) or written (closed), since start
    std::uint64_t since_ns = 0; // request written / connect started (for the timeout)
    std::size_t woff = 0;
    int connect_err = 0;
    response_parser parser;
};

} // namespace wopbridge::bench
