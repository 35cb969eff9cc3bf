#pragma once
// The load driver: raw non-blocking sockets on epoll, HTTP/1.1 keep-alive, one request in flight
// per connection (no pipelining, like wrk), pre-serialised requests (request_set), and a response
// parser that reads only the status line, Content-Length / chunked framing and Connection: close.
//
// Open model (rate > 0): request i is due at start + i/rate and is written at that time whether or
// not earlier requests were answered; its latency is measured from that *scheduled* time, so a
// server that stalls is charged for every request that waited behind the stall (no coordinated
// omission, the wrk2 method). A request due while every connection is busy waits in the
// generator, and that wait counts. The schedule is a timerfd (microsecond precision).
//
// Closed model (rate == 0): every connection sends its next request as soon as the previous one
// was answered, for `seconds` (what wrk does); latency is from the write. Only for finding the
// max throughput quickly: its latency figures have coordinated omission by construction.
//
// With `threads` > 1, thread k owns connections/threads of the connections and the requests
// i ≡ k (mod threads) of the one schedule; the results are merged.

#include "latency_histogram.hpp"
#include "request_set.hpp"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>

namespace wopbridge::bench {

struct load_options {
    target to;
    double rate = 1000;    // requests per second; 0 = closed loop
    std::size_t count = 0; // open loop: requests to send (from the request_set, in order)
    double seconds = 5;    // closed loop: how long
    bool cycle = false;    // closed loop: start over when the set is used up (ids repeat)
    int connections = 64;  // keep-alive connections at most (opened as needed)
    int threads = 1;
    long timeout_ms = 10000; // per request
    bool capture_bodies = false;
};

struct load_result {
    latency_histogram latency; // every 2xx answer, in us (open: from its scheduled time)
    std::uint64_t sent = 0;
    std::uint64_t ok = 0;     // 2xx
    std::uint64_t errors = 0; // non-2xx or transport error
    std::uint64_t status_5xx = 0;
    std::uint64_t transport_errors = 0;
    std::uint64_t reconnects = 0; // connections the server closed that we opened again
    double elapsed_s = 0;         // open: first scheduled send to last answer; closed: `seconds`
    std::uint64_t max_launch_lag_us = 0; // how late the generator's own timer fired (open loop)
    bool cycled = false;    // closed loop ran out of distinct requests and repeated them
    double end_wall_ms = 0; // wall clock (ms since the epoch) when the load ended

    // Adds one thread's share: counts add up, times and lags take the larger.
    void merge(const load_result& r) {
        latency.merge(r.latency);
        sent += r.sent;
        ok += r.ok;
        errors += r.errors;
        status_5xx += r.status_5xx;
        transport_errors += r.transport_errors;
        reconnects += r.reconnects;
        elapsed_s = std::max(elapsed_s, r.elapsed_s);
        max_launch_lag_us = std::max(max_launch_lag_us, r.max_launch_lag_us);
        cycled = cycled || r.cycled;
    }
};

// Called (after the run, from the calling thread) for each 2xx answer with the request index, its
// scheduled wall-clock time (ms since the epoch, fractional) and the response body (first 1 KiB),
// when load_options::capture_bodies is set.
using response_observer =
    std::function<void(std::size_t index, double scheduled_wall_ms, const std::string& body)>;

load_result run_load(const load_options& opts, const request_set& requests,
                     const response_observer& observe = {});

} // namespace wopbridge::bench
