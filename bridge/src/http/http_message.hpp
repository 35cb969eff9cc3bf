#pragma once
// The HTTP layer's own neutral message types. The router and every handler work on these, so they
// compile without Asio/Beast and are unit-testable without sockets; only the server
// (serve_requests.hpp) converts them to and from Beast messages.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace wopbridge::http {

using header_list = std::vector<std::pair<std::string, std::string>>;

struct http_request {
    std::string method;   // upper-case token, e.g. "GET"
    std::string target;   // path + query as received
    std::string path;     // percent-encoded path, without the query
    std::string query;    // raw query string without '?'
    header_list headers;  // names lower-case
    std::string body;
    std::string remote;   // the client's address: the peer's, or what a trusted proxy said
    std::string public_base; // "https://host" a trusted proxy was called at; "" = not forwarded

    // First header with this (lower-case) name.
    std::optional<std::string_view> header(std::string_view name) const;
    // Percent-decoded query parameter; nullopt when absent.
    std::optional<std::string> query_param(std::string_view name) const;

    // Splits `target` into path and query (and lower-cases header names).
    static http_request make(std::string method, std::string target, header_list headers,
                             std::string body, std::string remote = {});
};

struct http_response {
    int status = 200;
    header_list headers;  // content-type included here; the server adds content-length/date
    std::string body;

    std::optional<std::string_view> header(std::string_view name) const; // case-insensitive
    void set_header(std::string name, std::string value);                // replaces

    static http_response json(int status, std::string body);
    static http_response empty(int status);
};

// A streamed response (Server-Sent Events). Every member may be called from any thread.
class response_stream {
public:
    virtual ~response_stream() = default;
    // Queues bytes for the client, in call order.
    virtual void write(std::string chunk) = 0;
    // Ends the response after the queued bytes.
    virtual void close() = 0;
    // Called once if the stream ends without close(): the peer went away or the server is stopping.
    // Called at once when that already happened.
    virtual void on_abort(std::function<void()> fn) = 0;
};

// The reply channel of one request. Exactly one of send()/open_stream() is called, once, from any
// thread; the server moves the work onto the connection's own executor.
class response_sink {
public:
    virtual ~response_sink() = default;
    virtual void send(http_response res) = 0;
    // Sends `head` (status + headers; its body is ignored) and returns the stream for the body.
    virtual std::shared_ptr<response_stream> open_stream(http_response head) = 0;
};

// Where handlers run blocking work (store reads) and timers, so no I/O thread ever blocks.
// The server implements it with a worker pool; unit tests with a manual queue.
class task_scheduler {
public:
    virtual ~task_scheduler() = default;
    // Runs fn on a worker thread.
    virtual void post(std::function<void()> fn) = 0;
    // Runs fn on a worker thread after `delay`; returns a token for cancel().
    virtual std::uint64_t after(std::chrono::milliseconds delay, std::function<void()> fn) = 0;
    // fn does not run when it has not started yet; unknown tokens are ignored.
    virtual void cancel(std::uint64_t token) = 0;
};

// What the server calls. handle() runs on an I/O thread and must not block: handlers move blocking
// work to the task_scheduler.
class request_handler {
public:
    virtual ~request_handler() = default;
    // The largest body accepted for this route (413 past it); consulted after the header is read.
    virtual std::size_t body_limit(std::string_view method, std::string_view path) const = 0;
    // Not an inbound trigger route (health, readiness, management): may use the server's reserve
    // of in-flight slots.
    virtual bool is_control_route(std::string_view /*method*/, std::string_view /*path*/) const {
        return false;
    }
    virtual void handle(http_request req, std::shared_ptr<response_sink> sink) = 0;
    // The server stops: pending long polls should answer now and streams should end.
    virtual void begin_shutdown() = 0;
};

} // namespace wopbridge::http
