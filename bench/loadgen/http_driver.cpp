#include "http_driver.hpp"
#include "connection_slot.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

namespace wopbridge::bench {

namespace {

using steady = std::chrono::steady_clock;

std::uint64_t mono_ns(steady::time_point t) {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
}

constexpr std::uint64_t timer_tag = ~std::uint64_t{0};

struct worker {
    const load_options& o;
    const request_set& set;
    const sockaddr_storage& addr;
    socklen_t addrlen;
    const std::size_t k;   // this thread's residue
    const std::size_t nth; // threads
    const std::uint64_t start_mono_ns;
    const double interval_ns;
    const bool open;

    load_result res;
    std::vector<std::pair<std::size_t, std::string>> bodies;

    int epfd = -1;
    int tfd = -1;
    std::vector<conn> conns;
    std::vector<std::size_t> idle;
    std::size_t open_conns = 0;
    std::size_t connecting = 0;
    std::size_t in_flight = 0;
    std::size_t total = 0;     // my requests (open loop)
    std::size_t next_due = 0;  // my j-index of the first request not yet due
    std::size_t next_send = 0; // my j-index of the first due request not yet written
    std::uint64_t armed_for = 0;
    std::uint64_t deadline_ns = 0; // closed loop, since start
    bool stopping = false;
    std::uint64_t last_timeout_check = 0;
    char buf[65536];

    worker(const load_options& opts, const request_set& s, const sockaddr_storage& a, socklen_t al,
           std::size_t k_, std::size_t n_, std::uint64_t start, int max_conns)
        : o(opts), set(s), addr(a), addrlen(al), k(k_), nth(n_), start_mono_ns(start),
          interval_ns(opts.rate > 0 ? 1e9 / opts.rate : 0), open(opts.rate > 0),
          conns(static_cast<std::size_t>(std::max(1, max_conns))) {
        if (open) {
            total = o.count > k ? (o.count - k + nth - 1) / nth : 0;
        }
    }

    ~worker() {
        for (auto& c : conns) {
            if (c.fd >= 0) {
                ::close(c.fd);
            }
        }
        for (int fd : {epfd, tfd}) {
            if (fd >= 0) {
                ::close(fd);
            }
        }
    }

    std::uint64_t now() const { return mono_ns(steady::now()) - start_mono_ns; }
    std::size_t global(std::size_t j) const { return k + j * nth; }
    std::uint64_t sched(std::size_t j) const {
        return static_cast<std::uint64_t>(static_cast<double>(global(j)) * interval_ns);
    }

    void watch(conn& c, std::size_t idx, bool out) {
        epoll_event ev{};
        ev.events = EPOLLIN | (out ? EPOLLOUT : 0u);
        ev.data.u64 = idx;
        epoll_ctl(epfd, EPOLL_CTL_MOD, c.fd, &ev);
        c.want_out = out;
    }

    // Opens slot idx; false when the socket cannot even be created.
    bool connect_slot(std::size_t idx, std::uint64_t t) {
        conn& c = conns[idx];
        c.fd = ::socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (c.fd < 0) {
            return false;
        }
        int one = 1;
        setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        epoll_event ev{};
        ev.events = EPOLLIN | EPOLLOUT;
        ev.data.u64 = idx;
        epoll_ctl(epfd, EPOLL_CTL_ADD, c.fd, &ev);
        c.want_out = true;
        c.served = 0;
        c.since_ns = t;
        c.state = conn::st::connecting;
        ++open_conns;
        ++connecting;
        c.connect_err = 0;
        int r = ::connect(c.fd, reinterpret_cast<const sockaddr*>(&addr), addrlen);
        if (r != 0 && errno != EINPROGRESS) {
            c.connect_err =
                errno; // reported by the next epoll_wait (the socket is writable/hung up)
        }
        return true;
    }

    void close_slot(conn& c) {
        if (c.fd >= 0) {
            ::close(c.fd); // leaves the epoll set with it
            c.fd = -1;
        }
        if (c.state == conn::st::connecting) {
            --connecting;
        }
        if (c.state != conn::st::closed) {
            --open_conns;
        }
        c.state = conn::st::closed;
        c.resend = false;
    }

