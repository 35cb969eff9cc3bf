#pragma once
// A raw TCP client on 127.0.0.1 for tests that must send exact bytes (request smuggling, bare LF
// in SMTP) and observe what the server does with the connection: every read is bounded by a
// deadline, never a fixed sleep.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace wopbridge::testing {

class raw_connection {
public:
    // `source`: a loopback address to connect from (e.g. "127.0.0.2", to be another peer).
    explicit raw_connection(std::uint16_t port, const char* source = nullptr);
    ~raw_connection();
    raw_connection(const raw_connection&) = delete;
    raw_connection& operator=(const raw_connection&) = delete;

    bool connected() const noexcept { return fd_ >= 0; }
    // Sends all of `bytes`; false when the peer stopped reading and closed first.
    bool send(std::string_view bytes);
    void shutdown_write();

    // Everything read so far.
    const std::string& received() const noexcept { return in_; }
    // True once the peer closed its side (EOF or reset).
    bool peer_closed() const noexcept { return closed_; }

    // Reads until `needle` has arrived `count` times in total, the peer closed, or `limit` passed;
    // returns whether the needle count was reached.
    bool read_until(std::string_view needle, std::size_t count, std::chrono::milliseconds limit);
    // Reads what has arrived, without waiting.
    void read_available();
    // Reads until the peer closes or `limit` passes; returns peer_closed().
    bool read_until_closed(std::chrono::milliseconds limit);

private:
    bool read_once(int wait_ms);
    int fd_ = -1;
    std::string in_;
    bool closed_ = false;
};

// How many times `needle` occurs in `hay`.
std::size_t count_of(std::string_view hay, std::string_view needle);

} // namespace wopbridge::testing
