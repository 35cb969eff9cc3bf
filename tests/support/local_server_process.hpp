#pragma once
// What the throwaway broker servers of the tests (redis_server, nats_server, rabbitmq_server)
// share: finding the program and a free loopback port, spawning it with quiet or logged output,
// waiting for readiness while noticing an early exit, and stopping it with a signal.
#include <chrono>
#include <functional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace wopbridge::testing {

// True when `name` is an executable in a directory of $PATH.
bool on_path(const std::string& name);

// A port on 127.0.0.1 that was free a moment ago (bound to port 0, then released); 0 when none.
int free_loopback_port();
// The same, throwing std::runtime_error("<who>: cannot find a free port") when there is none.
int free_loopback_port_or_throw(const std::string& who);

struct server_spawn {
    std::vector<std::string> argv{};      // argv[0] is searched on PATH unless it holds a '/'
    std::vector<std::string> extra_env{}; // NAME=value, on top of the inherited environment
    std::string output_file{};            // stdout and stderr appended here; empty: /dev/null
    bool keep_stderr = false;             // without output_file: stderr stays the test's own
    std::string working_dir{};            // empty: the test's own
};

// Starts the program with stdin on /dev/null. Returns 0 and sets `pid`, or the errno of the
// failed spawn.
int spawn_server(const server_spawn& request, pid_t& pid);

// Polls `ready` (every 10 ms, up to `limit`) while the child runs. A child that exits meanwhile
// (say, its port was taken) is reaped and `pid` becomes -1. Returns whether it became ready.
bool wait_ready_while_running(pid_t& pid, std::chrono::milliseconds limit,
                              const std::function<bool()>& ready);

// Sends `sig` and reaps the child; `pid` becomes -1. Nothing when pid <= 0.
void signal_and_reap(pid_t& pid, int sig);

} // namespace wopbridge::testing
