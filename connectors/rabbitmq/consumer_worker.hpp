#pragma once
// One subscription's consumer: a thread that owns one AMQP connection (rabbitmq-c connections are
// single-threaded), consumes the queue with basic.qos(prefetch), submits one event per message
// and acks each (basic.ack) only after the host's outcome says it was committed (accepted, held)
// or recognised (duplicate). Outcomes arrive on host threads: they queue the ack and wake the
// thread through an eventfd, and the thread sends it on the delivery's own connection.
//
// Nothing beyond `prefetch` unacked messages is ever held: the broker sends no more. A refusal
// that is about the host or the subscription (overloaded, store down, not active) keeps the
// message unacked and submits it again after a delay (doubling per refused round, up to 30 s);
// while the host has no capacity nothing is submitted. On a lost connection every held message
// goes back to the queue (the broker requeues unacked deliveries) and the thread reconnects with
// backoff.

#include "rabbitmq/amqp_link.hpp"
#include "rabbitmq/settings.hpp"

#include "wopbridge/connector.hpp"
#include "wopbridge/listener_submit.hpp"
#include "wopbridge/refusal_backoff.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace wopbridge::rabbitmq {

class consumer_worker : public std::enable_shared_from_this<consumer_worker> {
  public:
    consumer_worker(const wopbridge::host& host, const connector_settings& settings,
                    std::string sub_id, subscription_settings sub);
    ~consumer_worker();

    void start();
    // Stops taking messages, waits for outstanding outcomes and sends their acks until
    // `deadline`, then closes the connection: what is still unacked goes back to the queue.
    // Idempotent.
    void stop(std::chrono::steady_clock::time_point deadline);

    const subscription_settings& subscription() const noexcept { return sub_; }

  private:
    using clock = std::chrono::steady_clock;

    struct held {
        std::uint64_t epoch = 0; // the connection it came on
        delivery msg;
        std::string provider_event_id;
        bool submitted = false;       // an outcome is outstanding
        bool without_payload = false; // refused as invalid once: submitted again without it
    };
    struct action {
        bool ack = true; // else basic.reject requeue=false
        std::uint64_t epoch = 0;
        std::uint64_t tag = 0;
    };

    void run();
    bool connect();
    void drop_link(const std::string& why);
    void apply_actions();
    void submit_due();
    void read_frames();
    void take(delivery d);
    void submit(std::uint64_t id);
    // Committed or recognised by the host: the broker may forget it.
    void on_committed(std::uint64_t id);
    void on_refused(std::uint64_t id, const std::string& reason, int retry_after_seconds);
    void wait_for(std::chrono::milliseconds d);
    void wake() const;
    void log(wopbridge::log_level level, const std::string& message) const;

    const wopbridge::host& host_;
    const connector_settings settings_;
    const std::string sub_id_;
    const subscription_settings sub_;
    int wake_fd_ = -1;

    // The worker thread's own: the connection and its bookkeeping.
    std::unique_ptr<amqp_link> link_;
    std::uint64_t epoch_ = 0;
    bool ever_connected_ = false;
    bool lost_ = false;
    bool said_unreachable_ = false;
    std::string last_connect_error_;
    bool said_hashing_ = false;
    std::thread thread_;

    // Guards everything below; never held while calling the host or the client library.
    std::mutex mu_;
    std::condition_variable cv_;
    std::atomic<bool> stopping_{false};
    clock::time_point deadline_{};
    bool started_ = false;
    bool stopped_ = false;
    bool released_ = false;                   // late outcomes do nothing
    std::map<std::uint64_t, held> in_flight_; // by a local id (delivery tags are per connection)
    std::uint64_t next_id_ = 1;
    std::vector<action> actions_;        // acks/rejects for the thread to send
    wopbridge::refusal_backoff backoff_; // resubmits pause while refused
};

} // namespace wopbridge::rabbitmq
