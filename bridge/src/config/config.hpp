#pragma once
// The YAML configuration file as typed structs (key reference: schemas/wopbridge-config.schema.json).
//   - `${VAR}` in any scalar is replaced from the environment; a missing variable is an error, `$${`
//     is a literal `${`.
//   - `file:/path` as the whole value of a secret (auth.apiKeys[].key, runs.upstream.apiKey,
//     store.postgres.url, subscriptions[].signingSecret, and string values under `settings`) is
//     replaced by the file's contents, trimmed.
//   - Relative paths (store.sqlite.path, hostKeyFile, server.tls.*, the first element of a workflow
//     command when it contains '/', and `file:` secrets) are resolved against the directory of the
//     config file, not the process's working directory. A command without '/' is looked up in PATH.
//   - Loading reports every error found, each as "file:line:col: message" (1-based).

#include "config/bridge_settings.hpp"
#include "contract/types.hpp"
#include "core/clock.hpp"
#include "core/forwarded.hpp"
#include "core/rate_limiter.hpp"
#include "runs/run_starter.hpp"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wopbridge {

struct config_error {
    std::string file;
    int line = 0;   // 1-based; 0 = not tied to a position
    int column = 0; // 1-based
    std::string message;
    std::string to_string() const; // "file:line:col: message"
};

struct tls_config {
    std::string cert_file; // absolute
    std::string key_file;  // absolute
};

struct server_config {
    std::string listen = "127.0.0.1:8080";
    std::string listen_host = "127.0.0.1"; // without brackets for IPv6
    std::uint16_t listen_port = 8080;
    std::string public_url;                // empty = "http://" + listen
    std::size_t max_body_bytes = 1024 * 1024;
    int threads = 2;
    std::optional<tls_config> tls;
    int max_connections = 10000;       // maxConnections
    int max_in_flight_requests = 1024; // maxInFlightRequests: 503 + Retry-After past it
    int reserved_in_flight_requests = 32;    // reservedInFlightRequests: control routes only
    int max_connections_per_address = 512;   // maxConnectionsPerAddress
    std::size_t min_body_bytes_per_second = 1024; // minBodyBytesPerSecond (0 = off): else closed
    int body_grace_seconds = 5;                   // bodyGraceSeconds before the rate applies
    rate_limit per_subscription;       // rateLimits.perSubscription (ingest; 429 past it)
    // rateLimits.perSourceAddress (ingest; 429 past it, before any verification or write). On by
    // default: every forged post costs a dead-letter row, so one address must not write freely.
    // Counts refused requests only (bad signatures, unknown ids, malformed posts), so a valid burst
    // is never throttled and a forged flood is answered 429 before it costs a verification.
    rate_limit per_source_address{10, 50};
    // trustedProxies: peers whose Forwarded / X-Forwarded-* headers give the client's address and
    // the public URL it called (core/forwarded.hpp).
    std::vector<address_block> trusted_proxies;
};

struct api_key_config {
    std::string key; // secret: never log
    std::string tenant = "default";
    std::vector<std::string> scopes;
};

class configured_store; // store/store_backend.hpp

struct store_config {
    // The backend named under `store:` (the first registered, sqlite, when the section is absent)
    // with the settings the file gave it. Callers ask it; none branches on which backend it is.
    std::shared_ptr<const configured_store> backend;
};

struct runs_config {
    enum class mode_kind { local, upstream } mode = mode_kind::local;
    std::vector<local_workflow> workflows; // local
    upstream_options upstream;             // upstream
};

struct delivery_config {
    retry_policy retry;
    breaker_policy breaker;
    millis dedup_retention_ms = 24LL * 3600 * 1000;
    int max_in_flight = 1024;  // concurrency: attempts claimed and not yet recorded
    int batch_size = 256;      // batchSize: claimed / recorded in one transaction at most
    int max_pending_intake = 10000;
    millis lease_ms = 60 * 1000;
    millis attempt_timeout_ms = 30 * 1000;
};

struct dead_letter_config {
    int retention_days = 7;
    int max_page_size = 100;
    // refusedSignatureRecords: how many dead letters of refused signatures a node writes, per
    // subscription and in all; past the budget a forged post gets the same answer and is counted,
    // not written. They keep retentionDays like every dead letter (the advertised retention).
    rate_limit refused_records_per_subscription{0.2, 100};
    rate_limit refused_records_total{1, 1000};
};

struct attachments_config {
    // attachments.retention: an attachment's file is removed this long after the last put of its
    // bytes. Never below the dead-letter or dedup retention (a replay re-delivers the event that
    // refers to it); unset: 14 days, or the longer of those two plus 7 days.
    millis retention_ms = 14LL * 24 * 3600 * 1000;
    bool retention_set = false;
};