    void make_idle(std::size_t idx) {
        conn& c = conns[idx];
        c.state = conn::st::idle;
        if (!c.in_idle_stack) {
            c.in_idle_stack = true;
            idle.push_back(idx);
        }
    }

    // The current request of c failed for good.
    void fail_request(conn& c) {
        ++res.errors;
        ++res.transport_errors;
        --in_flight;
    }

    void write_some(std::size_t idx) {
        conn& c = conns[idx];
        const std::string& w = set[c.req].wire;
        while (c.woff < w.size()) {
            ssize_t n = ::send(c.fd, w.data() + c.woff, w.size() - c.woff, MSG_NOSIGNAL);
            if (n > 0) {
                c.woff += static_cast<std::size_t>(n);
                continue;
            }
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                if (!c.want_out) {
                    watch(c, idx, true);
                }
                return;
            }
            broken(idx, now());
            return;
        }
        if (c.want_out) {
            watch(c, idx, false);
        }
    }

    void send_on(std::size_t idx, std::size_t req, std::uint64_t t0, std::uint64_t t) {
        conn& c = conns[idx];
        c.state = conn::st::busy;
        c.req = req;
        c.t0_ns = t0;
        c.since_ns = t;
        c.woff = 0;
        c.got_bytes = false;
        c.retried = false;
        c.parser.reset(o.capture_bodies);
        ++in_flight;
        ++res.sent;
        write_some(idx);
    }

    // Closed loop: the next request for connection idx, if any.
    void send_next_closed(std::size_t idx, std::uint64_t t) {
        if (stopping) {
            make_idle(idx);
            return;
        }
        std::size_t i = global(next_send);
        if (i >= set.size()) {
            if (!o.cycle || set.size() <= k) {
                make_idle(idx);
                return;
            }
            next_send = 0;
            i = global(0);
            res.cycled = true;
        }
        ++next_send;
        send_on(idx, i, t, t);
    }

    // Open loop: hands due requests to idle connections, opening new ones while requests wait.
    void dispatch(std::uint64_t t) {
        while (next_send < next_due) {
            if (!idle.empty()) {
                std::size_t idx = idle.back();
                idle.pop_back();
                conns[idx].in_idle_stack = false;
                if (conns[idx].state != conn::st::idle) {
                    continue;
                }
                std::size_t j = next_send++;
                send_on(idx, global(j), sched(j), t);
                continue;
            }
            if (connecting >= next_due - next_send || open_conns >= conns.size()) {
                return;
            }
            std::size_t slot = 0;
            while (slot < conns.size() && conns[slot].state != conn::st::closed) {
                ++slot;
            }
            if (slot == conns.size() || !connect_slot(slot, t)) {
                return;
            }
        }
    }

    void on_connected(std::size_t idx, std::uint64_t t, int err) {
        conn& c = conns[idx];
        --connecting;
        if (err != 0) {
            bool had = c.resend;
            c.state = conn::st::idle; // so close_slot does not count it as connecting again
            close_slot(c);
            if (had) {
                fail_request(c);
            } else if (open && next_send < next_due) {
                // Nothing listens: fail the oldest waiting request, so the run still ends.
                ++next_send;
                ++res.sent;
                ++in_flight;
                fail_request(c);
            } else if (!open) {
                ++res.errors;
                ++res.transport_errors;
            }
            after_free(t);
            return;
        }
        watch(c, idx, false);
        if (c.resend) {
            c.resend = false;
            c.state = conn::st::busy;
            c.woff = 0;
            c.since_ns = t;
            c.parser.reset(o.capture_bodies);
            write_some(idx);
            return;
        }
        if (open) {
            make_idle(idx);
            dispatch(t);
        } else {
            send_next_closed(idx, t);
        }
    }

    // A connection slot became free (closed): the open loop may need a new one for waiting work.
    void after_free(std::uint64_t t) {
        if (open) {
            dispatch(t);
        }
    }

