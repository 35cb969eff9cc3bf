#pragma once
// One AMQP connection with one channel consuming one queue, through the official C client
// (rabbitmq-c). rabbitmq-c connections are not thread-safe: a link is used by one thread only
// (its consumer_worker's). Errors are values: every call says what went wrong in a line for the
// log that never carries a secret (the broker's reply text and the client's status text only).

#include "rabbitmq/settings.hpp"

#include <amqp.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace wopbridge::rabbitmq {

// Loads the TLS files into a throwaway client socket, so a missing or bad file is refused when
// the connector is created, naming the setting (never the path or the content).
bool check_tls_files(const connector_settings& s, std::string& error);

struct delivery {
    std::uint64_t tag = 0;
    bool redelivered = false;
    std::string exchange;
    std::string routing_key;
    std::optional<std::string> message_id;
    std::string body;
};

class amqp_link {
  public:
    enum class open_failure { unreachable, refused }; // refused: login, queue or consume said no

    // Connects, logs in, opens channel 1, sets basic.qos(prefetch) and starts basic.consume.
    static std::unique_ptr<amqp_link> open(const connector_settings& s,
                                           const subscription_settings& sub, std::string& error,
                                           open_failure& why);
    ~amqp_link();
    amqp_link(const amqp_link&) = delete;
    amqp_link& operator=(const amqp_link&) = delete;

    // The socket to poll, and whether the client already holds bytes or frames to read.
    int fd() const;
    bool buffered() const;

    enum class next_kind { message, nothing, closed };
    struct next_result {
        next_kind kind = next_kind::nothing;
        delivery message;
        std::string why; // closed: the reason
    };
    // Reads what is there without waiting (a started message is read to its end).
    next_result next();
    // The client sends and checks heartbeats only inside waits that end on them, and next()
    // never waits: so heartbeats are ours. Sends one every heartbeat/2; false (with why) once
    // nothing came from the broker for two heartbeats. `readable`: the socket had data.
    bool keepalive(bool readable, std::string& why);

    // False when the connection is gone (the broker requeues every unacked delivery).
    bool ack(std::uint64_t tag, std::string& error);
    bool reject(std::uint64_t tag, bool requeue, std::string& error);
    // channel.close + connection.close, bounded by the RPC timeout. Idempotent.
    void close();

  private:
    explicit amqp_link(amqp_connection_state_t c) : conn_(c) {}
    void channel_closed_by_broker(const amqp_rpc_reply_t& r);
    amqp_connection_state_t conn_ = nullptr;
    bool open_ = false;        // the connection is usable (close() says goodbye)
    bool channel_open_ = true; // false once the broker closed channel 1
    std::chrono::milliseconds heartbeat_{0};
    std::chrono::steady_clock::time_point last_sent_{};
    std::chrono::steady_clock::time_point last_heard_{};
};

} // namespace wopbridge::rabbitmq
