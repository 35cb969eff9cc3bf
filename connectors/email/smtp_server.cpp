#include "smtp_server.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <system_error>
#include <unistd.h>

namespace wopbridge::email {
namespace {

std::int64_t steady_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

constexpr int poll_tick_ms = 100;

} // namespace

// One client connection: plain socket, upgraded to TLS after STARTTLS.
struct smtp_server::connection {
    int fd = -1;
    SSL* ssl = nullptr;

    ~connection() {
        if (ssl != nullptr) {
            SSL_shutdown(ssl);
            SSL_free(ssl);
        }
        if (fd >= 0) {
            ::close(fd);
        }
    }

    bool write_all(std::string_view data) {
        while (!data.empty()) {
            ssize_t n;
            if (ssl != nullptr) {
                n = SSL_write(ssl, data.data(), static_cast<int>(data.size()));
                if (n <= 0) {
                    return false;
                }
            } else {
                n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
                if (n < 0 && errno == EINTR) {
                    continue;
                }
                if (n <= 0) {
                    return false;
                }
            }
            data.remove_prefix(static_cast<std::size_t>(n));
        }
        return true;
    }

    // >0 bytes read, 0 = peer closed, -1 = error, -2 = nothing yet (tick elapsed).
    ssize_t read_some(char* buf, std::size_t size, int wait_ms) {
        if (ssl == nullptr || SSL_pending(ssl) == 0) {
            pollfd p{fd, POLLIN, 0};
            int r = ::poll(&p, 1, wait_ms);
            if (r == 0 || (r < 0 && errno == EINTR)) {
                return -2;
            }
            if (r < 0) {
                return -1;
            }
        }
        if (ssl != nullptr) {
            int n = SSL_read(ssl, buf, static_cast<int>(size));
            if (n > 0) {
                return n;
            }
            int err = SSL_get_error(ssl, n);
            if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
                return -2;
            }
            return err == SSL_ERROR_ZERO_RETURN ? 0 : -1;
        }
        ssize_t n = ::recv(fd, buf, size, 0);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
            return -2;
        }
        return n;
    }
};

smtp_server::smtp_server(smtp_server_config config, smtp_hooks hooks, deliver_fn deliver,
                         log_fn log)
    : config_(std::move(config)), hooks_(std::move(hooks)), deliver_(std::move(deliver)),
      log_(std::move(log)) {}

smtp_server::~smtp_server() {
    stop(0);
    std::list<session_thread> ended;
    {
        // Sessions may still be inside deliver(): the host always completes submits, so wait.
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return active_ == 0; });
        ended.swap(sessions_);
    }
    for (auto& s : ended) {
        s.thread.join();
    }
    if (ssl_ctx_ != nullptr) {
        SSL_CTX_free(static_cast<SSL_CTX*>(ssl_ctx_));
    }
}

std::string smtp_server::start() {
    if (!config_.tls_cert_file.empty() && !config_.tls_key_file.empty()) {
        SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
        if (ctx == nullptr) {
            return "cannot create a TLS context";
        }
        SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
        if (SSL_CTX_use_certificate_chain_file(ctx, config_.tls_cert_file.c_str()) != 1 ||
            SSL_CTX_use_PrivateKey_file(ctx, config_.tls_key_file.c_str(), SSL_FILETYPE_PEM) != 1 ||
            SSL_CTX_check_private_key(ctx) != 1) {
            SSL_CTX_free(ctx);
            ERR_clear_error();
            return "cannot load tls.certFile / tls.keyFile";
        }
        ssl_ctx_ = ctx;
        config_.session.tls_available = true;
    }
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    addrinfo* res = nullptr;
    auto port_text = std::to_string(config_.port);
    if (::getaddrinfo(config_.host.empty() ? nullptr : config_.host.c_str(), port_text.c_str(),
                      &hints, &res) != 0 ||
        res == nullptr) {
        return "cannot resolve listen address";
    }
    int fd = ::socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, res->ai_protocol);
    if (fd < 0) {
        ::freeaddrinfo(res);
        return "cannot create socket";
    }
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, res->ai_addr, res->ai_addrlen) != 0 || ::listen(fd, 64) != 0) {
        std::string reason = std::string("cannot listen: ") + std::strerror(errno);
        ::close(fd);
        ::freeaddrinfo(res);
        return reason;
    }
    ::freeaddrinfo(res);
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    bound_port_ = addr.ss_family == AF_INET6
                      ? ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port)
                      : ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
    if (::pipe2(wake_pipe_, O_CLOEXEC) != 0) {
        ::close(fd);
        return "cannot create wake pipe";
    }
    listen_fd_ = fd;
    acceptor_ = std::thread([this] { accept_loop(); });
    return {};
}

bool smtp_server::stop(std::int64_t wait_ms) {
    if (!stopping_.exchange(true)) {
        if (wake_pipe_[1] >= 0) {
            char b = 1;
            [[maybe_unused]] auto n = ::write(wake_pipe_[1], &b, 1);
        }
        if (acceptor_.joinable()) {
            acceptor_.join();
        }
        if (listen_fd_ >= 0) {
            ::close(listen_fd_);
            listen_fd_ = -1;
        }
        for (int& p : wake_pipe_) {
            if (p >= 0) {
                ::close(p);
                p = -1;
            }
        }
    }
    std::unique_lock lock(mu_);
    bool idle = cv_.wait_for(lock, std::chrono::milliseconds(wait_ms > 0 ? wait_ms : 0),
                             [&] { return active_ == 0; });
    if (!idle) {
        abort_ = true;
    }
    return idle;
}

