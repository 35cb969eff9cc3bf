#pragma once
// One serving node: the parts of a `wopbridge serve` process, assembled from a checked config and
// started and stopped in a stated order. `run_serve` (cli/serve.cpp) is argument and signal
// handling around it.
//
// start(), in order (a failure undoes what was started and says which exit code serve returns):
//   1. the pid file: held locked for the process's life when one process serves the store
//   2. the store, opened and checked against the host key; a SQLite predecessor's claims freed
//   3. the bridge over it (bound to the host key), with file housekeeping added
//   4. the connector host and its instances; stored connector settings sealed
//   5. the subscriptions of the config file applied, connectors brought in line with the store
//   6. the bridge's threads (delivery engine, scheduler, housekeeping)
//   7. the HTTP server, listening
//   8. the connector sync (other nodes' registrations), then the pid written and the banner logged
// stop(), the reverse: the HTTP server drains in-flight requests (their commits complete and their
// responses are sent) -> connector sync -> connectors -> the bridge's threads -> the store closes
// -> the pid file is emptied.

#include "config/config.hpp"
#include "core/error.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace wopbridge {

struct node_options {
    config cfg; // loaded, with check_environment and check_connectors passed (app/preflight)
    std::vector<std::string> module_dirs; // serve --module-path
    bool init_empty_store = false;        // serve --init
    // What serve did to the process before any secret was read, for the startup banner.
    std::string core_dumps;               // apply_core_dump_policy()'s detail
    bool keys_in_secure_heap = false;
};

// Why start() refused: the line serve prints and the exit code it returns (2: the configuration,
// 1: the machine or the store).
struct node_start_failure {
    int exit_code = 1;
    std::string message;
};

class node {
public:
    explicit node(node_options options);
    ~node(); // stop() when started
    node(const node&) = delete;
    node& operator=(const node&) = delete;

    result<void, node_start_failure> start();
    // SIGHUP: the subscriptions (and their rate limits) of the re-read file. The message says what
    // was refused.
    result<void, error_info> reload(const config& again);
    void stop();

    std::uint16_t port() const; // the bound port, after start()

private:
    struct parts;
    std::unique_ptr<parts> parts_;
};

// Where serve writes its pid: beside a SQLite database, else named after the config file.
std::string node_pid_file(const config& c);

} // namespace wopbridge
