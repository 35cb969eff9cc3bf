#include "queue/redis_client.hpp"

#include <boost/url/parse.hpp>
#include <hiredis/hiredis.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

namespace wopbridge::queue {

namespace {

bool parse_int_in(std::string_view s, int lo, int hi, int& out) {
    int v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || p != s.data() + s.size() || v < lo || v > hi) {
        return false;
    }
    out = v;
    return true;
}

std::string errno_text(const char* what, int err) {
    return std::string(what) + ": " + std::strerror(err);
}

timeval to_timeval(std::chrono::milliseconds ms) {
    const auto n = std::max<long long>(ms.count(), 1);
    return timeval{static_cast<time_t>(n / 1000), static_cast<suseconds_t>((n % 1000) * 1000)};
}

// hiredis writes with write(2), not send(MSG_NOSIGNAL): a peer that has gone would raise SIGPIPE.
// The host ignores it, but a module must not rely on that: block it on this thread around the
// write and discard one it raised (a blocked, thread-directed SIGPIPE stays pending otherwise).
class sigpipe_blocked {
  public:
    sigpipe_blocked() noexcept {
        struct sigaction now {};
        if (::sigaction(SIGPIPE, nullptr, &now) == 0 && now.sa_handler == SIG_IGN) {
            return; // the usual case (wopbridge serve ignores it): nothing to do
        }
        active_ = true;
        sigemptyset(&pipe_);
        sigaddset(&pipe_, SIGPIPE);
        sigset_t pending;
        sigemptyset(&pending);
        ::sigpending(&pending);
        was_pending_ = sigismember(&pending, SIGPIPE) == 1;
        ::pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
        was_blocked_ = sigismember(&old_, SIGPIPE) == 1;
    }
    ~sigpipe_blocked() {
        if (!active_) {
            return;
        }
        if (!was_blocked_ && !was_pending_) {
            sigset_t pending;
            sigemptyset(&pending);
            ::sigpending(&pending);
            if (sigismember(&pending, SIGPIPE) == 1) {
                const timespec now{0, 0};
                ::sigtimedwait(&pipe_, nullptr, &now);
            }
        }
        ::pthread_sigmask(SIG_SETMASK, &old_, nullptr);
    }
    sigpipe_blocked(const sigpipe_blocked&) = delete;
    sigpipe_blocked& operator=(const sigpipe_blocked&) = delete;

  private:
    sigset_t pipe_{};
    sigset_t old_{};
    bool active_ = false;
    bool was_pending_ = false;
    bool was_blocked_ = false;
};

} // namespace

std::optional<redis_url> parse_redis_url(std::string_view text, std::string& error) {
    auto parsed = boost::urls::parse_uri(text);
    if (!parsed) {
        error = "url: not a valid URL";
        return std::nullopt;
    }
    const auto& u = *parsed;
    if (u.scheme() == "rediss") {
        error = "url: rediss:// (TLS) is not supported by this module";
        return std::nullopt;
    }
    if (u.scheme() != "redis") {
        error = "url: the scheme must be redis://";
        return std::nullopt;
    }
    if (u.has_query() || u.has_fragment()) {
        error = "url: query and fragment are not supported";
        return std::nullopt;
    }
    redis_url r;
    r.host = std::string(u.encoded_host().decode());
    if (r.host.size() > 2 && r.host.front() == '[' && r.host.back() == ']') {
        r.host = r.host.substr(1, r.host.size() - 2);
    }
    if (r.host.empty()) {
        error = "url: a host is required";
        return std::nullopt;
    }
    if (u.has_port() && !parse_int_in(u.port(), 1, 65535, r.port)) {
        error = "url: the port must be 1..65535";
        return std::nullopt;
    }
    if (u.has_userinfo()) {
        r.user = std::string(u.encoded_user().decode());
        if (u.has_password()) {
            r.password = std::string(u.encoded_password().decode());
        } else if (!r.user.empty()) {
            // redis://secret@host: the single component is the password (default user).
            r.password = std::move(r.user);
            r.user.clear();
        }
    }
    std::string_view path = u.encoded_path();
    if (!path.empty() && path != "/") {
        if (!parse_int_in(path.substr(1), 0, 1 << 20, r.db)) {
            error = "url: the path must be a database number (/0, /1, ...)";
            return std::nullopt;
        }
    }
    return r;
}

