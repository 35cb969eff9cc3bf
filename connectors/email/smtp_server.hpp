#pragma once
// The SMTP listener: plain POSIX sockets, one accept thread and one thread per connection (capped),
// optional STARTTLS through OpenSSL. Protocol decisions live in smtp_session; the module supplies
// hooks (recipient lookup, capacity, auth) and `deliver`, which commits a message and blocks until
// every submit outcome is known.

#include "smtp_session.hpp"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace wopbridge::email {

struct smtp_server_config {
    std::string host = "127.0.0.1";
    std::uint16_t port = 2525;
    smtp_config session;
    std::size_t max_connections = 32;
    std::int64_t command_timeout_ms = 300'000;
    std::int64_t data_timeout_ms = 600'000;
    std::size_t max_line_bytes = 64 * 1024;
    std::string tls_cert_file; // both set = STARTTLS offered
    std::string tls_key_file;
};

class smtp_server {
  public:
    using deliver_fn = std::function<smtp_session::commit_result(smtp_envelope&&)>;
    using log_fn = std::function<void(int level, const std::string& json_line)>;

    smtp_server(smtp_server_config config, smtp_hooks hooks, deliver_fn deliver, log_fn log);
    ~smtp_server();
    smtp_server(const smtp_server&) = delete;
    smtp_server& operator=(const smtp_server&) = delete;

    // Binds and starts accepting. Returns "" or a one-line reason.
    std::string start();
    std::uint16_t bound_port() const noexcept { return bound_port_; }
    // Stops accepting, tells idle sessions 421 and waits for sessions for wait_ms. Sessions still
    // reading a message at the deadline are then cut off (the sender retries; nothing was
    // acknowledged). Returns false when some session was still busy at the deadline.
    bool stop(std::int64_t wait_ms);

  private:
    struct connection;
    // A session's thread, joined (never detached): a thread still returning through this
    // module's code when the host dlcloses it would crash the host.
    struct session_thread {
        std::thread thread;
        bool done = false;
    };
    void accept_loop();
    void serve(int fd);
    void join_finished_sessions();

    smtp_server_config config_;
    smtp_hooks hooks_;
    deliver_fn deliver_;
    log_fn log_;
    int listen_fd_ = -1;
    int wake_pipe_[2] = {-1, -1};
    std::uint16_t bound_port_ = 0;
    std::atomic<bool> stopping_{false};
    std::atomic<bool> abort_{false}; // past the stop deadline: close even mid-DATA
    std::thread acceptor_;
    std::mutex mu_;
    std::condition_variable cv_;
    std::size_t active_ = 0;
    std::list<session_thread> sessions_; // guarded by mu_
    void* ssl_ctx_ = nullptr;            // SSL_CTX*, kept opaque to keep OpenSSL out of the header
};

} // namespace wopbridge::email
