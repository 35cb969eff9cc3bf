#include "support/http_test_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace wopbridge::testing {

namespace {

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

std::string trim(const std::string& s) {
    auto b = s.find_first_not_of(" \t\r\n");
    auto e = s.find_last_not_of(" \t\r\n");
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

const char* reason_phrase(int status) {
    switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Status";
    }
}

// Reads one request; false on a malformed or closed connection.
bool read_request(int fd, http_request& req) {
    std::string buf;
    char chunk[4096];
    std::size_t header_end = std::string::npos;
    while ((header_end = buf.find("\r\n\r\n")) == std::string::npos) {
        ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
        if (n <= 0 || buf.size() > 1 << 20) {
            return false;
        }
        buf.append(chunk, static_cast<std::size_t>(n));
    }
    std::string head = buf.substr(0, header_end);
    std::size_t line_end = head.find("\r\n");
    std::string request_line = head.substr(0, line_end);
    auto sp1 = request_line.find(' ');
    auto sp2 = request_line.find(' ', sp1 + 1);
    if (sp1 == std::string::npos || sp2 == std::string::npos) {
        return false;
    }
    req.method = request_line.substr(0, sp1);
    req.target = request_line.substr(sp1 + 1, sp2 - sp1 - 1);
    std::size_t pos = line_end == std::string::npos ? head.size() : line_end + 2;
    while (pos < head.size()) {
        std::size_t e = head.find("\r\n", pos);
        std::string line = head.substr(pos, e == std::string::npos ? std::string::npos : e - pos);
        auto colon = line.find(':');
        if (colon != std::string::npos) {
            req.headers[lower(line.substr(0, colon))] = trim(line.substr(colon + 1));
        }
        if (e == std::string::npos) {
            break;
        }
        pos = e + 2;
    }
    std::size_t length = 0;
    if (auto cl = req.header("content-length"); !cl.empty()) {
        length = std::stoul(cl);
    }
    req.body = buf.substr(header_end + 4);
    while (req.body.size() < length) {
        ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
        if (n <= 0) {
            return false;
        }
        req.body.append(chunk, static_cast<std::size_t>(n));
    }
    req.body.resize(length);
    return true;
}

void send_all(int fd, const std::string& data) {
    std::size_t off = 0;
    while (off < data.size()) {
        ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
        if (n <= 0) {
            return;
        }
        off += static_cast<std::size_t>(n);
    }
}

} // namespace

http_test_server::http_test_server(handler h, std::uint16_t port) : handler_(std::move(h)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listen_fd_ < 0) {
        throw std::runtime_error("socket");
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listen_fd_, 512) != 0) {
        throw std::runtime_error("bind/listen");
    }
    socklen_t len = sizeof addr;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
}

http_test_server::~http_test_server() {
    stop();
}

void http_test_server::stop() {
    {
        std::lock_guard lock(mu_);
        if (stopping_) {
            return;
        }
        stopping_ = true;
    }
    cv_.notify_all();
    ::shutdown(listen_fd_, SHUT_RDWR);
    if (acceptor_.joinable()) {
        acceptor_.join();
    }
    ::close(listen_fd_);
    std::vector<std::thread> conns;
    {
        std::lock_guard lock(mu_);
        conns.swap(connections_);
    }
    for (auto& t : conns) {
        t.join();
    }
}

std::vector<http_request> http_test_server::requests() const {
    std::lock_guard lock(mu_);
    return requests_;
}

void http_test_server::accept_loop() {
    while (true) {
        pollfd p{listen_fd_, POLLIN, 0};
        ::poll(&p, 1, -1);
        {
            std::lock_guard lock(mu_);
            if (stopping_) {
                return;
            }
        }
        int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) {
            continue;
        }
        std::lock_guard lock(mu_);
        connections_.emplace_back([this, fd] { serve(fd); });
    }
}

void http_test_server::serve(int fd) {
    http_request req;
    if (read_request(fd, req)) {
        {
            std::lock_guard lock(mu_);
            requests_.push_back(req);
        }
        http_response resp = handler_(req);
        if (resp.delay.count() > 0) {
            std::unique_lock lock(mu_);
            cv_.wait_for(lock, resp.delay, [this] { return stopping_; });
        }
        std::string out = "HTTP/1.1 " + std::to_string(resp.status) + " " + reason_phrase(resp.status) +
                          "\r\nContent-Length: " + std::to_string(resp.body.size()) +
                          "\r\nConnection: close\r\n";
        for (const auto& [k, v] : resp.headers) {
            out += k + ": " + v + "\r\n";
        }
        out += "\r\n" + resp.body;
        send_all(fd, out);
    }
    ::shutdown(fd, SHUT_WR);
    ::close(fd);
}

fake_runs_host::fake_runs_host()
    : server_([this](const http_request& req) {
          std::lock_guard lock(mu_);
          if (!script_.empty()) {
              auto r = script_.front();
              script_.pop_front();
              return r;
          }
          if (req.method != "POST" || req.target != "/v1/runs") {
              return http_response{404, {{"Content-Type", "application/json"}},
                                   R"({"error":"not_found","message":"no route"})"};
          }
          const std::string key = req.header("idempotency-key");
          std::string run_id;
          bool replay = false;
          if (!key.empty() && runs_by_key_.count(key)) {
              run_id = runs_by_key_[key];
              replay = true;
          } else {
              run_id = "up_run_" + std::to_string(next_++);
              if (!key.empty()) {
                  runs_by_key_[key] = run_id;
              }
          }
          http_response r{201, {{"Content-Type", "application/json"}},
                          R"({"runId":")" + run_id + R"(","status":"running"})"};
          if (replay) {
              r.headers.emplace_back("openwop-Idempotent-Replay", "true");
          }
          return r;
      }) {}

void fake_runs_host::script(http_response r) {
    std::lock_guard lock(mu_);
    script_.push_back(std::move(r));
}

int fake_runs_host::runs_created() const {
    std::lock_guard lock(mu_);
    return next_ - 1;
}

} // namespace wopbridge::testing
