#pragma once
// rabbitmq_server: a throwaway RabbitMQ node for tests, and a small AMQP client on the real C
// client (rabbitmq-c) to declare queues, publish and read queue depths.
//
// The node runs from its own temp dir (RABBITMQ_MNESIA_BASE, RABBITMQ_LOG_BASE, config file, no
// plugins), under a unique node name, with its AMQP, distribution and epmd ports found free by
// binding port 0; its own `epmd` is a child of the test too. restart() keeps the node's store
// (durable queues, persistent messages). Readiness is a bounded loop until an AMQP login
// succeeds, never a fixed sleep. kill() is SIGKILL (a crash). Boot takes seconds: suites share
// one node (shared()) and use their own queue names. Tests skip when rabbitmq-server is not
// installed:
//
//     WOPBRIDGE_REQUIRE_RABBITMQ();
//     auto* broker = wopbridge::testing::rabbitmq_server::shared();
//     amqp_client c(broker->port());
//     c.declare_queue("orders");
//     c.publish("orders", R"({"id":1})", "msg-1");
#include "support/temp_dir.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <sys/types.h>

namespace wopbridge::testing {

struct rabbitmq_server_options {
    // Also a TLS listener (tls_port()), with a throwaway CA and a server certificate for
    // localhost / 127.0.0.1 made by the openssl tool; the CA file is ca_file().
    bool tls = false;
};

class rabbitmq_server {
  public:
    // True when rabbitmq-server is installed.
    static bool available();
    // One node for the whole test program (started on first use, stopped at exit); nullptr with
    // shared_error() when it could not start.
    static rabbitmq_server* shared();
    static std::string shared_error();

    explicit rabbitmq_server(rabbitmq_server_options options = {});
    ~rabbitmq_server();
    rabbitmq_server(const rabbitmq_server&) = delete;
    rabbitmq_server& operator=(const rabbitmq_server&) = delete;

    int port() const noexcept { return port_; }
    int tls_port() const noexcept { return tls_port_; }
    std::string ca_file() const { return dir_.file("ca.pem"); }
    std::string url() const; // amqp://guest:guest@127.0.0.1:<port>/
    bool running() const noexcept { return pid_ > 0; }

    void kill(); // SIGKILL and wait
    void stop(); // SIGTERM and wait
    // Same ports and store; waits until an AMQP login succeeds. False (with error) on failure.
    bool start();
    std::string error;
    std::string log_text() const;

  private:
    bool start_epmd();
    bool wait_ready();
    temp_dir dir_;
    std::string node_;
    int port_ = 0;
    int dist_port_ = 0;
    int epmd_port_ = 0;
    int tls_port_ = 0;
    pid_t pid_ = -1;
    pid_t epmd_pid_ = -1;
};

struct queue_depth {
    std::uint32_t ready = 0; // messages waiting (not delivered, or requeued)
    std::uint32_t consumers = 0;
};

// One connection and channel through rabbitmq-c. Every call returns false / nullopt on failure
// (with `error`); after a failure the client reconnects on the next call.
class amqp_client {
  public:
    explicit amqp_client(int port);
    ~amqp_client();
    amqp_client(const amqp_client&) = delete;
    amqp_client& operator=(const amqp_client&) = delete;

    // A durable queue; with `dead_letter_queue`, rejected messages go there (default exchange).
    bool declare_queue(const std::string& name, const std::string& dead_letter_queue = {});
    bool delete_queue(const std::string& name);
    // Persistent, to the default exchange with routing key `queue`; without message_id when
    // `message_id` is empty.
    bool publish(const std::string& queue, const std::string& body, const std::string& message_id);
    // Passive queue.declare: the ready count excludes what a consumer holds unacked.
    std::optional<queue_depth> depth(const std::string& queue);
    // basic.get with auto-ack: the body and message_id of the next ready message, if any.
    std::optional<std::pair<std::string, std::string>> get(const std::string& queue);
    std::string error;

  private:
    bool ensure();
    void reset();
    int port_;
    void* conn_ = nullptr; // amqp_connection_state_t
};

} // namespace wopbridge::testing

#define WOPBRIDGE_REQUIRE_RABBITMQ()                                                               \
    do {                                                                                           \
        if (!::wopbridge::testing::rabbitmq_server::available()) {                                 \
            GTEST_SKIP() << "rabbitmq-server not installed (scripts/setup-debian.sh rabbitmq)";    \
        }                                                                                          \
    } while (0)
