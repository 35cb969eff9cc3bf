#pragma once
// A small blocking Redis client on hiredis (libhiredis-dev): connect with a timeout, optional
// AUTH/SELECT, pipelined commands (binary-safe argv), replies read with a deadline. One
// connection is used by one thread at a time; interrupt() may be called from any thread to cut a
// blocking read short. hiredis formats commands and parses replies; the waiting is ours (poll on
// the context's socket and an eventfd), so a blocking read can be interrupted.

#include "queue/redis_reply.hpp"

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

struct redisContext;

namespace wopbridge::queue {

// redis://[[user]:password@]host[:port][/db]
struct redis_url {
    std::string host = "127.0.0.1";
    int port = 6379;
    std::string user;     // empty: AUTH with the password only (default user)
    std::string password; // empty: no AUTH
    int db = 0;
};

// nullopt with a one-line reason (never containing the password) when the URL is not usable.
std::optional<redis_url> parse_redis_url(std::string_view text, std::string& error);

using command = std::vector<std::string>;

class redis_connection {
  public:
    redis_connection();
    ~redis_connection();
    redis_connection(const redis_connection&) = delete;
    redis_connection& operator=(const redis_connection&) = delete;

    // Connects, authenticates and selects the database. Any previous connection is closed.
    bool connect(const redis_url& url, std::chrono::milliseconds timeout, std::string& error);
    bool connected() const noexcept { return ctx_ != nullptr; }
    void close() noexcept;

    // Sends every command in one write, then reads one reply per command. Error replies are
    // values (check is_error()); a transport or protocol failure closes the connection and
    // returns nullopt with `error` set. `timeout` bounds the whole exchange.
    std::optional<std::vector<resp_value>> pipeline(const std::vector<command>& commands,
                                                    std::chrono::milliseconds timeout,
                                                    std::string& error);
    std::optional<resp_value> run(const command& cmd, std::chrono::milliseconds timeout,
                                  std::string& error);

    // Wakes a thread blocked in pipeline()/run(); that call fails with "interrupted" and closes
    // the connection (the reply it waited for is lost: callers rely on Redis' pending lists).
    void interrupt() noexcept;
    // Clears a pending interrupt (call before reusing the connection after a wake-up).
    void clear_interrupt() noexcept;

  private:
    using clock = std::chrono::steady_clock;
    bool flush(clock::time_point deadline, std::string& error);
    std::optional<resp_value> read_reply(clock::time_point deadline, std::string& error);
    // 1 = ready, 0 = deadline passed, -1 = interrupted or failed (error set)
    int wait_fd(short events, clock::time_point deadline, std::string& error);
    bool interrupt_pending() const noexcept;

    ::redisContext* ctx_ = nullptr;
    int wake_fd_ = -1; // eventfd
};

} // namespace wopbridge::queue
