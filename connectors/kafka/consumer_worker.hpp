#pragma once
// One subscription's consumer: a member of a Kafka consumer group (its own librdkafka handle and
// thread) that polls the group's partitions, submits one event per record and commits a
// partition's offset only up to the first record the host has not yet committed (or recognised).
//
// Nothing polled waits in memory beyond maxInFlight: at the bound, while the host has no capacity,
// or after a refusal (for retryDelayMs, doubling per refused round up to 30 s) the assigned
// partitions are paused (rd_kafka_pause_partitions) and resumed by the same loop later. A refused
// record stays held and is submitted again when the pause ends. A rebalance waits up to
// revokeGraceMs for the outcomes of the revoked partitions, commits what is contiguous and lets
// the rest go: the next owner reads it again and the host's dedup answers "duplicate".

#include "kafka/offset_tracker.hpp"
#include "kafka/settings.hpp"

#include "wopbridge/connector.hpp"
#include "wopbridge/listener_submit.hpp"
#include "wopbridge/refusal_backoff.hpp"

#include <librdkafka/rdkafka.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>

namespace wopbridge::kafka {

// While every broker is down, how often the worker asks one (consumer_worker::probe_brokers).
inline constexpr auto broker_probe_every = std::chrono::milliseconds(500);

class consumer_worker : public std::enable_shared_from_this<consumer_worker> {
  public:
    consumer_worker(const wopbridge::host& host, const connector_settings& settings,
                    std::string sub_id, subscription_settings sub);
    ~consumer_worker();

    // Makes the client and subscribes (it connects in the background); false with a one-line
    // reason (no secret, no path) when the client refuses the settings.
    bool start(std::string& error);
    // Stops polling, waits for outstanding outcomes until `deadline`, commits what is contiguous,
    // leaves the group and destroys the client. Idempotent.
    void stop(std::chrono::steady_clock::time_point deadline);

    const subscription_settings& subscription() const noexcept { return sub_; }

    // librdkafka callbacks (through trampolines in consumer_worker.cpp).
    void on_rebalance(rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* parts);
    void on_error(int err, const char* reason);
    void on_commit(rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* offsets);
    void on_log(int level, const char* facility, const char* line);

  private:
    using clock = std::chrono::steady_clock;
    using partition_key = std::pair<std::string, std::int32_t>;

    struct held {
        std::string topic;
        std::int32_t partition = 0;
        std::int64_t offset = 0;
        std::optional<std::string> key;
        std::string data;      // empty when oversize
        bool oversize = false; // above maxMessageBytes: submitted without payload
        bool without_payload = false;
        bool waiting = false; // refused: submitted again at retry_at
        clock::time_point retry_at{};
    };

    struct partition_state {
        offset_tracker offsets;
        std::int64_t sent = -1;      // last offset a commit was sent for
        std::int64_t confirmed = -1; // last offset the group confirmed
    };

    void run();
    void take(const rd_kafka_message_t* m);
    void submit(std::uint64_t id);
    // Committed or recognised by the host: the broker may forget it.
    void on_committed(std::uint64_t id);
    void on_refused(std::uint64_t id, const std::string& reason, int retry_after_seconds);
    void resubmit_due();
    // Sends the commits that moved; only the partitions in `only` when given.
    void commit(bool sync, const std::set<partition_key>* only = nullptr);
    void set_paused(bool paused);
    void probe_brokers();
    void close_client();
    void log(wopbridge::log_level level, const std::string& message) const;

    const wopbridge::host& host_;
    const connector_settings settings_;
    const std::string sub_id_;
    const subscription_settings sub_;

    rd_kafka_t* rk_ = nullptr;
    // To wake a poll in progress; guarded by mu_, since host threads yield it while the poll
    // thread may be closing the client.
    rd_kafka_queue_t* consumer_queue_ = nullptr;
    std::thread thread_;

    // Guards held_, parts_ and the pause/refusal state: outcomes arrive on host threads.
    std::mutex mu_;
    std::condition_variable cv_;
    std::atomic<bool> stopping_{false};
    clock::time_point deadline_{};
    bool started_ = false;
    bool stopped_ = false;
    bool released_ = false; // late outcomes do nothing
    std::uint64_t next_id_ = 1;
    std::map<std::uint64_t, held> held_; // polled, not yet committed in the bridge
    std::map<partition_key, partition_state> parts_;
    wopbridge::refusal_backoff backoff_; // partitions pause while refused
    bool cooperative_ = false;

    // Poll thread only.
    bool paused_ = false;
    clock::time_point full_since_{}; // at the in-flight bound since
    bool down_ = false;
    clock::time_point next_probe_{};
    clock::time_point next_commit_{};

    mutable std::mutex log_mu_;
    std::string last_error_; // the last client error or log line reported (no repeats)
};

} // namespace wopbridge::kafka
