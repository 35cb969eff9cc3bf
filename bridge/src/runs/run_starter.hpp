#pragma once
// Starting a workflow run for a delivered trigger. Two real implementations:
//   local    - the embedded run ledger: workflows declared in the config, optionally a command that
//              receives the TriggerEvent JSON on stdin (exit 0 = run.completed, else run.failed);
//   upstream - POST /v1/runs on an OpenWOP host with libcurl; Idempotency-Key = the delivery id, so a
//              retried start never makes two runs.
// Starters never retry by themselves: they report, the delivery engine decides (retries never stack).

#include "contract/types.hpp"
#include "core/clock.hpp"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace wopbridge {

struct run_start_request {
    std::string run_id;           // reserved by the bridge at intake
    std::string delivery_id;      // idempotency key for the start
    std::string tenant;
    std::string workflow_id;
    std::string subscription_id;
    std::string trigger_event_json; // the TriggerEvent (ctx.triggerData); never event-logged
    std::string causation_event_id; // the delivered attempt's eventId
    millis deadline = 0;            // absolute; past it the attempt counts as failed (transient)
};

struct run_start_result {
    enum class kind { started, retry, permanent } outcome = kind::started;
    std::string upstream_run_id;   // upstream starter: the host's run id
    millis retry_after_ms = 0;     // from Retry-After, 0 = none
    std::string reason;            // content-free
    // Local ledger: events to append after run.started in the same commit (e.g. run.completed for a
    // workflow without a command).
    std::vector<std::pair<std::string, std::string>> follow_up_events;
    run_status status_after = run_status::running;
};

using run_start_callback = std::function<void(run_start_result)>;

// Told about the run's later life (the local ledger's command exit), so the bridge can append
// run.completed / run.failed. Implemented by the bridge.
class run_lifecycle_sink {
public:
    virtual ~run_lifecycle_sink() = default;
    virtual void on_run_finished(const std::string& run_id, bool succeeded, int exit_code) = 0;
};

class run_starter {
public:
    virtual ~run_starter() = default;
    // Checks, before any commit, that the run can start (the workflow exists, its command is
    // executable). A failure here is a failed delivery attempt.
    virtual run_start_result prepare(const run_start_request& req) = 0;
    // Starts the run. Local: called after run.started is committed (so a crash never runs the command
    // twice). Upstream: called before the commit; the Idempotency-Key makes a repeat return the same run.
    virtual void start(const run_start_request& req, run_start_callback done) = 0;
    // true when start() must happen before the commit of run.started (upstream), false when after (local).
    virtual bool starts_before_commit() const noexcept = 0;
    virtual void set_lifecycle_sink(run_lifecycle_sink* sink) = 0;
    virtual void stop() = 0; // stop accepting; wait for in-flight starts
    virtual std::vector<std::string> workflow_ids() const = 0; // local: declared; upstream: empty = any
};

struct local_workflow {
    std::string id;
    std::vector<std::string> command; // empty = completes at once
    std::vector<std::pair<std::string, std::string>> env;
    millis timeout_ms = 10 * 60 * 1000;
};

struct upstream_options {
    std::string base_url;
    std::string api_key;
    millis timeout_ms = 10 * 1000;
};

std::unique_ptr<run_starter> make_local_run_starter(std::vector<local_workflow> workflows,
                                                    std::string working_directory);
std::unique_ptr<run_starter> make_upstream_run_starter(upstream_options opts);

// Added (config helper): knobs of the local starter beyond the workflows.
struct local_run_options {
    bool inherit_output = true;        // false = the command's stdout/stderr go to /dev/null
    // Non-empty: the command's stdout and stderr go to <output_dir>/<run id>.log (mode 0600), at
    // most max_output_bytes of it (then one truncation line; the rest is read and dropped, so a
    // chatty command never blocks or fails on its output). Wins over inherit_output.
    std::string output_dir;
    std::size_t max_output_bytes = 1024 * 1024;
    millis kill_grace_ms = 5 * 1000;   // SIGTERM -> SIGKILL after a timeout or at stop()
    millis stop_wait_ms = 10 * 1000;   // stop(): how long children may run on before SIGTERM
};
std::unique_ptr<run_starter> make_local_run_starter(std::vector<local_workflow> workflows,
                                                    std::string working_directory,
                                                    local_run_options options);

} // namespace wopbridge
