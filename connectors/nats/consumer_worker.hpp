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
//
// A nats.c message is not reference-counted and its ack goes through the subscription it came
// from (natsMsg -> sub -> JetStream context, connection). So every held message keeps a share of
// that subscription: when a fetch error makes the worker bind again (a broker restart, a consumer
// re-created), the old subscription lives on until the last of its messages is acked, NAKed or let
// go, whichever host thread that happens on.

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
#include <optional>
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

    using subscription_ref = std::shared_ptr<natsSubscription>;

    // Owns a fetched message and a share of the subscription that must outlive it.
    struct held_message {
        held_message(natsMsg* m, subscription_ref s) noexcept : msg(m), from(std::move(s)) {}
        ~held_message() { release(); }
        held_message(const held_message&) = delete;
        held_message& operator=(const held_message&) = delete;
        // Destroys the message first, then lets go of its subscription.
        void release() noexcept;
        void replace(natsMsg* m, subscription_ref s) noexcept;

        natsMsg* msg = nullptr;
        subscription_ref from;
    };

    struct held {
        explicit held(natsMsg* m, subscription_ref s) : message(m, std::move(s)) {}
        natsMsg* msg() const noexcept { return message.msg; }
        held_message message;
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
    void take(natsMsg* msg, const subscription_ref& from);
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
    subscription_ref pull_; // only the worker thread touches it while running
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
    // Since when fetches came back empty. Every few seconds of it the consumer is looked at
    // (check_idle_consumer): a durable that was deleted is bound again (a fetch from it only ever
    // times out), and one that hands nothing out although its stream has messages says why in
    // the log, once per stretch. Not once per stretch for the first: a durable deleted after that
    // look, or a look that timed out on a busy broker, would leave the worker waiting for good.
    std::optional<clock::time_point> idle_since_;
    std::optional<clock::time_point> last_idle_check_;
    bool withheld_reported_ = false;
    // False when the subscription must be bound again.
    bool note_idle_fetch();
    bool check_idle_consumer();
};

} // namespace wopbridge::nats
