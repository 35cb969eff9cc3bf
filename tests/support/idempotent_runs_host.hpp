#pragma once
// A real HTTP upstream run host for process-level fault tests: POST /v1/runs honours
// Idempotency-Key (the first request of a key creates the run, later ones return it), and a policy
// decides, per request, whether to fail it (5xx, 429 + Retry-After), hold it (answer late), or
// accept it. Every request is recorded with its arrival time. It can be stopped ("down") and brought
// back on the same port.

#include "support/http_test_server.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace wopbridge::testing {

struct runs_host_call {
    std::string idempotency_key;
    std::string workflow_id;
    int nth_for_key = 0;                         // 1 for the first request of its key
    std::chrono::system_clock::time_point at;    // arrival (wall clock)
};

class idempotent_runs_host {
public:
    // Returns an answer to send instead of the normal one (nullopt = normal). A returned response
    // with status 0 means "create or replay the run as normal, but answer after response.delay".
    using policy = std::function<std::optional<http_response>(const runs_host_call&)>;

    explicit idempotent_runs_host(policy p = {});
    ~idempotent_runs_host();

    std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }
    std::uint16_t port() const noexcept { return port_; }
    void set_policy(policy p);

    void go_down();  // stop listening: connections are refused
    void come_up();  // listen again on the same port

    std::vector<runs_host_call> calls() const;
    std::vector<runs_host_call> calls_for(const std::string& key) const;
    int runs_created() const;
    std::map<std::string, std::string> runs_by_key() const;

private:
    http_response handle(const http_request& req);

    mutable std::mutex mu_;
    policy policy_;
    std::vector<runs_host_call> calls_;
    std::map<std::string, std::string> runs_by_key_;
    int next_ = 1;
    std::uint16_t port_ = 0;
    std::unique_ptr<http_test_server> server_;
};

} // namespace wopbridge::testing
