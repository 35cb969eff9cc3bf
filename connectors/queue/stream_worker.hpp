#pragma once
// One subscription's consumer: a reader thread (XREADGROUP / XAUTOCLAIM on its own connection)
// and an acker thread (XACK on a second connection, so acks never wait behind a blocking read).
//
// A message is acked only after the host's submit outcome says it was committed (accepted, held)
// or recognised (duplicate). A refused or failed submit leaves it in the group's pending list; the
// reader re-reads its own pending entries after retryDelayMs (or the host's Retry-After), and
// after a reconnect, so nothing is lost and dedup in the host absorbs repeats.

#include "queue/redis_client.hpp"
#include "queue/settings.hpp"

#include "wopbridge/connector.hpp"
#include "wopbridge/listener_submit.hpp"
#include "wopbridge/refusal_backoff.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace wopbridge::queue {

// One stream entry as read: id and field/value pairs (nullopt when the entry was deleted while
// pending).
struct stream_entry {
    std::string id;
    std::optional<std::vector<std::pair<std::string, std::string>>> fields;
};

// Entries of an XREADGROUP reply for `stream` (nullopt: not the shape XREADGROUP answers).
std::optional<std::vector<stream_entry>> entries_of_read(const resp_value& reply);
// XAUTOCLAIM reply: next cursor and the claimed entries.
std::optional<std::pair<std::string, std::vector<stream_entry>>>
entries_of_autoclaim(const resp_value& reply);

// The TriggerEvent content for one entry: {"stream":{"topic","offset","key"?,"message"}}.
std::string event_content(const subscription_settings& sub, const stream_entry& entry,
                          std::size_t max_message_bytes);

class stream_worker : public std::enable_shared_from_this<stream_worker> {
  public:
    stream_worker(const wopbridge::host& host, connector_settings settings, std::string sub_id,
                  subscription_settings sub);
    ~stream_worker();

    void start();
    // Stops reading, waits for outstanding outcomes and their acks until `deadline`, then
    // closes both connections. Idempotent.
    void stop(std::chrono::steady_clock::time_point deadline);

    const subscription_settings& subscription() const noexcept { return sub_; }

  private:
    using clock = std::chrono::steady_clock;

    void read_loop();
    void ack_loop();
    // Connects and creates the group; `retry_in` is only logged (the caller backs off).
    bool connect_reader(std::chrono::milliseconds retry_in);
    // One round of reading; false when the connection failed (the caller backs off).
    bool read_round(std::size_t room);
    void submit(const stream_entry& entry);
    // Committed or recognised by the host: safe to XACK.
    void on_committed(const std::string& id);
    void on_refused(const std::string& id, const std::string& reason, int retry_after_seconds);
    void log(wopbridge::log_level level, const std::string& message) const;
    std::chrono::milliseconds command_timeout() const;

    const wopbridge::host& host_;
    const connector_settings settings_;
    const std::string sub_id_;
    const subscription_settings sub_;

    redis_connection reader_conn_;
    redis_connection ack_conn_;
    std::thread reader_;
    std::thread acker_;

    std::mutex mu_;
    std::condition_variable cv_;
    std::atomic<bool> stop_reading_{false};
    std::atomic<bool> stop_acking_{false};
    bool started_ = false;
    bool stopped_ = false;
    std::set<std::string> in_flight_; // submitted, not yet acked (or refused)
    std::size_t awaiting_outcome_ = 0;
    std::deque<std::string> ack_queue_;
    std::set<std::string> minimal_; // refused as "invalid": submitted again without the payload
    std::optional<clock::time_point> rescan_at_; // re-read our pending entries then
    clock::time_point paused_until_{};           // no new reads before (refused or Retry-After)
    wopbridge::refusal_backoff backoff_;         // next re-read delay; doubles per refused round

    // Reader-thread state.
    bool scanning_ = true; // reading our own pending entries (history) before new ones
    std::string scan_cursor_ = "0";
    // The newest entry id read as new (">"), reader thread only: a group that vanished (a Redis
    // restart without persistence, a deleted group) is created again after it, not at "$", so
    // entries added while the reader was reconnecting are not skipped.
    std::string last_read_id_;
    std::string claim_cursor_ = "0-0";
    clock::time_point next_claim_at_{};
    bool claim_supported_ = true; // false on a Redis without XAUTOCLAIM (< 6.2)
    int failed_connects_ = 0;      // consecutive, since the last successful connect
};

} // namespace wopbridge::queue
