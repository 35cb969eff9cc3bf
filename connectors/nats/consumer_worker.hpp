#pragma once
// One subscription's consumer: a thread that binds to a durable JetStream pull consumer (creating
// or updating it unless told not to), fetches at most maxInFlight messages at a time, submits one
// event per message, and acks each only after the host's outcome says it was committed (accepted,
// held) or recognised (duplicate).
//
// Nothing fetched waits in memory beyond maxInFlight. A refusal that is about the host or the
// subscription (overloaded, store down, not active) NAKs the message with a delay and pauses
// fetching for that delay (doubling per refused round, up to 30 s): JetStream keeps the message,
// not us. A message held longer than half its ackWait is kept with +WPI (in progress), so a slow
// commit does not make JetStream hand it to another node meanwhile.

#include "nats/settings.hpp"

#include "wopbridge/connector.hpp"
#include "wopbridge/listener_submit.hpp"
#include "wopbridge/refusal_backoff.hpp"

#include <nats/nats.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace wopbridge::nats {

class consumer_worker : public std::enable_shared_from_this<consumer_worker> {
  public:
    consumer_worker(const wopbridge::host& host, const connector_settings& settings,
                    natsConnection* nc, std::string sub_id, subscription_settings sub);
    ~consumer_worker();

    void start();
    // Stops fetching, waits for outstanding outcomes and their acks until `deadline`, then lets
    // go of the subscription. What is still unacked is redelivered by JetStream after ackWait.
    // Idempotent.
    void stop(std::chrono::steady_clock::time_point deadline);

    const subscription_settings& subscription() const noexcept { return sub_; }

  private:
    using clock = std::chrono::steady_clock;

    struct held {
        natsMsg* msg = nullptr; // owned
        std::string subject;
        clock::time_point progress_at; // send +WPI then
        bool without_payload = false;  // refused as invalid once: submitted again without it
    };

    void run();
    // Creates/updates the consumer (unless createConsumer is false) and binds a pull
    // subscription to it; false when it cannot yet (logged), the caller backs off.
    bool bind(std::chrono::milliseconds retry_in);
    void unbind();
    // One fetch; false when the subscription must be bound again.
    bool fetch_round(std::size_t room);
    void take(natsMsg* msg);
    void submit(std::uint64_t seq);
    // Committed or recognised by the host: the broker may forget it.
    void on_committed(std::uint64_t seq);
    void on_refused(std::uint64_t seq, const std::string& reason, int retry_after_seconds);
    void keep_in_progress();
    void log(wopbridge::log_level level, const std::string& message) const;

    const wopbridge::host& host_;
    const connector_settings settings_;
    natsConnection* const nc_;
    const std::string sub_id_;
    const subscription_settings sub_;

    jsCtx* js_ = nullptr;
    natsSubscription* pull_ = nullptr; // only the worker thread touches it while running
    std::thread thread_;

    // Guards everything below and every operation on a held message (ack, nak, +WPI, destroy),
    // so an outcome arriving on a host thread never races stop() releasing the message.
    std::mutex mu_;
    std::condition_variable cv_;
    std::atomic<bool> stopping_{false};
    bool started_ = false;
    bool stopped_ = false;
    bool released_ = false; // messages and subscription let go: late outcomes do nothing
    std::map<std::uint64_t, held> in_flight_; // by stream sequence
    std::deque<std::uint64_t> resubmit_;      // refused as invalid: submit again without payload
    wopbridge::refusal_backoff backoff_;      // fetching pauses while refused
    int failed_binds_ = 0;
    std::string last_fetch_error_;
};

} // namespace wopbridge::nats
