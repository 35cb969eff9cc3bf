#pragma once
// A small real HTTP/1.1 server for tests (POSIX sockets, 127.0.0.1, port 0, one thread per
// connection, Connection: close), and on top of it a fake OpenWOP runs host for the upstream run
// starter: POST /v1/runs honours Idempotency-Key (same key -> same runId) and can be scripted to
// answer 503 + Retry-After, 400, or to answer slowly.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace wopbridge::testing {

struct http_request {
    std::string method;
    std::string target;
    std::map<std::string, std::string> headers; // lower-case names
    std::string body;
    std::string header(const std::string& name) const {
        auto it = headers.find(name);
        return it == headers.end() ? std::string() : it->second;
    }
};

struct http_response {
    int status = 200;
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
    std::chrono::milliseconds delay{0}; // answer only after this long (or when the server stops)
};

class http_test_server {
public:
    using handler = std::function<http_response(const http_request&)>;
    // port 0 = an ephemeral port; a fixed port lets a test bring a "down" upstream back up.
    explicit http_test_server(handler h, std::uint16_t port = 0);
    ~http_test_server();
    http_test_server(const http_test_server&) = delete;
    http_test_server& operator=(const http_test_server&) = delete;

    std::uint16_t port() const noexcept { return port_; }
    std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }
    std::vector<http_request> requests() const;
    void stop();

private:
    handler handler_;
    int listen_fd_ = -1;
    std::uint16_t port_ = 0;
    mutable std::mutex mu_;
    std::condition_variable cv_;
    bool stopping_ = false;
    std::vector<http_request> requests_;
    std::vector<std::thread> connections_;
    std::thread acceptor_;

    void accept_loop();
    void serve(int fd);
};

// The fake OpenWOP host: scripted answers first (in order), then 201 {"runId": …} keyed by
// Idempotency-Key.
class fake_runs_host {
public:
    fake_runs_host();
    std::string base_url() const { return server_.base_url(); }
    void script(http_response r);
    std::vector<http_request> requests() const { return server_.requests(); }
    int runs_created() const;

private:
    mutable std::mutex mu_;
    std::deque<http_response> script_;
    std::map<std::string, std::string> runs_by_key_;
    int next_ = 1;
    http_test_server server_; // last: stops before the state above is destroyed
};

} // namespace wopbridge::testing
