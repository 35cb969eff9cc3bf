#pragma once
// The Beast HTTP/1.1 server of `wopbridge serve`: acceptor, keep-alive sessions, TLS, timeouts,
// body limits, streamed responses, graceful stop. The only header of the HTTP layer that names the
// server; Asio/Beast stay inside server*.cpp and their internal headers.
//
// Use:
//   http::server srv(opts);
//   http::http_api api(api_opts, port, router, srv.scheduler());
//   srv.start(api);                 // binds; srv.port() is the bound port (port 0 supported)
//   ...
//   srv.stop(std::chrono::seconds(10));

#include "core/error.hpp"
#include "http/http_message.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace wopbridge::http {

struct tls_options {
    std::string cert_file; // PEM certificate chain
    std::string key_file;  // PEM private key
};

struct server_options {
    std::string host = "127.0.0.1";
    std::uint16_t port = 8080;          // 0 = any free port
    int threads = 2;                    // I/O threads
    int worker_threads = 4;             // blocking handler work (store reads, seams)
    std::optional<tls_options> tls;
    std::chrono::milliseconds header_timeout{10000}; // whole request header (slowloris)
    std::chrono::milliseconds body_timeout{30000};   // whole request body
    // Slow bodies (a slot held by a trickle): past `body_grace` a body must keep arriving at an
    // average of `min_body_bytes_per_second` since its header (0 = only body_timeout); else the
    // connection is closed, as at body_timeout.
    std::chrono::milliseconds body_grace{5000};
    std::size_t min_body_bytes_per_second = 1024;
    std::chrono::milliseconds idle_timeout{60000};   // keep-alive wait for the next request
    std::chrono::milliseconds write_timeout{30000};  // one response write
    std::size_t max_header_bytes = 16 * 1024;        // 431 past it
    int max_connections = 10000;                     // further connections are closed at once
    int max_connections_per_address = 512;           // from one peer address; more are closed
    // Requests read past their header and not yet answered (their bodies are held in memory).
    // Past it a request is answered 503 + Retry-After before its body is read, so memory stays
    // near max_in_flight_requests x the body limit whatever the offered load. Long polls count.
    int max_in_flight_requests = 1024;
    // Extra slots only control routes (health, readiness, management) may take, so a flood of
    // ingest requests never answers them 503.
    int reserved_in_flight_requests = 32;
    int overload_retry_after_s = 1;
};

class server {
public:
    explicit server(server_options opts);
    ~server(); // stop(0) when still running
    server(const server&) = delete;
    server& operator=(const server&) = delete;

    // Where handlers post blocking work and timers; valid from construction to destruction.
    task_scheduler& scheduler() noexcept;

    // Binds, listens and starts the threads. `handler` must outlive stop().
    // Errors: invalid_argument (bad address, TLS files unreadable), internal (bind/listen failed).
    result<void> start(request_handler& handler);
    std::uint16_t port() const noexcept; // the bound port, after start()

    // Graceful: stop accepting, let in-flight requests finish (their responses are sent), close idle
    // connections and streams, and return once every connection is gone or `deadline` passed (then
    // the rest are closed hard). Joins every thread. Idempotent.
    void stop(std::chrono::milliseconds deadline);

    struct impl;

private:
    std::shared_ptr<impl> impl_;
};

} // namespace wopbridge::http
