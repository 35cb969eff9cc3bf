#pragma once
// The host side of the plugin ABI: owns the connector instances (one per `connectors:` entry),
// implements the wb_host_api table they call back into, drives their lifecycle
// (validate -> create -> start -> subscribe* / unsubscribe* -> stop(deadline) -> destroy), and
// routes ingest requests to them (ingest_router). Every call into a module is guarded: a status
// other than WB_OK, an exception, a response that never comes or comes twice is contained and
// counted.
//
// Threads: lifecycle calls are serialized per instance (the ABI's "control thread"); handle() runs
// on the caller's (I/O) thread; respond/submit callbacks run on whatever thread completes them. The
// host owns one timer thread (task delays, request deadlines) and a small worker pool (post_task).

#include "app/ingest_router.hpp"
#include "core/clock.hpp"
#include "plugins/module_loader.hpp"
#include "plugins/secret_settings.hpp"
#include "plugins/submit_sink.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace wopbridge {

// One `connectors:` entry of the config file.
struct connector_instance_config {
    std::string name;   // instance name; subscriptions name it in `connector`
    std::string module; // module name (looked up on the module path) or a path
    std::string settings_json = "{}";
};

// A subscription a connector discovered and asks the host to register (api->register_subscription).
struct discovered_subscription {
    std::string connector; // the instance that asked
    std::string id;
    std::string source;
    std::string workflow_id;
    std::string settings_json;
};

struct connector_host_options {
    std::vector<std::string> module_dirs; // empty: default_module_dirs()
    std::string public_url =
        "http://127.0.0.1:8080";        // server.publicUrl (ingest URLs, wb_http_request)
    millis respond_timeout_ms = 10'000; // past it the host answers 503 itself
    millis stop_timeout_ms = 10'000;    // deadline handed to stop(), then drain
    int worker_threads = 2;
    // on_http_request runs on the caller's (HTTP worker) thread. One instance holds at most this
    // many of those threads at once; further requests wait in a bounded per-instance queue (run by
    // the thread that frees a slot, answered 503 at their deadline if still waiting) and past
    // max_queued_calls are answered 503 + Retry-After at once. A module that blocks therefore
    // stalls only its own requests, never the HTTP server or the other connectors.
    int max_calls_per_instance = 2;
    std::size_t max_queued_calls = 1024;
    // Registers a discovered subscription with the bridge; returns an error line or nullopt.
    // Unset: register_subscription answers WB_ERR_UNSUPPORTED.
    std::function<std::optional<std::string>(const discovered_subscription&)> register_subscription;
    // Where connector log lines go (one JSON object per line). Unset: stderr.
    std::function<void(const std::string& line)> log_sink;
    // The blob store directory behind api->store_attachment (email parts, uploaded files).
    // Empty: store_attachment answers WB_ERR_UNSUPPORTED.
    std::string attachment_dir;
    // The bridge's host key box (bridge::data_key_box): opens sealed secret settings before the
    // schema check and the module see them, and seals them for the store (seal_settings).
    // Null: settings holding sealed values are refused, and seal_settings answers unsupported.
    const secret_box* box = nullptr;
};

// Per-instance counters (content-free).
struct connector_stats {
    std::uint64_t requests = 0;  // handed to on_http_request
    std::uint64_t responses = 0; // answered by the connector
    std::uint64_t timeouts = 0;  // answered 503 by the host
    std::uint64_t submits = 0;   // accepted by api->submit
    std::uint64_t errors = 0;    // see connector_host::errors()
    std::uint64_t busy = 0;      // answered 503 at once: its call slots and queue were full
};

struct connector_instance_info {
    std::string name;
    std::string module_name;
    std::string module_path;
    std::string version;
    std::string source;
    std::uint64_t capabilities = 0;
    bool running = false;
    std::vector<std::string> subscriptions;
    connector_stats stats;
};

class connector_host final : public ingest_router {
  public:
    connector_host(connector_host_options options, submit_sink& sink, clock_source& clock,
                   random_source& random);
    ~connector_host() override; // stop_all()
    connector_host(const connector_host&) = delete;
    connector_host& operator=(const connector_host&) = delete;

    // load -> validate -> create -> start. Errors are one line naming the module file.
    module_result<void> add_instance(const connector_instance_config& config);
    // add_instance for each; stops at the first failure (already started ones keep running).
    module_result<void> add_instances(const std::vector<connector_instance_config>& configs);

    // Hands a subscription to the instance its `connector` names. Idempotent: the same settings
    // again are a no-op; changed settings call the module's subscribe again (an update).
    module_result<void> subscribe(const subscription& sub);
    // Idempotent: unknown ids are ok.
    module_result<void> unsubscribe(const std::string& connector,
                                    const std::string& subscription_id);

    // Subscription settings for `connector` as the store keeps them: every value its module's
    // subscription schema marks secret sealed (plugins/secret_settings), every top-level value when
    // no such instance is loaded here. subscribe() opens them again.
    module_result<sealed_settings> seal_settings(const std::string& connector,
                                                 std::string_view settings_json,
                                                 seal_mode mode) const;

    // stop(deadline) -> run queued tasks -> wait for in-flight work -> answer leftovers 503 ->
    // destroy.
    module_result<void> remove_instance(const std::string& name);
    void stop_all(); // idempotent

    // ingest_router
    bool serves(const subscription& sub) const override;
    void handle(const subscription& sub, const inbound_http_request& req,
                ingest_reply_callback reply) override;
    std::vector<std::string> sources() const override;
    std::vector<std::string> queue_backends() const override;
    std::vector<std::string> connector_names() const override;
    result<void, error_info> attach(const subscription& sub) override;
    void detach(const subscription& sub) override;

    std::vector<connector_instance_info> instances() const;
    std::optional<connector_stats> stats(const std::string& instance) const;
    // Connector errors of one instance: non-OK internal statuses, exceptions caught by the host,
    // invalid or late/duplicate responses, respond timeouts and error-level log lines.
    std::uint64_t errors(const std::string& instance) const;

    struct impl;

  private:
    std::unique_ptr<impl> impl_;
};

} // namespace wopbridge
