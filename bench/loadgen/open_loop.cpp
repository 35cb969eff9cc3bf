#include "open_loop.hpp"

#include <curl/curl.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace wopbridge::bench {

namespace {

using steady = std::chrono::steady_clock;

std::uint64_t ns_since(steady::time_point t0, steady::time_point t) {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(t - t0).count());
}

struct transfer {
    CURL* easy = nullptr;
    std::size_t index = 0;
    std::uint64_t scheduled_ns = 0; // since start
    std::string body;
};

std::size_t on_body(char* data, std::size_t size, std::size_t n, void* user) {
    auto* t = static_cast<transfer*>(user);
    std::size_t len = size * n;
    if (t->body.size() < 1024) {
        t->body.append(data, std::min(len, 1024 - t->body.size()));
    }
    return len;
}

struct driver {
    const open_loop_options& opts;
    const request_set& requests;
    const response_observer& observe;
    open_loop_result result;

    CURLM* multi = nullptr;
    int epfd = -1;
    int sched_fd = -1; // the next scheduled send
    int curl_fd = -1;  // libcurl's timeout
    std::vector<transfer*> idle;
    std::size_t next = 0;
    std::size_t in_flight = 0;
    steady::time_point start;
    double start_wall_ms = 0;
    double interval_ns = 0;

    driver(const open_loop_options& o, const request_set& r, const response_observer& obs)
        : opts(o), requests(r), observe(obs) {}

    ~driver() {
        for (auto* t : idle) {
            curl_easy_cleanup(t->easy);
            delete t;
        }
        if (multi) {
            curl_multi_cleanup(multi);
        }
        for (int fd : {epfd, sched_fd, curl_fd}) {
            if (fd >= 0) {
                ::close(fd);
            }
        }
    }

    static void arm(int fd, std::uint64_t ns_from_now) {
        itimerspec its{};
        if (ns_from_now == 0) {
            ns_from_now = 1; // 0 would disarm
        }
        its.it_value.tv_sec = static_cast<time_t>(ns_from_now / 1000000000ull);
        its.it_value.tv_nsec = static_cast<long>(ns_from_now % 1000000000ull);
        timerfd_settime(fd, 0, &its, nullptr);
    }
    static void disarm(int fd) {
        itimerspec its{};
        timerfd_settime(fd, 0, &its, nullptr);
    }

    static int on_socket(CURL*, curl_socket_t s, int what, void* user, void*) {
        auto* d = static_cast<driver*>(user);
        epoll_event ev{};
        ev.data.fd = s;
        if (what == CURL_POLL_REMOVE) {
            epoll_ctl(d->epfd, EPOLL_CTL_DEL, s, nullptr);
            return 0;
        }
        ev.events = (what & CURL_POLL_IN ? EPOLLIN : 0u) | (what & CURL_POLL_OUT ? EPOLLOUT : 0u);
        if (epoll_ctl(d->epfd, EPOLL_CTL_MOD, s, &ev) != 0) {
            epoll_ctl(d->epfd, EPOLL_CTL_ADD, s, &ev);
        }
        return 0;
    }

    static int on_timer(CURLM*, long timeout_ms, void* user) {
        auto* d = static_cast<driver*>(user);
        if (timeout_ms < 0) {
            disarm(d->curl_fd);
        } else {
            arm(d->curl_fd, static_cast<std::uint64_t>(timeout_ms) * 1000000ull);
        }
        return 0;
    }

    std::uint64_t scheduled_ns(std::size_t i) const {
        return static_cast<std::uint64_t>(static_cast<double>(i) * interval_ns);
    }

    void launch(std::size_t i, std::uint64_t now_ns) {
        transfer* t;
        if (!idle.empty()) {
            t = idle.back();
            idle.pop_back();
        } else {
            t = new transfer;
            t->easy = curl_easy_init();
            curl_easy_setopt(t->easy, CURLOPT_URL, opts.url.c_str());
            curl_easy_setopt(t->easy, CURLOPT_POST, 1L);
            curl_easy_setopt(t->easy, CURLOPT_WRITEFUNCTION, on_body);
            curl_easy_setopt(t->easy, CURLOPT_WRITEDATA, t);
            curl_easy_setopt(t->easy, CURLOPT_PRIVATE, t);
            curl_easy_setopt(t->easy, CURLOPT_TIMEOUT_MS, opts.timeout_ms);
            curl_easy_setopt(t->easy, CURLOPT_NOSIGNAL, 1L);
            curl_easy_setopt(t->easy, CURLOPT_TCP_NODELAY, 1L);
        }
        const auto& r = requests[i];
        t->index = i;
        t->scheduled_ns = scheduled_ns(i);
        t->body.clear();
        curl_easy_setopt(t->easy, CURLOPT_HTTPHEADER, r.headers);
        curl_easy_setopt(t->easy, CURLOPT_POSTFIELDS, r.body.data());
        curl_easy_setopt(t->easy, CURLOPT_POSTFIELDSIZE, static_cast<long>(r.body.size()));
        curl_multi_add_handle(multi, t->easy);
        ++in_flight;
        ++result.sent;
        if (now_ns > t->scheduled_ns) {
            result.max_launch_lag_us =
                std::max(result.max_launch_lag_us, (now_ns - t->scheduled_ns) / 1000);
        }
    }

