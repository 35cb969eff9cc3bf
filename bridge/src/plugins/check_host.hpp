#pragma once
// The checking host: a real wb_host_api table that records what a module does with it and flags
// what the ABI forbids, so the phases can judge a module by its calls, not only its answers.

#include "plugins/connector_check.hpp"

#include "wopbridge/connector.h"

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace wopbridge::check_kit {

// Where the kit pretends the bridge is reachable: ingest URLs a module sees are under it.
inline constexpr std::string_view public_base = "https://bridge.example.com";

wb_str str(std::string_view s) noexcept;
std::string view(wb_str s);
std::int64_t wall_ms();

struct submit_record {
    std::string subscription_id;
    std::string provider_event_id;
    bool verified = false;
    wb_submit_status outcome = WB_SUBMIT_REFUSED;
};

struct http_reply {
    bool responded = false;
    int status = 0;
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
    std::int64_t elapsed_ms = 0;
    std::size_t submits = 0;           // submits made while the request was open
    bool answered_before_outcome = false;

    bool has_header(std::string_view name) const;
};

// Outcomes are delivered late on a worker thread, so answering before the commit shows.
class checking_host {
  public:
    explicit checking_host(int outcome_delay_ms);
    ~checking_host();

    checking_host(const checking_host&) = delete;
    checking_host& operator=(const checking_host&) = delete;

    const wb_host_api* api() const noexcept { return &api_; }
    wb_host* handle() noexcept { return reinterpret_cast<wb_host*>(this); }

    void allow_subscription(const std::string& id);
    void forget_subscription(const std::string& id);
    // Every following submit is refused with `reason` (empty = back to accept/dedup).
    void script_refusal(std::string reason, int retry_after);

    http_reply send(const wb_connector_descriptor* d, wb_connector* c, const probe_request& p,
                    const std::string& subscription_id, std::int64_t received_at_ms,
                    std::chrono::milliseconds timeout);

    // What stop() promises: tasks still queued run now, outcomes are delivered, then idle.
    bool drain(std::chrono::milliseconds timeout);

    void mark_destroyed();

    std::vector<submit_record> submits() const;
    std::vector<std::string> violations() const;
    std::vector<std::string> error_logs() const;

  private:
    using steady = std::chrono::steady_clock;

    struct request_state {
        bool responded = false;
        bool early = false;
        int pending_outcomes = 0;
        std::size_t submits = 0;
        steady::time_point started = steady::now();
        http_reply reply;
    };

    struct job {
        std::function<void()> fn;
    };

    static checking_host* self(wb_host* h) noexcept { return reinterpret_cast<checking_host*>(h); }

    static bool fill_random(std::uint8_t* out, std::size_t n);

    void violation(std::string what);
    void note_call(const char* what);
    void on_log(wb_log_level level, const std::string& message);
    void schedule(std::int64_t delay_ms, std::function<void()> fn);
    wb_status on_submit(const wb_inbound_event* e, wb_submit_done_fn done, void* user);
    wb_status on_respond(wb_request_ctx* ctx, const wb_http_response* r);
    wb_status on_post_task(std::int64_t delay_ms, wb_task_fn fn, void* user);
    wb_status on_store_attachment(const std::string& bytes, char* buf, std::size_t size);
    void run_worker();

    wb_host_api api_{};
    const int outcome_delay_;
    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::thread worker_;
    std::map<std::pair<steady::time_point, std::uint64_t>, job> jobs_;
    std::uint64_t seq_ = 0;
    bool running_ = false;
    bool flush_ = false;
    bool stopping_ = false;
    bool destroyed_ = false;
    int outstanding_ = 0;
    std::set<std::string> subscribed_;
    std::map<std::pair<std::string, std::string>, std::string> dedup_;
    std::string refusal_;
    int retry_after_ = 0;
    std::map<wb_request_ctx*, std::unique_ptr<request_state>> requests_;
    request_state* current_ = nullptr;
    std::vector<submit_record> submits_;
    std::vector<std::string> violations_;
    std::vector<std::string> error_logs_;
    std::filesystem::path attachment_dir_;
};

} // namespace wopbridge::check_kit
