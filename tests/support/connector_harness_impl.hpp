#pragma once
// The harness's host side, shared by its translation units: the fake host's state
// (connector_harness::impl) and the wb_host_api functions a module calls
// (connector_harness_host_api.cpp).

#include "support/connector_harness.hpp"

#include "core/blob_store.hpp"
#include "support/temp_dir.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

namespace wopbridge::testing {
namespace harness_detail {

inline std::string to_string(wb_str s) {
    return s.size == 0 ? std::string{} : std::string(s.data, s.size);
}

inline wb_str as_wb(std::string_view s) {
    return wb_str{s.data(), s.size()};
}

inline std::string lower(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

inline bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && lower(a) == lower(b);
}

inline const char* level_name(wb_log_level level) {
    switch (level) {
    case WB_LOG_DEBUG:
        return "debug";
    case WB_LOG_INFO:
        return "info";
    case WB_LOG_WARN:
        return "warn";
    case WB_LOG_ERROR:
        return "error";
    }
    return "unknown";
}

// Copies the module's NUL-terminated error buffer, tolerating an unterminated one.
inline std::string from_buf(const char* buf, std::size_t size) {
    return std::string(buf, ::strnlen(buf, size));
}

inline std::int64_t system_now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// The wb_host_api functions (plain function pointers; C linkage is not required).
void host_log(wb_host* h, wb_log_level level, wb_str message);
std::int64_t host_now_ms(wb_host* h);
wb_status host_random_bytes(wb_host*, std::uint8_t* out, std::size_t n);
wb_status host_submit(wb_host* h, const wb_inbound_event* event, wb_submit_done_fn done,
                      void* user);
wb_status host_respond(wb_host* h, wb_request_ctx* ctx, const wb_http_response* response);
wb_status host_register_subscription(wb_host* h, const wb_subscription_request* request,
                                     char* error_buf, std::size_t error_buf_size);
wb_status host_post_task(wb_host* h, std::int64_t delay_ms, wb_task_fn fn, void* user);
int host_has_capacity(wb_host* h);
wb_status host_store_attachment(wb_host* h, wb_str bytes, char* ref_buf, std::size_t ref_buf_size);

} // namespace harness_detail

struct pending_reply::state {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    module_reply reply;
};

struct connector_harness::impl {
    void* dl = nullptr;
    const wb_connector_descriptor* desc = nullptr;
    wb_host_api api{};
    wb_connector* conn = nullptr;
    bool started = false;

    std::atomic<std::int64_t> now{harness_detail::system_now_ms()};
    std::atomic<bool> capacity{true};
    temp_dir attachments_root;
    blob_store blobs{(attachments_root.path() / "attachments").string()};

    mutable std::mutex mu;
    std::condition_variable submits_cv;
    submit_mode mode = submit_mode::accept;
    std::string refuse_reason;
    int retry_after = 0;
    std::unordered_map<std::string, std::string> dedup; // sub id + '\0' + provider id -> run id
    int run_counter = 0;
    std::vector<recorded_submit> submits;
    std::set<std::string> subscribed;
    std::vector<std::string> logs;
    std::vector<std::string> violations;
    std::vector<std::string> registered;
    int uncommitted = 0; // submits whose outcome was not yet delivered
    bool paused = false;
    std::vector<std::function<void()>> deferred;
    std::map<wb_request_ctx*, std::shared_ptr<pending_reply::state>> in_flight;

    // Worker thread: post_task and submit completions.
    std::mutex work_mu;
    std::condition_variable work_cv;
    std::multimap<std::chrono::steady_clock::time_point, std::function<void()>> tasks;
    bool flush_all = false; // run delayed tasks now (stop/shutdown)
    bool quit = false;
    int running = 0;
    std::thread worker;

    impl() {
        api.struct_size = sizeof(wb_host_api);
        api.abi_major = WOPBRIDGE_ABI_MAJOR;
        api.abi_minor = WOPBRIDGE_ABI_MINOR;
        api.log = &harness_detail::host_log;
        api.now_ms = &harness_detail::host_now_ms;
        api.random_bytes = &harness_detail::host_random_bytes;
        api.submit = &harness_detail::host_submit;
        api.respond = &harness_detail::host_respond;
        api.register_subscription = &harness_detail::host_register_subscription;
        api.post_task = &harness_detail::host_post_task;
        api.has_capacity = &harness_detail::host_has_capacity;
        api.store_attachment = &harness_detail::host_store_attachment;
        worker = std::thread([this] { work_loop(); });
    }

    ~impl() {
        {
            std::lock_guard lock(work_mu);
            quit = true;
            flush_all = true;
        }
        work_cv.notify_all();
        worker.join();
    }

    wb_host* host() { return reinterpret_cast<wb_host*>(this); }
    static impl& self(wb_host* h) { return *reinterpret_cast<impl*>(h); }

    void violation(std::string what) {
        std::lock_guard lock(mu);
        violations.push_back(std::move(what));
    }

    void post(std::chrono::milliseconds delay, std::function<void()> fn) {
        {
            std::lock_guard lock(work_mu);
            tasks.emplace(std::chrono::steady_clock::now() + delay, std::move(fn));
        }
        work_cv.notify_all();
    }

    void work_loop() {
        std::unique_lock lock(work_mu);
        for (;;) {
            if (tasks.empty()) {
                if (quit) {
                    return;
                }
                work_cv.wait(lock);
                continue;
            }
            auto first = tasks.begin();
            if (!flush_all && first->first > std::chrono::steady_clock::now()) {
                work_cv.wait_until(lock, first->first);
                continue;
            }
            auto fn = std::move(first->second);
            tasks.erase(first);
            ++running;
            lock.unlock();
            fn();
            lock.lock();
            --running;
            work_cv.notify_all();
        }
    }

    // Runs every queued task (delayed ones too) and waits until the worker is idle.
    void drain() {
        std::unique_lock lock(work_mu);
        flush_all = true;
        work_cv.notify_all();
        work_cv.wait(lock, [&] { return tasks.empty() && running == 0; });
        flush_all = false;
    }
};

} // namespace wopbridge::testing