    void launch_due() {
        std::uint64_t now_ns = ns_since(start, steady::now());
        while (next < opts.count && scheduled_ns(next) <= now_ns) {
            launch(next++, now_ns);
        }
        if (next < opts.count) {
            arm(sched_fd, scheduled_ns(next) - now_ns);
        } else {
            disarm(sched_fd);
        }
    }

    void reap() {
        int left = 0;
        while (CURLMsg* m = curl_multi_info_read(multi, &left)) {
            if (m->msg != CURLMSG_DONE) {
                continue;
            }
            transfer* t = nullptr;
            curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &t);
            std::uint64_t now_ns = ns_since(start, steady::now());
            std::uint64_t lat_us = now_ns > t->scheduled_ns ? (now_ns - t->scheduled_ns) / 1000 : 0;
            long status = 0;
            curl_easy_getinfo(m->easy_handle, CURLINFO_RESPONSE_CODE, &status);
            if (m->data.result != CURLE_OK) {
                ++result.errors;
                ++result.transport_errors;
            } else if (status >= 200 && status < 300) {
                ++result.ok;
                result.latency.record(lat_us);
                if (observe) {
                    observe(t->index, start_wall_ms + static_cast<double>(t->scheduled_ns) / 1e6,
                            t->body);
                }
            } else {
                ++result.errors;
                if (status >= 500) {
                    ++result.status_5xx;
                }
            }
            curl_multi_remove_handle(multi, t->easy);
            idle.push_back(t);
            --in_flight;
        }
    }

    void run() {
        multi = curl_multi_init();
        curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, on_socket);
        curl_multi_setopt(multi, CURLMOPT_SOCKETDATA, this);
        curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, on_timer);
        curl_multi_setopt(multi, CURLMOPT_TIMERDATA, this);
        curl_multi_setopt(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, static_cast<long>(opts.connections));
        curl_multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS, static_cast<long>(opts.connections));
        curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, static_cast<long>(opts.connections));
        epfd = epoll_create1(EPOLL_CLOEXEC);
        sched_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
        curl_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
        if (epfd < 0 || sched_fd < 0 || curl_fd < 0) {
            throw std::runtime_error("epoll/timerfd unavailable");
        }
        for (int fd : {sched_fd, curl_fd}) {
            epoll_event ev{};
            ev.events = EPOLLIN;
            ev.data.fd = fd;
            epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
        }
        interval_ns = 1e9 / opts.rate;
        start = steady::now();
        start_wall_ms = std::chrono::duration<double, std::milli>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
        launch_due();
        int running = 0;
        curl_multi_socket_action(multi, CURL_SOCKET_TIMEOUT, 0, &running);
        reap();
        epoll_event events[256];
        while (next < opts.count || in_flight > 0) {
            int n = epoll_wait(epfd, events, 256, 1000);
            for (int k = 0; k < n; ++k) {
                int fd = events[k].data.fd;
                if (fd == sched_fd || fd == curl_fd) {
                    std::uint64_t expirations;
                    (void)!::read(fd, &expirations, sizeof expirations);
                    if (fd == sched_fd) {
                        launch_due();
                        curl_multi_socket_action(multi, CURL_SOCKET_TIMEOUT, 0, &running);
                    } else {
                        curl_multi_socket_action(multi, CURL_SOCKET_TIMEOUT, 0, &running);
                    }
                } else {
                    int mask = 0;
                    if (events[k].events & EPOLLIN) {
                        mask |= CURL_CSELECT_IN;
                    }
                    if (events[k].events & EPOLLOUT) {
                        mask |= CURL_CSELECT_OUT;
                    }
                    if (events[k].events & (EPOLLERR | EPOLLHUP)) {
                        mask |= CURL_CSELECT_ERR;
                    }
                    curl_multi_socket_action(multi, fd, mask, &running);
                }
            }
            reap();
        }
        result.elapsed_s = static_cast<double>(ns_since(start, steady::now())) / 1e9;
    }
};

} // namespace

open_loop_result run_open_loop(const open_loop_options& opts, const request_set& requests,
                               const response_observer& observe) {
    driver d(opts, requests, observe);
    d.run();
    return std::move(d.result);
}

} // namespace wopbridge::bench
