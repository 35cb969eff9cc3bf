#pragma once
// The connector host's insides, shared by its translation units (and nothing else):
//   connector_host_runtime.cpp    threads (timer, workers), logging, small helpers
//   connector_host_abi.cpp        the wb_host_api table modules call back into
//   connector_host_lifecycle.cpp  instances: create/start, subscribe/unsubscribe, stop/destroy
//   connector_host.cpp            ingest routing (requests, deadlines) and the public queries

#include "plugins/connector_host.hpp"
#include "plugins/settings_schemas.hpp"

#include "core/blob_store.hpp"
#include "core/thread_annotations.hpp"

#include "wopbridge/connector.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

namespace wopbridge::plugin_detail {
struct instance;

// What a wb_host* points at: which host and which instance a callback comes from. (The C type
// stays opaque; defining it here could clash with another definition in the same program.)
struct host_context {
    connector_host::impl* owner = nullptr;
    instance* inst = nullptr;
};

inline host_context* context_of(wb_host* h) noexcept {
    return reinterpret_cast<host_context*>(h);
}

enum class phase { created, running, stopping, stopped, destroyed };

struct sub_entry {
    std::string source;
    std::string workflow_id;
    std::string settings_json;        // plain: what the module was given
    std::string stored_settings_json; // as the store keeps it (secrets sealed)
    // The same subscription for the module: sealing the same settings again (another nonce)
    // changes only the stored form.
    bool operator==(const sub_entry& o) const {
        return source == o.source && workflow_id == o.workflow_id &&
               settings_json == o.settings_json;
    }
    bool same_stored(const sub_entry& o) const {
        return source == o.source && workflow_id == o.workflow_id &&
               stored_settings_json == o.stored_settings_json;
    }
};

struct instance {
    std::string name;
    loaded_module module;
    settings_schemas schemas;
    std::string settings_json;
    host_context host_ctx;
    wb_connector* conn = nullptr;

    wopbridge::mutex control_mu; // the ABI's control thread: one lifecycle call at a time
    std::atomic<phase> state{phase::created};

    wopbridge::mutex mu;
    std::condition_variable cv;
    std::map<std::string, sub_entry> subs GUARDED_BY(mu);
    int inflight_submits GUARDED_BY(mu) = 0;
    int inflight_tasks GUARDED_BY(mu) = 0; // queued or running
    // Call slots taken: on_http_request in progress or draining the queue.
    int active_calls GUARDED_BY(mu) = 0;
    std::deque<std::function<void()>> queued_calls GUARDED_BY(mu); // waiting for a call slot

    std::atomic<std::uint64_t> requests{0};
    std::atomic<std::uint64_t> responses{0};
    std::atomic<std::uint64_t> timeouts{0};
    std::atomic<std::uint64_t> busy{0};
    std::atomic<std::uint64_t> submits{0};
    std::atomic<std::uint64_t> errors{0};

    // `counter`: inflight_submits or inflight_tasks (the analysis does not follow the pointer).
    void add(int instance::*counter, int delta) EXCLUDES(mu) {
        wopbridge::lock_guard lk(mu);
        this->*counter += delta;
        if (delta < 0) {
            cv.notify_all();
        }
    }
    bool subscribed(const std::string& id) EXCLUDES(mu) {
        wopbridge::lock_guard lk(mu);
        return subs.count(id) != 0;
    }
};

struct pending_request {
    instance* inst = nullptr;
    ingest_reply_callback reply;
};

struct work_item {
    instance* inst = nullptr; // set for module tasks (drained at stop)
    std::function<void()> fn;
};

inline std::string_view view(wb_str s) noexcept {
    return s.data == nullptr ? std::string_view{} : std::string_view(s.data, s.size);
}

inline wb_str str(std::string_view s) noexcept {
    return wb_str{s.data(), s.size()};
}

std::string_view source_name(source_kind s) noexcept;
std::optional<source_kind> source_from(std::string_view s) noexcept;
void copy_error(std::string_view msg, char* buf, std::size_t size) noexcept;
// The HTTP API's closed error envelope {error, message}, so host-made answers look like the rest.
std::string error_body(std::string_view code, std::string_view message);
bool token_char(char c) noexcept;
bool header_value_ok(std::string_view v) noexcept;
std::string lower(std::string_view s);
// A reason a module wrote may quote the settings it was given: their secrets never leave.
module_error redacted(module_error e, const std::string& settings_json,
                      const secret_fields& secrets);
connector_stats stats_of(const instance& inst);

} // namespace wopbridge::plugin_detail

namespace wopbridge {

struct connector_host::impl {
    using instance = plugin_detail::instance;
    using sub_entry = plugin_detail::sub_entry;
    using pending_request = plugin_detail::pending_request;
    using work_item = plugin_detail::work_item;

    impl(connector_host_options o, submit_sink& s, clock_source& c, random_source& r);
    ~impl();

    connector_host_options options;
    submit_sink& sink;
    clock_source& clock;
    random_source& random GUARDED_BY(random_mu); // random sources need not be thread-safe
    wopbridge::mutex random_mu;
    std::unique_ptr<blob_store> blobs; // null: no attachment directory configured
    wb_host_api api{};