// Where a value was written in the file (1-based; 0 = not known).
struct source_position {
    int line = 0;
    int column = 0;
};

// Where a settings value was written, and its key (unset for list items and the mapping itself).
struct settings_place {
    source_position key;
    source_position value;
};

// Where each value under a `settings:` mapping was written, keyed by the JSON Pointer the schema
// validator reports ("" = the mapping itself, or its entry when `settings` is absent), so a
// schema refusal names the offending value's place without quoting the value.
using settings_positions = std::map<std::string, settings_place>;

struct connector_config {
    std::string name;
    std::string module;
    std::string settings_json = "{}"; // secrets resolved; hand only to the plugin host
    settings_positions settings_at;
};

struct subscription_config {
    std::string id;
    std::string tenant = "default";
    source_kind source = source_kind::webhook;
    std::string connector;
    std::string workflow_id;
    verification_mode verification = verification_mode::required;
    std::optional<retry_policy> retry; // absent = delivery.retryPolicy
    bool dedup = true;
    std::optional<schedule_spec> schedule;
    std::string signing_secret;        // secret: never log
    std::string provider;              // a catalogue entry (bridge/providers/); empty: Standard Webhooks
    std::string settings_json = "{}";  // connector settings for this subscription
    settings_positions settings_at;
    int line = 0;                      // where it was declared
    int column = 0;
    bool hold_when_not_active = false; // whenNotActive: refuse (default) | hold
    int max_concurrency = 0;           // maxConcurrency, or 1 for ordering: perSubscription
    // rateLimit: replaces server.rateLimits.perSubscription for this subscription.
    std::optional<rate_limit> rate_limit_override;
};

struct logging_config {
    std::string level = "info"; // trace debug info warn error
};

// `webhooks:` — outbound run-event webhooks (bridge/src/outbound/).
struct webhooks_config {
    bool durable = false;             // retries + dead letters instead of best effort
    bool allow_loopback_http = false; // admit http://127.0.0.1:<port> URLs (tests, local dev only)
};

struct config {
    std::string file;                  // as given
    std::filesystem::path base_dir;    // the config file's directory (absolute)
    server_config server;
    std::vector<api_key_config> api_keys;
    store_config store;
    runs_config runs;
    delivery_config delivery;
    dead_letter_config dead_letter;
    attachments_config attachments;
    std::vector<connector_config> connectors;
    std::vector<subscription_config> subscriptions;
    std::string host_key_file;         // absolute
    int host_key_file_line = 0;        // where hostKeyFile is set (0: the default is used)
    int host_key_file_column = 0;
    logging_config logging;
    bool test_seams = false;
    webhooks_config webhooks;
};

// Environment lookup (injected for tests); nullopt = not set.
using env_lookup = std::function<std::optional<std::string>(const std::string& name)>;
env_lookup process_environment();

struct config_load_result {
    std::optional<config> value;       // set only when errors is empty
    std::vector<config_error> errors;
    explicit operator bool() const noexcept { return value.has_value(); }
};

config_load_result load_config(const std::string& path, const env_lookup& env = process_environment());
// "host:port" / "[v6]:port" as server.listen takes it (port 0: any free port).
bool parse_listen(const std::string& text, std::string& host, std::uint16_t& port);
// Parses text as if read from `file_name`; relative paths resolve against `base_dir`.
config_load_result parse_config(std::string_view yaml_text, const std::string& file_name,
                                const std::filesystem::path& base_dir,
                                const env_lookup& env = process_environment());

// ---- what the rest of the program needs ---------------------------------------------------------

bridge_settings make_bridge_settings(const config& c);
// The config-origin subscription records, and their plaintext signing secrets keyed by subscription
// id, for bridge::apply_config_subscriptions.
std::vector<subscription> make_subscriptions(const config& c,
                                             std::map<std::string, std::string>& secrets);
// subscriptions[].rateLimit, keyed by subscription id (for http::api_options).
std::map<std::string, rate_limit> subscription_rate_limits(const config& c);
// The run starter's working directory (= the config file's directory).
std::string run_working_directory(const config& c);
// The run starter the config asks for: local (workflows, run_working_directory) or upstream.
std::unique_ptr<run_starter> make_run_starter(const config& c);
// Where local workflow commands' output goes (<dir>/<run id>.log): run-output/ beside the SQLite
// database (the config's directory with PostgreSQL); "" with an upstream run starter.
std::string run_output_directory(const config& c);

} // namespace wopbridge
