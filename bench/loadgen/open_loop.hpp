#pragma once
// The open-model driver: request i is due at start + i/rate and is handed to libcurl at that time
// whether or not earlier requests have been answered. Its latency is measured from that *scheduled*
// time, so a server that stalls is charged for every request that waited behind the stall
// (no coordinated omission). One thread: libcurl's multi socket API on epoll, with timerfds for the
// schedule (microsecond precision) and for libcurl's own timeouts.

#include "latency_histogram.hpp"
#include "request_set.hpp"

#include <cstdint>
#include <functional>
#include <string>

namespace wopbridge::bench {

struct open_loop_options {
    std::string url;
    double rate = 1000;        // requests per second
    std::size_t count = 0;     // requests to send (from the request_set, in order)
    int connections = 64;      // keep-alive connections at most
    long timeout_ms = 10000;   // per request
};

struct open_loop_result {
    latency_histogram latency;   // every answered request, from its scheduled time, in us
    std::uint64_t sent = 0;
    std::uint64_t ok = 0;        // 2xx
    std::uint64_t errors = 0;    // non-2xx or transport error
    std::uint64_t status_5xx = 0;
    std::uint64_t transport_errors = 0;
    double elapsed_s = 0;        // first scheduled send to last answer
    std::uint64_t max_launch_lag_us = 0; // how late the generator itself handed a request to curl
};

// Called for each 2xx answer with the request index, its scheduled wall-clock time (ms since the
// epoch, fractional) and the response body (first 1 KiB).
using response_observer = std::function<void(std::size_t index, double scheduled_wall_ms,
                                             const std::string& body)>;

open_loop_result run_open_loop(const open_loop_options& opts, const request_set& requests,
                               const response_observer& observe = {});

} // namespace wopbridge::bench