redis_connection::redis_connection() : wake_fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}

redis_connection::~redis_connection() {
    close();
    if (wake_fd_ >= 0) {
        ::close(wake_fd_);
    }
}

void redis_connection::close() noexcept {
    if (ctx_ != nullptr) {
        ::redisFree(ctx_); // closes the socket
        ctx_ = nullptr;
    }
}

void redis_connection::interrupt() noexcept {
    if (wake_fd_ >= 0) {
        const std::uint64_t one = 1;
        [[maybe_unused]] auto n = ::write(wake_fd_, &one, sizeof one);
    }
}

void redis_connection::clear_interrupt() noexcept {
    if (wake_fd_ >= 0) {
        std::uint64_t v = 0;
        [[maybe_unused]] auto n = ::read(wake_fd_, &v, sizeof v);
    }
}

bool redis_connection::interrupt_pending() const noexcept {
    if (wake_fd_ < 0) {
        return false;
    }
    pollfd p{wake_fd_, POLLIN, 0};
    return ::poll(&p, 1, 0) == 1 && (p.revents & POLLIN) != 0;
}

int redis_connection::wait_fd(short events, clock::time_point deadline, std::string& error) {
    for (;;) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count();
        if (left <= 0) {
            error = "timed out";
            return 0;
        }
        pollfd fds[2] = {{ctx_->fd, events, 0}, {wake_fd_, POLLIN, 0}};
        const int n =
            ::poll(fds, wake_fd_ >= 0 ? 2 : 1, static_cast<int>(std::min<long long>(left, 60'000)));
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            error = errno_text("poll", errno);
            return -1;
        }
        if (n == 0) {
            continue;
        }
        if (wake_fd_ >= 0 && (fds[1].revents & POLLIN) != 0) {
            error = "interrupted";
            return -1;
        }
        if ((fds[0].revents & (events | POLLERR | POLLHUP)) != 0) {
            return 1;
        }
    }
}

bool redis_connection::connect(const redis_url& url, std::chrono::milliseconds timeout,
                               std::string& error) {
    close();
    // hiredis' connect cannot be woken: at least do not start one after a stop() asked for none.
    if (interrupt_pending()) {
        error = "connect: interrupted";
        return false;
    }
    const auto deadline = clock::now() + timeout;
    ::redisContext* c = ::redisConnectWithTimeout(url.host.c_str(), url.port, to_timeval(timeout));
    if (c == nullptr) {
        error = "connect: out of memory";
        return false;
    }
    if (c->err != 0) {
        error = std::string("connect: ") + c->errstr; // "Connection refused", a resolver error...
        ::redisFree(c);
        return false;
    }
    ctx_ = c;
    ::fcntl(c->fd, F_SETFD, FD_CLOEXEC); // hiredis 0.14 opens the socket without SOCK_CLOEXEC
    ::redisEnableKeepAlive(c);           // hiredis already set TCP_NODELAY
    bound_reader(*c->reader);

    std::vector<command> hello;
    if (!url.password.empty()) {
        hello.push_back(url.user.empty() ? command{"AUTH", url.password}
                                         : command{"AUTH", url.user, url.password});
    }
    if (url.db != 0) {
        hello.push_back({"SELECT", std::to_string(url.db)});
    }
    if (hello.empty()) {
        return true;
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
    auto replies = pipeline(hello, std::max(left, std::chrono::milliseconds(1)), error);
    if (!replies) {
        return false;
    }
    for (const auto& r : *replies) {
        if (r.is_error()) {
            // The code only ("WRONGPASS", "NOAUTH", "ERR"): the text may echo arguments.
            error = "handshake refused: " + std::string(r.error_code());
            close();
            return false;
        }
    }
    return true;
}

bool redis_connection::flush(clock::time_point deadline, std::string& error) {
    // The socket is blocking (hiredis' blocking context): each write is bounded by the send
    // timeout set from `deadline`; commands are small, so this rarely waits at all.
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
    if (left.count() <= 0) {
        error = "write: timed out";
        return false;
    }
    ::redisSetTimeout(ctx_, to_timeval(left));
    sigpipe_blocked guard;
    int done = 0;
    while (done == 0) {
        if (clock::now() >= deadline) { // after a partial write cut short by the send timeout
            error = "write: timed out";
            return false;
        }
        errno = 0;
        if (::redisBufferWrite(ctx_, &done) != REDIS_OK) {
            error = errno == EAGAIN || errno == EWOULDBLOCK
                        ? std::string("write: timed out")
                        : std::string("write: ") + ctx_->errstr;
            return false;
        }
    }
    return true;
}

std::optional<resp_value> redis_connection::read_reply(clock::time_point deadline,
                                                       std::string& error) {
    for (;;) {
        void* reply = nullptr;
        if (::redisGetReplyFromReader(ctx_, &reply) != REDIS_OK) {
            error = "protocol: " + reader_error(*ctx_->reader);
            return std::nullopt;
        }
        if (reply != nullptr) {
            resp_value v = value_of(*static_cast<const ::redisReply*>(reply));
            ::freeReplyObject(reply);
            return v;
        }
        if (!pending_within_limits(*ctx_->reader, error)) {
            error = "protocol: " + error;
            return std::nullopt;
        }
        // Readable first, so hiredis' one read(2) per redisBufferRead never blocks.
        if (wait_fd(POLLIN, deadline, error) != 1) {
            error = "read: " + error;
            return std::nullopt;
        }
        if (::redisBufferRead(ctx_) != REDIS_OK) {
            error = ctx_->err == REDIS_ERR_EOF ? std::string("connection closed by the server")
                                               : std::string("read: ") + ctx_->errstr;
            return std::nullopt;
        }
    }
}

std::optional<std::vector<resp_value>>
redis_connection::pipeline(const std::vector<command>& commands, std::chrono::milliseconds timeout,
                           std::string& error) {
    if (ctx_ == nullptr) {
        error = "not connected";
        return std::nullopt;
    }
    const auto deadline = clock::now() + timeout;
    std::vector<const char*> argv;
    std::vector<std::size_t> lens;
    for (const auto& c : commands) {
        argv.clear();
        lens.clear();
        for (const auto& a : c) {
            argv.push_back(a.data());
            lens.push_back(a.size()); // binary-safe: hiredis takes the lengths, not NULs
        }
        if (::redisAppendCommandArgv(ctx_, static_cast<int>(argv.size()), argv.data(),
                                     lens.data()) != REDIS_OK) {
            error = std::string("command: ") + ctx_->errstr;
            close();
            return std::nullopt;
        }
    }
    if (!flush(deadline, error)) {
        close();
        return std::nullopt;
    }
    std::vector<resp_value> replies;
    replies.reserve(commands.size());
    for (std::size_t i = 0; i < commands.size(); ++i) {
        auto r = read_reply(deadline, error);
        if (!r) {
            close();
            return std::nullopt;
        }
        replies.push_back(std::move(*r));
    }
    return replies;
}

std::optional<resp_value>
redis_connection::run(const command& cmd, std::chrono::milliseconds timeout, std::string& error) {
    auto r = pipeline({cmd}, timeout, error);
    if (!r) {
        return std::nullopt;
    }
    return std::move(r->front());
}

} // namespace wopbridge::queue
