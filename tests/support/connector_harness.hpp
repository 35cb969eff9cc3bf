#pragma once
// connector_harness: a test host for module-level connector tests.
//
// It dlopens a built connector module (WOPBRIDGE_MODULE_DIR "/<name>.so", or any path), checks the
// descriptor, hands the module a complete wb_host_api table and drives the lifecycle
// (validate -> create -> start -> subscribe/unsubscribe -> stop -> destroy). Tests then send
// wb_http_requests and wait (condition variable + deadline, never a sleep) for the module's
// respond() call.
//
// The host side is real enough to catch mistakes:
//  - submit() for a subscription id that was never subscribed (or was unsubscribed) returns
//    WB_ERR_INVALID without recording it or calling `done`, as the real host does.
//  - submit() copies the wb_inbound_event, keeps an in-memory dedup map keyed on
//    (subscription_id, provider_event_id) and completes on the harness worker thread (never inside
//    submit(), as a real host does after its durable commit) with a scripted outcome:
//    accepted (fresh run id), duplicate (the first run's id), held, or refused(reason).
//  - respond() copies the response; a second respond() for the same request, or a respond() while
//    that request's submit is still uncommitted, is recorded as a protocol violation. (The second
//    check is heuristic: it fires when a submit is uncommitted and the responding request is the
//    only one open, so it assumes submits come from HTTP requests. For listener connectors, prove
//    ack-after-commit with pause_submit_completion() instead.)
//  - store_attachment() writes through the core blob_store into a temp dir.
//  - post_task() runs tasks on the worker thread (delays in real steady time); tasks still queued
//    at stop()/destruction are run, as the ABI promises.
//  - log() lines are recorded so tests can check that secrets never reach them.
//  - now_ms() is a settable clock (starts at the real time) so signature windows are testable.
//
// Minimal use:
//     wopbridge::testing::connector_harness h{"slack"};
//     ASSERT_EQ(h.descriptor_problem(), "");
//     ASSERT_EQ(h.create(R"({"signingSecret":"s"})"), WB_OK);
//     ASSERT_EQ(h.start(), WB_OK);
//     ASSERT_EQ(h.subscribe({.id = "sub-1", .source = "webhook", .workflow_id = "wf"}), WB_OK);
//     auto reply = h.send({.subscription_id = "sub-1", .headers = {...}, .body = "..."});
//     EXPECT_EQ(reply.status, 200);
//     EXPECT_EQ(h.submits().size(), 1u);
//
// Everything is thread-safe; the harness never holds its lock while calling into the module.
#include "wopbridge/connector.h"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace wopbridge::testing {

using header_list = std::vector<std::pair<std::string, std::string>>;

// One submit() the module made, copied, with the outcome the harness gave it.
struct recorded_submit {
    std::string subscription_id;
    std::string provider_event_id;
    std::int64_t received_at_ms = 0;
    bool verified = false;
    std::string content_json;
    wb_submit_status outcome = WB_SUBMIT_REFUSED;
    std::string run_id; // the run named in the outcome (the prior run for duplicates)
    std::string reason; // for refusals
};

// A request to hand to on_http_request. Header names are lower-cased by the harness.
struct http_request_spec {
    std::string subscription_id = "sub-1";
    std::string method = "POST";
    std::string target;     // default "/v1/ingest/" + subscription_id
    std::string public_url; // default connector_harness::public_base + target
    header_list headers;
    std::string body;
    std::string remote_address = "203.0.113.7";
    std::int64_t received_at_ms = 0; // 0 = the harness clock
};

// What the module answered. status == 0 means "no respond() before the deadline".
struct module_reply {
    int status = 0;
    header_list headers;
    std::string body;
    // Value of the first header with this name (case-insensitive), or "" when absent.
    std::string header(std::string_view name) const;
    bool has_header(std::string_view name) const;
};

// A request sent with send_async(); wait() blocks until respond() or the deadline.
class pending_reply {
  public:
    struct state;
    explicit pending_reply(std::shared_ptr<state> s) : state_(std::move(s)) {}
    bool ready() const;
    // nullopt when the module did not respond within `timeout`.
    std::optional<module_reply> wait(std::chrono::milliseconds timeout = std::chrono::seconds(5));

  private:
    std::shared_ptr<state> state_;
};

struct subscription_spec {
    std::string id = "sub-1";
    std::string source = "webhook";
    std::string workflow_id = "wf-test";
    std::string settings_json = "{}";
    std::string ingest_url; // default public_base + "/v1/ingest/" + id
};

