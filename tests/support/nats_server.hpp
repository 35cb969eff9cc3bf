#pragma once
// nats_server: a throwaway `nats-server -js` for tests, and a small JetStream client on the real
// C client (nats.c) to create streams, publish and read consumer state.
//
// Listens on 127.0.0.1 at a free port (found by binding port 0) with its JetStream store in its
// own temp dir, so restart() keeps streams, consumers and acks. Readiness is a bounded loop until
// the JetStream API answers, never a fixed sleep. kill() is SIGKILL (a crash). Tests skip when
// nats-server is not installed:
//
//     WOPBRIDGE_REQUIRE_NATS();
//     wopbridge::testing::nats_server broker;
//     nats_client js(broker.url());
//     js.add_stream("ORDERS", "orders.>");
//     auto seq = js.publish("orders.created", R"({"id":1})");
#include "support/temp_dir.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <sys/types.h>
#include <utility>
#include <vector>

namespace wopbridge::testing {

struct nats_server_options {
    std::string user; // with password: the server requires them
    std::string password;
    std::string token; // the server requires this token
    bool defer_start = false;
};

class nats_server {
  public:
    // True when nats-server is on PATH.
    static bool available();

    explicit nats_server(nats_server_options options = {});
    ~nats_server();
    nats_server(const nats_server&) = delete;
    nats_server& operator=(const nats_server&) = delete;

    int port() const noexcept { return port_; }
    std::string url() const; // nats://127.0.0.1:<port> (no credentials)
    // The URL the test client uses (with the server's credentials, if any).
    std::string client_url() const;
    bool running() const noexcept { return pid_ > 0; }

    void stop();  // SIGTERM (nats-server flushes its store) and wait
    void kill();  // SIGKILL and wait
    void start(); // same port and store; waits until JetStream answers. Throws on failure.
    std::string log_text() const;

  private:
    bool wait_ready();
    nats_server_options options_;
    temp_dir dir_;
    int port_ = 0;
    pid_t pid_ = -1;
};

struct consumer_state {
    std::uint64_t num_pending = 0;    // not yet delivered
    std::int64_t num_ack_pending = 0; // delivered, not acked
    std::int64_t num_redelivered = 0;
    std::uint64_t delivered_stream_seq = 0;
    std::uint64_t ack_floor_stream_seq = 0;
};

// One connection through nats.c. Every call returns false / nullopt on failure (with `error`).
class nats_client {
  public:
    explicit nats_client(const std::string& url);
    ~nats_client();
    nats_client(const nats_client&) = delete;
    nats_client& operator=(const nats_client&) = delete;

    bool ok() const noexcept { return js_ != nullptr; }
    bool add_stream(const std::string& name, const std::string& subjects);
    // The stream sequence JetStream assigned, or nullopt.
    std::optional<std::uint64_t>
    publish(const std::string& subject, const std::string& data,
            const std::vector<std::pair<std::string, std::string>>& headers = {});
    std::optional<consumer_state> consumer(const std::string& stream, const std::string& durable);
    // Deletes the durable consumer (as an operator's `nats consumer rm` does).
    bool delete_consumer(const std::string& stream, const std::string& durable);
    // Fetches up to `n` messages from the durable and drops them unacked: a member of the
    // consumer that died after reading.
    bool fetch_and_forget(const std::string& stream, const std::string& durable, int n);
    std::string error;

  private:
    void* nc_ = nullptr; // natsConnection*
    void* js_ = nullptr; // jsCtx*
};

} // namespace wopbridge::testing

#define WOPBRIDGE_REQUIRE_NATS()                                                                   \
    do {                                                                                           \
        if (!::wopbridge::testing::nats_server::available()) {                                     \
            GTEST_SKIP() << "nats-server not installed (scripts/setup-debian.sh nats)";            \
        }                                                                                          \
    } while (0)