    mutable wopbridge::shared_mutex inst_mu;
    std::vector<std::shared_ptr<instance>> instances GUARDED_BY(inst_mu); // in creation order
    // Kept until the host goes: late callbacks stay safe.
    std::vector<std::shared_ptr<instance>> retired GUARDED_BY(inst_mu);

    wopbridge::mutex req_mu;
    std::unordered_map<std::uint64_t, pending_request> pending GUARDED_BY(req_mu);
    std::uint64_t next_request GUARDED_BY(req_mu) = 1;

    wopbridge::mutex timer_mu;
    std::condition_variable timer_cv;
    std::multimap<std::pair<millis, std::uint64_t>, work_item> timers GUARDED_BY(timer_mu);
    std::uint64_t timer_seq GUARDED_BY(timer_mu) = 0;
    bool threads_stopping GUARDED_BY(timer_mu) = false;
    std::thread timer_thread;

    wopbridge::mutex work_mu;
    std::condition_variable work_cv;
    std::deque<work_item> work GUARDED_BY(work_mu);
    bool workers_stopping GUARDED_BY(work_mu) = false;
    std::vector<std::thread> workers;

    // ---- threads -------------------------------------------------------------------------------

    void timer_loop() EXCLUDES(timer_mu);
    void worker_loop() EXCLUDES(work_mu);
    void enqueue(work_item item) EXCLUDES(work_mu);
    void schedule(millis due, work_item item) EXCLUDES(timer_mu);
    static void run_guarded(const std::function<void()>& fn) noexcept;

    // ---- logging -------------------------------------------------------------------------------

    // One log shape for the host and its modules: {"ts","level","event",...fields,"connector"}.
    // A module that logs a JSON object with an "event" gives its fields (the host's ts, level
    // and connector win); any other message is {"event":"connector.log","msg":…}.
    void emit_log(std::string_view level, std::string_view connector, std::string_view msg);
    void host_log(instance& inst, std::string_view level, std::string_view msg);

    // ---- requests ------------------------------------------------------------------------------

    std::optional<pending_request> take_pending(std::uint64_t id) EXCLUDES(req_mu);
    static void deliver(pending_request& p, ingest_reply reply) noexcept;

    // One on_http_request call, on the calling thread, guarded (queued requests come here too).
    void call(instance& inst, const std::string& sub_id, const inbound_http_request& req,
              std::uint64_t id);

    void expire(std::uint64_t id);

    // Answers every request of `inst` still open (used when it stops).
    void answer_leftovers(instance* inst) EXCLUDES(req_mu);

    // ---- the C API table -----------------------------------------------------------------------

    static instance* inst_of(wb_host* h) noexcept;
    static void api_log(wb_host* h, wb_log_level level, wb_str message) noexcept;
    static std::int64_t api_now_ms(wb_host* h) noexcept;
    static wb_status api_random_bytes(wb_host* h, std::uint8_t* out, std::size_t n) noexcept;
    static wb_status api_submit(wb_host* h, const wb_inbound_event* ev, wb_submit_done_fn done,
                                void* user) noexcept;

    wb_status submit(instance& inst, const wb_inbound_event& ev, wb_submit_done_fn done,
                     void* user);

    void call_done(instance& inst, const submit_result& r, wb_submit_done_fn done, void* user);
    static wb_status api_respond(wb_host* h, wb_request_ctx* ctx,
                                 const wb_http_response* resp) noexcept;

    wb_status respond(instance& inst, std::uint64_t id, const wb_http_response* resp);
    static wb_status api_register_subscription(wb_host* h, const wb_subscription_request* req,
                                               char* error_buf,
                                               std::size_t error_buf_size) noexcept;

    wb_status register_subscription(instance& inst, const wb_subscription_request& req,
                                    char* error_buf, std::size_t error_buf_size);

    static wb_status api_post_task(wb_host* h, std::int64_t delay_ms, wb_task_fn fn,
                                   void* user) noexcept;

    static int api_has_capacity(wb_host* h) noexcept;
    static wb_status api_store_attachment(wb_host* h, wb_str bytes, char* ref_buf,
                                          std::size_t ref_buf_size) noexcept;

    // ---- lifecycle -----------------------------------------------------------------------------

    std::shared_ptr<instance> find(const std::string& name) const EXCLUDES(inst_mu);
    module_error fail(instance& inst, std::string_view what);
    // Under inst.control_mu (one lifecycle call at a time); takes inst.mu itself.
    module_result<void> subscribe_locked(instance& inst, const std::string& id,
                                         const sub_entry& entry) REQUIRES(inst.control_mu);

    // An instance abandoned at stop (work still in flight): its threads may still run module code,
    // so the module stays mapped, and its connector object is never destroyed. Both stay reachable
    // from this process-lifetime list, so a leak checker reports kept memory as kept, not lost.
    static void keep_for_process_life(std::shared_ptr<void> module, wb_connector* conn);
    module_result<void> stop_instance(instance& inst);
};

} // namespace wopbridge
