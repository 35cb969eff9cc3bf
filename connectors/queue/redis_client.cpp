#include "queue/redis_client.hpp"

#include <boost/url/parse.hpp>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
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
    if (fd_ >= 0) {
        ::close(fd_);
        fd_ = -1;
    }
    parser_.reset();
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

int redis_connection::wait_fd(short events, clock::time_point deadline, std::string& error) {
    for (;;) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count();
        if (left <= 0) {
            error = "timed out";
            return 0;
        }
        pollfd fds[2] = {{fd_, events, 0}, {wake_fd_, POLLIN, 0}};
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
    const auto deadline = clock::now() + timeout;
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    const std::string port = std::to_string(url.port);
    if (const int rc = ::getaddrinfo(url.host.c_str(), port.c_str(), &hints, &res); rc != 0) {
        error = std::string("resolve: ") + ::gai_strerror(rc);
        return false;
    }
    error = "connect: no address";
    for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
        const int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                                ai->ai_protocol);
        if (fd < 0) {
            error = errno_text("socket", errno);
            continue;
        }
        fd_ = fd;
        if (::connect(fd, ai->ai_addr, ai->ai_addrlen) != 0 && errno != EINPROGRESS) {
            error = errno_text("connect", errno);
            close();
            continue;
        }
        if (wait_fd(POLLOUT, deadline, error) != 1) {
            error = "connect: " + error;
            close();
            continue;
        }
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err != 0) {
            error = errno_text("connect", err);
            close();
            continue;
        }
        const int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
        break;
    }
    ::freeaddrinfo(res);
    if (fd_ < 0) {
        return false;
    }

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

bool redis_connection::write_all(std::string_view bytes, clock::time_point deadline,
                                 std::string& error) {
    while (!bytes.empty()) {
        const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        if (n > 0) {
            bytes.remove_prefix(static_cast<std::size_t>(n));
            continue;
        }
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (wait_fd(POLLOUT, deadline, error) != 1) {
                error = "write: " + error;
                return false;
            }
            continue;
        }
        error = errno_text("write", errno);
        return false;
    }
    return true;
}

std::optional<resp_value> redis_connection::read_reply(clock::time_point deadline,
                                                       std::string& error) {
    char buf[64 * 1024];
    for (;;) {
        resp_value v;
        switch (parser_.next(v, error)) {
        case resp_parser::state::value:
            return v;
        case resp_parser::state::error:
            error = "protocol: " + error;
            return std::nullopt;
        case resp_parser::state::incomplete:
            break;
        }
        const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
        if (n > 0) {
            parser_.feed(std::string_view(buf, static_cast<std::size_t>(n)));
            continue;
        }
        if (n == 0) {
            error = "connection closed by the server";
            return std::nullopt;
        }
        if (errno == EINTR) {
            continue;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            if (wait_fd(POLLIN, deadline, error) != 1) {
                error = "read: " + error;
                return std::nullopt;
            }
            continue;
        }
        error = errno_text("read", errno);
        return std::nullopt;
    }
}

std::optional<std::vector<resp_value>>
redis_connection::pipeline(const std::vector<command>& commands, std::chrono::milliseconds timeout,
                           std::string& error) {
    if (fd_ < 0) {
        error = "not connected";
        return std::nullopt;
    }
    const auto deadline = clock::now() + timeout;
    std::string out;
    for (const auto& c : commands) {
        append_command(out, c);
    }
    if (!write_all(out, deadline, error)) {
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
