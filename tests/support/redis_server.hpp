#pragma once
// redis_server: a throwaway redis-server for tests.
//
// Listens on 127.0.0.1 at a free port (found by binding port 0), with `--save "" --appendonly yes
// --appendfsync always` in its own temp dir, so a restart keeps every acknowledged write.
// Readiness is a bounded PING retry loop, never a fixed sleep. restart() keeps port and data;
// kill() is SIGKILL (a crash). Tests skip when redis-server is not installed:
//
//     WOPBRIDGE_REQUIRE_REDIS();
//     wopbridge::testing::redis_server redis;
//     redis.cli({"XADD", "orders", "*", "sku", "42"});
#include "support/temp_dir.hpp"

#include <atomic>
#include <chrono>
#include <string>
#include <sys/types.h>
#include <vector>

namespace wopbridge::testing {

struct redis_server_options {
    std::string password; // requirepass, when not empty
    // Reserve the port and data dir but do not start: the test calls start() later (a client
    // that must come up before its Redis).
    bool defer_start = false;
};

struct cli_result {
    int exit_code = -1;
    std::string out; // stdout with the trailing newline removed
};

class redis_server {
  public:
    // True when redis-server and redis-cli are on PATH.
    static bool available();

    // Starts the server (unless defer_start); throws std::runtime_error when it does not become
    // ready.
    explicit redis_server(redis_server_options options = {});
    ~redis_server();
    redis_server(const redis_server&) = delete;
    redis_server& operator=(const redis_server&) = delete;

    int port() const noexcept { return port_; }
    // redis://[:password@]127.0.0.1:<port>
    std::string url() const;
    bool running() const noexcept { return pid_ > 0; }

    // Graceful stop (SIGTERM: Redis flushes its AOF) and wait for exit.
    void stop();
    // SIGKILL and wait for exit.
    void kill();
    // Starts again on the same port and data dir; waits for readiness. Throws on failure.
    void start();
    void restart() {
        stop();
        start();
    }

    // Runs the real `redis-cli -h 127.0.0.1 -p <port> [-a password] --no-auth-warning args...`.
    cli_result cli(const std::vector<std::string>& args) const;
    // Runs the real redis-cli with `commands` on its stdin (one command per line, its pipe mode of
    // reading commands): many commands for one process. The replies, one per line, are in `out`.
    cli_result cli_script(const std::string& commands) const;

  private:
    cli_result run_cli(const std::vector<std::string>& args, const std::string* input) const;
    bool wait_ready(std::chrono::milliseconds timeout);

    redis_server_options options_;
    temp_dir dir_;
    int port_ = 0;
    mutable std::atomic<unsigned> script_counter_{0};
    pid_t pid_ = -1;
};

} // namespace wopbridge::testing

#define WOPBRIDGE_REQUIRE_REDIS()                                                                  \
    do {                                                                                           \
        if (!::wopbridge::testing::redis_server::available()) {                                    \
            GTEST_SKIP() << "redis-server/redis-cli not installed";                                \
        }                                                                                          \
    } while (0)