void smtp_server::accept_loop() {
    while (!stopping_) {
        pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_pipe_[0], POLLIN, 0}};
        int r = ::poll(fds, 2, -1);
        if (r < 0) {
            if (errno == EINTR) {
                continue;
            }
            break;
        }
        if (fds[1].revents != 0 || stopping_) {
            break;
        }
        if ((fds[0].revents & POLLIN) == 0) {
            continue;
        }
        int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (client < 0) {
            continue;
        }
        join_finished_sessions();
        std::lock_guard lock(mu_);
        if (active_ >= config_.max_connections) {
            static constexpr std::string_view busy = "421 4.3.2 too many connections\r\n";
            [[maybe_unused]] auto n = ::send(client, busy.data(), busy.size(), MSG_NOSIGNAL);
            ::close(client);
            continue;
        }
        ++active_;
        // The thread takes the lock before it touches its slot, and the lock is held here until
        // the slot holds the thread.
        auto& slot = sessions_.emplace_back();
        try {
            slot.thread = std::thread([this, client, &slot] {
                try {
                    serve(client);
                } catch (...) {
                    log_(3, R"({"event":"smtp.session_failed"})");
                }
                std::lock_guard lock(mu_);
                slot.done = true;
                --active_;
                cv_.notify_all();
            });
        } catch (const std::system_error&) {
            // No thread to be had: the client is told to come back, as when full.
            sessions_.pop_back();
            --active_;
            static constexpr std::string_view busy = "421 4.3.2 cannot take a session now\r\n";
            [[maybe_unused]] auto n = ::send(client, busy.data(), busy.size(), MSG_NOSIGNAL);
            ::close(client);
        }
    }
}

void smtp_server::join_finished_sessions() {
    std::list<session_thread> finished;
    {
        std::lock_guard lock(mu_);
        for (auto it = sessions_.begin(); it != sessions_.end();) {
            auto next = std::next(it);
            if (it->done) {
                finished.splice(finished.end(), sessions_, it);
            }
            it = next;
        }
    }
    for (auto& s : finished) {
        s.thread.join();
    }
}

void smtp_server::serve(int fd) {
    connection conn;
    conn.fd = fd;
    smtp_session session(config_.session, hooks_);
    if (!conn.write_all(session.greeting())) {
        return;
    }
    std::string buffer;
    bool discarding = false;   // inside an overlong line, until its end
    bool discarded_cr = false; // the discarded part ended with CR (its LF may come next)
    char chunk[16 * 1024];
    auto last_activity = steady_ms();
    while (true) {
        // Handle every complete line already buffered (pipelining) before reading again.
        std::size_t start = 0;
        bool close_now = false;
        while (!close_now) {
            auto nl = buffer.find('\n', start);
            if (nl == std::string::npos) {
                break;
            }
            // The terminator is named, not normalised: a bare LF means something else than CRLF.
            const bool crlf = nl > start ? buffer[nl - 1] == '\r' : discarding && discarded_cr;
            std::string_view line(buffer.data() + start, nl - start - (crlf && nl > start ? 1 : 0));
            start = nl + 1;
            const auto end = crlf ? line_end::crlf : line_end::bare_lf;
            if (discarding) {
                discarding = false;
                session.overlong_line_ended(end);
                continue;
            }
            if (line.size() > config_.max_line_bytes) {
                // Arrived whole within one read: as overlong as one that did not.
                auto step = session.on_overlong_line();
                if (!step.reply.empty() && !conn.write_all(step.reply)) {
                    return;
                }
                if (step.close) {
                    return;
                }
                session.overlong_line_ended(end);
                continue;
            }
            auto step = session.on_line(line, end);
            if (step.message_ready) {
                auto result = deliver_(session.take_envelope());
                step = session.finish_message(result);
            }
            if (!step.reply.empty() && !conn.write_all(step.reply)) {
                return;
            }
            if (step.close) {
                return;
            }
            if (step.start_tls) {
                // Anything pipelined after STARTTLS is a protocol violation (RFC 3207 §4.2):
                // drop it.
                buffer.clear();
                start = 0;
                conn.ssl = SSL_new(static_cast<SSL_CTX*>(ssl_ctx_));
                if (conn.ssl == nullptr || SSL_set_fd(conn.ssl, fd) != 1) {
                    return;
                }
                timeval tv{static_cast<time_t>(config_.command_timeout_ms / 1000), 0};
                ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
                if (SSL_accept(conn.ssl) != 1) {
                    ERR_clear_error();
                    log_(1, R"({"event":"smtp.tls_failed"})");
                    return;
                }
                session.tls_started();
                break;
            }
        }
        buffer.erase(0, start);
        // A line at the bound may wait here with its CR, its LF still to come.
        if (buffer.size() > config_.max_line_bytes + 1) {
            discarded_cr = buffer.back() == '\r';
            buffer.clear();
            if (!discarding) {
                discarding = true;
                auto step = session.on_overlong_line();
                if (!step.reply.empty() && !conn.write_all(step.reply)) {
                    return;
                }
                if (step.close) {
                    return;
                }
            }
        }
        if (stopping_ && (!session.in_data() || abort_)) {
            conn.write_all(session.shutdown_reply());
            return;
        }
        auto n = conn.read_some(chunk, sizeof chunk, poll_tick_ms);
        if (n == -2) {
            auto limit = session.in_data() ? config_.data_timeout_ms : config_.command_timeout_ms;
            if (steady_ms() - last_activity > limit) {
                conn.write_all(session.timeout_reply());
                return;
            }
            continue;
        }
        if (n <= 0) {
            return;
        }
        last_activity = steady_ms();
        buffer.append(chunk, static_cast<std::size_t>(n));
    }
}

} // namespace wopbridge::email
