#include "support/raw_socket.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace wopbridge::testing {

raw_connection::raw_connection(std::uint16_t port, const char* source) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return;
    }
    if (source != nullptr) {
        sockaddr_in from{};
        from.sin_family = AF_INET;
        if (::inet_pton(AF_INET, source, &from.sin_addr) != 1 ||
            ::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0) {
            ::close(fd);
            return;
        }
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        ::close(fd);
        return;
    }
    fd_ = fd;
}

raw_connection::~raw_connection() {
    if (fd_ >= 0) {
        ::close(fd_);
    }
}

bool raw_connection::send(std::string_view bytes) {
    while (!bytes.empty() && fd_ >= 0) {
        auto n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        if (n <= 0) {
            return false;
        }
        bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return bytes.empty();
}

void raw_connection::shutdown_write() {
    if (fd_ >= 0) {
        ::shutdown(fd_, SHUT_WR);
    }
}

bool raw_connection::read_once(int wait_ms) {
    if (fd_ < 0 || closed_) {
        return false;
    }
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, wait_ms) <= 0) {
        return false;
    }
    char buf[16384];
    auto n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) {
        closed_ = true;
        return false;
    }
    in_.append(buf, static_cast<std::size_t>(n));
    return true;
}

void raw_connection::read_available() {
    while (read_once(0)) {
    }
}

bool raw_connection::read_until(std::string_view needle, std::size_t count,
                                std::chrono::milliseconds limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (count_of(in_, needle) < count && !closed_ && std::chrono::steady_clock::now() < until) {
        read_once(50);
    }
    return count_of(in_, needle) >= count;
}

bool raw_connection::read_until_closed(std::chrono::milliseconds limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (!closed_ && fd_ >= 0 && std::chrono::steady_clock::now() < until) {
        read_once(50);
    }
    return closed_;
}

std::size_t count_of(std::string_view hay, std::string_view needle) {
    std::size_t n = 0;
    for (auto at = hay.find(needle); at != std::string_view::npos;
         at = hay.find(needle, at + needle.size())) {
        ++n;
    }
    return n;
}

} // namespace wopbridge::testing
