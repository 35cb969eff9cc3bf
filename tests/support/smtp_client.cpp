#include "support/smtp_client.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

namespace wopbridge::testing {
namespace {

class session {
public:
    explicit session(int fd) : fd_(fd) {}
    ~session() { ::close(fd_); }

    bool send_all(const std::string& data) {
        std::size_t off = 0;
        while (off < data.size()) {
            ssize_t n = ::send(fd_, data.data() + off, data.size() - off, MSG_NOSIGNAL);
            if (n <= 0) {
                return false;
            }
            off += static_cast<std::size_t>(n);
        }
        return true;
    }

    // Reads one (possibly multi-line) reply; returns its code, 0 on EOF/timeout.
    int reply(std::string& last) {
        for (;;) {
            std::string line;
            if (!read_line(line)) {
                return 0;
            }
            last = line;
            if (line.size() < 3) {
                return 0;
            }
            if (line.size() == 3 || line[3] == ' ') {
                return std::stoi(line.substr(0, 3));
            }
        }
    }

private:
    bool read_line(std::string& line) {
        for (;;) {
            auto eol = buf_.find("\r\n");
            if (eol != std::string::npos) {
                line = buf_.substr(0, eol);
                buf_.erase(0, eol + 2);
                return true;
            }
            char tmp[1024];
            ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
            if (n <= 0) {
                return false;
            }
            buf_.append(tmp, static_cast<std::size_t>(n));
        }
    }

    int fd_;
    std::string buf_;
};

} // namespace

smtp_result smtp_send(std::uint16_t port, const std::string& from, const std::string& to,
                      const std::string& message_id, const std::string& text, int timeout_ms) {
    smtp_result out;
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        out.connect_error = errno == 0 ? ECONNREFUSED : errno;
        ::close(fd);
        return out;
    }
    session s(fd);
    auto step = [&](const std::string& cmd, int want) {
        if (!cmd.empty() && !s.send_all(cmd)) {
            return false;
        }
        return s.reply(out.last_reply) == want;
    };
    if (!step("", 220) || !step("EHLO client.test\r\n", 250) ||
        !step("MAIL FROM:<" + from + ">\r\n", 250) || !step("RCPT TO:<" + to + ">\r\n", 250) ||
        !step("DATA\r\n", 354)) {
        return out;
    }
    std::string msg = "From: <" + from + ">\r\nTo: <" + to + ">\r\nSubject: crash test\r\n" +
                      "Message-ID: <" + message_id + ">\r\n\r\n" + text + "\r\n.\r\n";
    if (!s.send_all(msg)) {
        return out;
    }
    out.final_code = s.reply(out.last_reply);
    if (out.final_code != 0) {
        s.send_all("QUIT\r\n");
    }
    return out;
}

} // namespace wopbridge::testing