// How the harness completes the next submits. Duplicates are decided by the dedup map regardless of
// mode (a refused submit is not remembered, as a real host commits nothing).
enum class submit_mode { accept, hold, refuse };

// Reads a wopbridge YAML config (e.g. examples/<name>/wopbridge.yaml) and returns the `settings`
// of the connectors[] entry named `connector_name` (or of the subscriptions[] entry with that id
// when `subscription` is true) as JSON text, with every ${VAR} replaced by "test-<VAR>". Integer
// and boolean scalars become JSON numbers/booleans. Throws std::runtime_error when the entry is
// absent. Lets a module test prove that the example configs carry settings the module accepts.
std::string settings_from_config(const std::string& yaml_path, std::string_view connector_name,
                                 bool subscription = false);

class connector_harness {
  public:
    static constexpr std::string_view public_base = "https://bridge.example.com";

    // WOPBRIDGE_MODULE_DIR "/" + name + ".so".
    static std::string module_path(std::string_view name);

    // Loads the module by name (see module_path) or, when `name` contains a '/', by path.
    // Throws std::runtime_error when dlopen or the entry symbol fails (a test-setup error).
    explicit connector_harness(std::string_view name);
    ~connector_harness(); // stop (if started), destroy (if created), drain tasks, dlclose
    connector_harness(const connector_harness&) = delete;
    connector_harness& operator=(const connector_harness&) = delete;

    const wb_connector_descriptor& descriptor() const noexcept { return *descriptor_; }
    // "" when the descriptor is well-formed (ABI version, names, status, source, schemas are JSON
    // objects, lifecycle functions present, on_http_request present iff WB_CAP_HTTP_INGEST);
    // otherwise a one-line description of the first problem.
    std::string descriptor_problem() const;

    // --- lifecycle (call from the test thread) ---------------------------------------------
    // validate(): the status and the module's one-line reason ("" on success).
    std::pair<wb_status, std::string> validate(std::string_view config_json) const;
    wb_status create(std::string_view config_json, std::string* error = nullptr);
    wb_status start();
    wb_status subscribe(const subscription_spec& sub, std::string* error = nullptr);
    wb_status unsubscribe(std::string_view id);
    wb_status stop(std::chrono::milliseconds grace = std::chrono::seconds(5));
    void destroy();
    // create + start + subscribe, stopping at (and returning) the first non-OK status.
    wb_status bring_up(std::string_view config_json, const subscription_spec& sub = {},
                       std::string* error = nullptr);

    // --- HTTP ------------------------------------------------------------------------------
    // Calls on_http_request and waits for respond(). status 0 when no response came in time.
    module_reply send(const http_request_spec& request,
                      std::chrono::milliseconds timeout = std::chrono::seconds(5));
    pending_reply send_async(const http_request_spec& request);

    // --- host behaviour --------------------------------------------------------------------
    void set_now_ms(std::int64_t ms) noexcept;
    std::int64_t now_ms() const noexcept;
    void set_submit_mode(submit_mode mode, std::string reason = {}, int retry_after_seconds = 0);
    // While paused, submit outcomes are queued instead of delivered (to prove the module does
    // not answer before the commit); resume delivers them in order.
    void pause_submit_completion();
    void resume_submit_completion();
    void set_capacity(bool has_capacity) noexcept;

    // --- observations ----------------------------------------------------------------------
    std::vector<recorded_submit> submits() const;
    // Waits until at least n submits were made; false on timeout.
    bool wait_for_submits(std::size_t n,
                          std::chrono::milliseconds timeout = std::chrono::seconds(5));
    std::vector<std::string> log_lines() const; // "<level> <message>"
    // Protocol violations seen by the host side (double or unknown respond, respond while the
    // request's submit is uncommitted, content_json not {"<source>":{...}}, empty
    // provider_event_id, ...). Expect empty.
    std::vector<std::string> violations() const;
    std::vector<std::string>
    registered_subscriptions() const; // ids passed to register_subscription
    std::filesystem::path attachment_dir() const;
    // Bytes of a stored attachment reference, or nullopt.
    std::optional<std::string> attachment(std::string_view ref) const;

    struct impl;

  private:
    std::unique_ptr<impl> impl_;
    const wb_connector_descriptor* descriptor_ = nullptr;
};

} // namespace wopbridge::testing
