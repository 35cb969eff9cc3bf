#pragma once
// The connector conformance kit behind `wopbridge connector-check MODULE.so`: ABI gates through
// module_loader, the exported symbol set, the descriptor's schemas, validate(), the lifecycle in
// order, HTTP probing, submit ordering/dedup/refusal handling and exception containment, each
// reported as one PASS/FAIL/SKIP line.
//
// Every check that calls into the module runs in a forked child process (one per phase), so a
// module that crashes or hangs becomes a FAIL line naming the check it was in, not a dead kit. The
// child drives the module against a checking host (a real wb_host_api table, check_host.hpp) that
// records calls and flags protocol violations.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace wopbridge {

enum class check_result { pass, fail, skip };

std::string_view to_string(check_result r) noexcept;

struct check_line {
    check_result result = check_result::skip;
    std::string name;   // e.g. "abi.version", "lifecycle.stop", "submit.duplicate"
    std::string reason; // one line, secret-free
};

// A raw request to replay as the probe (`--probe-request FILE`): "METHOD TARGET\n" then
// "name: value" header lines, an empty line and the body, byte for byte (CRLF line ends are
// accepted in the head; the body is everything after the blank line).
struct probe_request {
    std::string method = "POST";
    std::string target;
    std::vector<std::pair<std::string, std::string>> headers; // names lower-cased
    std::string body;
};

// nullopt-like: returns false and sets `error` when `text` is not a request.
bool parse_probe_request(std::string_view text, probe_request& out, std::string& error);

struct connector_check_options {
    std::string module;                        // path (or name on the default module path)
    std::string config_json = "{}";            // connector settings
    std::string subscription_settings_json = "{}";
    // False when the operator gave none (the CLI without --config / --subscription-settings):
    // a module refusing the empty default then needs settings, which is a SKIP, not a FAIL.
    bool config_given = true;
    bool subscription_settings_given = true;
    bool has_probe_request = false;
    probe_request probe; // replayed for the submit checks when has_probe_request
    int phase_timeout_ms = 60'000;   // a phase (child process) running longer is killed: FAIL
    int respond_timeout_ms = 5'000;  // how long a probe waits for respond()
    int outcome_delay_ms = 200;      // submit outcomes are delivered this late (ordering check)
    int stop_grace_ms = 5'000;       // stop(deadline = now + this)
};

struct connector_check_report {
    std::vector<check_line> checks;
    std::size_t count(check_result r) const noexcept;
    // 0 when no check failed, else 1.
    int exit_code() const noexcept;
};

connector_check_report run_connector_check(const connector_check_options& options);

// "PASS  name  reason" lines, then a summary line.
std::string format_check_text(const connector_check_report& report);
// {"module":..., "checks":[{"result":"PASS","name":...,"reason":...}], "passed":n, ...}
std::string format_check_json(const connector_check_report& report, std::string_view module);

} // namespace wopbridge