    // The socket failed or the server closed it.
    void broken(std::size_t idx, std::uint64_t t) {
        conn& c = conns[idx];
        if (c.state == conn::st::busy) {
            if (c.parser.on_eof()) {
                finish(idx, t);
                return;
            }
            // A keep-alive connection the server closed just as we reused it: resend once on a
            // fresh connection (what every client does; the request was not answered).
            if (!c.got_bytes && c.served > 0 && !c.retried) {
                close_slot(c); // keeps req and t0_ns
                ++res.reconnects;
                c.resend = true;
                c.retried = true;
                if (connect_slot(idx, t)) {
                    return;
                }
                c.resend = false;
                fail_request(c);
                after_free(t);
                return;
            }
            close_slot(c);
            fail_request(c);
            after_free(t);
            if (!open) {
                reopen_closed(idx, t);
            }
            return;
        }
        close_slot(c);
        if (!open) {
            reopen_closed(idx, t);
        }
    }

    void reopen_closed(std::size_t idx, std::uint64_t t) {
        if (!stopping && conns[idx].state == conn::st::closed) {
            ++res.reconnects;
            connect_slot(idx, t);
        }
    }

    void finish(std::size_t idx, std::uint64_t t) {
        conn& c = conns[idx];
        const int status = c.parser.status;
        --in_flight;
        ++c.served;
        if (status >= 200 && status < 300) {
            ++res.ok;
            res.latency.record(t > c.t0_ns ? (t - c.t0_ns) / 1000 : 0);
            if (o.capture_bodies) {
                bodies.emplace_back(c.req, std::move(c.parser.body));
            }
        } else {
            ++res.errors;
            if (status >= 500) {
                ++res.status_5xx;
            }
        }
        if (c.parser.close) {
            close_slot(c);
            if (open) {
                dispatch(t);
            } else {
                reopen_closed(idx, t);
            }
            return;
        }
        if (open) {
            make_idle(idx);
            dispatch(t);
        } else {
            send_next_closed(idx, t);
        }
    }

    void readable(std::size_t idx, std::uint64_t t) {
        conn& c = conns[idx];
        for (;;) {
            ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
            if (n > 0) {
                if (c.state != conn::st::busy) {
                    broken(idx, t); // bytes nobody asked for
                    return;
                }
                c.got_bytes = true;
                if (!c.parser.feed(buf, static_cast<std::size_t>(n))) {
                    close_slot(c);
                    fail_request(c);
                    after_free(t);
                    if (!open) {
                        reopen_closed(idx, t);
                    }
                    return;
                }
                if (c.parser.complete) {
                    finish(idx, t);
                    return;
                }
                if (static_cast<std::size_t>(n) < sizeof buf) {
                    return;
                }
                continue;
            }
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                return;
            }
            broken(idx, t); // EOF or error
            return;
        }
    }

    void on_event(std::size_t idx, std::uint32_t ev, std::uint64_t t) {
        conn& c = conns[idx];
        if (c.state == conn::st::closed) {
            return;
        }
        if (c.state == conn::st::connecting) {
            if (ev & (EPOLLOUT | EPOLLERR | EPOLLHUP)) {
                int err = c.connect_err;
                socklen_t len = sizeof err;
                if (err == 0) {
                    getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
                }
                on_connected(idx, t, err);
            }
            return;
        }
        if ((ev & EPOLLOUT) && c.state == conn::st::busy) {
            write_some(idx);
            if (conns[idx].state != conn::st::busy) {
                return;
            }
        }
        if (ev & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
            readable(idx, t);
        }
    }

    void check_timeouts(std::uint64_t t) {
        const auto limit = static_cast<std::uint64_t>(o.timeout_ms) * 1000000ull;
        for (std::size_t idx = 0; idx < conns.size(); ++idx) {
            conn& c = conns[idx];
            if ((c.state == conn::st::busy || c.state == conn::st::connecting) &&
                t - c.since_ns > limit) {
                bool busy = c.state == conn::st::busy || c.resend;
                close_slot(c);
                if (busy) {
                    fail_request(c);
                }
                after_free(t);
                if (!open) {
                    reopen_closed(idx, t);
                }
            }
        }
    }

    void arm_next(std::uint64_t t) {
        if (next_due >= total) {
            return;
        }
        std::uint64_t due = sched(next_due);
        if (due == armed_for) {
            return;
        }
        armed_for = due;
        std::uint64_t abs = start_mono_ns + std::max<std::uint64_t>(due, t + 1);
        itimerspec its{};
        its.it_value.tv_sec = static_cast<time_t>(abs / 1000000000ull);
        its.it_value.tv_nsec = static_cast<long>(abs % 1000000000ull);
        timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, nullptr);
    }

    void mark_due(std::uint64_t t) {
        if (next_due < total && sched(next_due) <= t) {
            res.max_launch_lag_us = std::max(res.max_launch_lag_us, (t - sched(next_due)) / 1000);
            while (next_due < total && sched(next_due) <= t) {
                ++next_due;
            }
            dispatch(t);
        }
        arm_next(t);
    }

    void run() {
        epfd = epoll_create1(EPOLL_CLOEXEC);
        tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
        if (epfd < 0 || tfd < 0) {
            throw std::runtime_error("epoll/timerfd unavailable");
        }
        epoll_event tev{};
        tev.events = EPOLLIN;
        tev.data.u64 = timer_tag;
        epoll_ctl(epfd, EPOLL_CTL_ADD, tfd, &tev);
        std::uint64_t t = now();
        if (open) {
            armed_for = ~std::uint64_t{0};
            mark_due(t);
        } else {
            deadline_ns = static_cast<std::uint64_t>(o.seconds * 1e9);
            for (std::size_t idx = 0; idx < conns.size(); ++idx) {
                connect_slot(idx, t);
            }
        }
        epoll_event events[256];
        for (;;) {
            if (open && next_send >= total && in_flight == 0) {
                break;
            }
            if (!open && (t >= deadline_ns || (in_flight == 0 && connecting == 0))) {
                break;
            }
            int n = epoll_wait(epfd, events, 256, 50);
            t = now();
            for (int e = 0; e < n; ++e) {
                if (events[e].data.u64 == timer_tag) {
                    std::uint64_t expirations;
                    (void)!::read(tfd, &expirations, sizeof expirations);
                    continue;
                }
                if (!open && t >= deadline_ns) {
                    break; // answers after the end do not count (wrk's rule)
                }
                on_event(static_cast<std::size_t>(events[e].data.u64), events[e].events, t);
            }
            if (open) {
                mark_due(t);
            }
            if (t - last_timeout_check > 50'000'000ull) {
                last_timeout_check = t;
                check_timeouts(t);
            }
        }
        stopping = true;
        res.elapsed_s = static_cast<double>(open ? t : std::min(t, deadline_ns)) / 1e9;
    }
};

} // namespace

load_result run_load(const load_options& opts, const request_set& requests,
                     const response_observer& observe) {
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* ai = nullptr;
    std::string port = std::to_string(opts.to.port);
    if (getaddrinfo(opts.to.host.c_str(), port.c_str(), &hints, &ai) != 0 || !ai) {
        throw std::runtime_error("cannot resolve " + opts.to.host);
    }
    sockaddr_storage addr{};
    std::memcpy(&addr, ai->ai_addr, ai->ai_addrlen);
    auto addrlen = static_cast<socklen_t>(ai->ai_addrlen);
    freeaddrinfo(ai);

    const int nth = std::max(1, opts.threads);
    // Start a little ahead so every thread is in its loop when request 0 is due.
    const std::uint64_t start = mono_ns(steady::now()) + 2'000'000ull;
    const double start_wall_ms = std::chrono::duration<double, std::milli>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count() +
                                 2.0;
    std::vector<std::unique_ptr<worker>> workers;
    for (int k = 0; k < nth; ++k) {
        int share = opts.connections / nth + (k < opts.connections % nth ? 1 : 0);
        workers.push_back(std::make_unique<worker>(opts, requests, addr, addrlen,
                                                   static_cast<std::size_t>(k),
                                                   static_cast<std::size_t>(nth), start, share));
    }
    while (mono_ns(steady::now()) < start) {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    if (nth == 1) {
        workers[0]->run();
    } else {
        std::vector<std::thread> threads;
        for (auto& w : workers) {
            threads.emplace_back([&w] { w->run(); });
        }
        for (auto& th : threads) {
            th.join();
        }
    }
    load_result out;
    for (auto& w : workers) {
        out.merge(w->res);
        if (observe) {
            const double interval_ms = opts.rate > 0 ? 1000.0 / opts.rate : 0;
            for (auto& [idx, body] : w->bodies) {
                observe(idx, start_wall_ms + static_cast<double>(idx) * interval_ms, body);
            }
        }
    }
    out.end_wall_ms = start_wall_ms + out.elapsed_s * 1000.0;
    return out;
}

} // namespace wopbridge::bench
