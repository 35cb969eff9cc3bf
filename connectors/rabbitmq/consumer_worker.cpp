#include "rabbitmq/consumer_worker.hpp"

#include "rabbitmq/message_event.hpp"

#include <algorithm>
#include <cerrno>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

namespace wopbridge::rabbitmq {

namespace {

constexpr auto min_backoff = std::chrono::milliseconds(100);
// Longest wait for the socket or a wakeup: also how often the client gets to send heartbeats
// and how often a paused or capacity-starved consumer looks again.
constexpr int poll_ms = 50;

} // namespace

consumer_worker::consumer_worker(const wopbridge::host& host, const connector_settings& settings,
                                 std::string sub_id, subscription_settings sub)
    : host_(host), settings_(settings), sub_id_(std::move(sub_id)), sub_(std::move(sub)),
      wake_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
      backoff_(std::chrono::milliseconds(settings_.retry_delay_ms)) {}

consumer_worker::~consumer_worker() {
    stop(clock::now());
    if (wake_fd_ >= 0) {
        ::close(wake_fd_);
    }
}

void consumer_worker::log(wopbridge::log_level level, const std::string& message) const {
    // Names only (subscription, queue): never message content or credentials.
    host_.log(level, "rabbitmq[" + sub_id_ + " " + sub_.queue + "]: " + message);
}

void consumer_worker::wake() const {
    if (wake_fd_ >= 0) {
        const std::uint64_t one = 1;
        [[maybe_unused]] const auto n = ::write(wake_fd_, &one, sizeof one);
    }
}

void consumer_worker::start() {
    std::lock_guard lock(mu_);
    if (started_ || stopped_) {
        return;
    }
    started_ = true;
    thread_ = std::thread([this] { run(); });
}

void consumer_worker::stop(clock::time_point deadline) {
    {
        std::lock_guard lock(mu_);
        if (stopped_) {
            return;
        }
        stopped_ = true;
        deadline_ = deadline;
        stopping_ = true;
    }
    cv_.notify_all();
    wake();
    if (thread_.joinable()) {
        thread_.join();
    }
    std::lock_guard lock(mu_);
    released_ = true;
    in_flight_.clear();
    actions_.clear();
}

void consumer_worker::wait_for(std::chrono::milliseconds d) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, d, [&] { return stopping_.load(); });
}

bool consumer_worker::connect() {
    std::string error;
    amqp_link::open_failure why = amqp_link::open_failure::unreachable;
    auto link = amqp_link::open(settings_, sub_, error, why);
    if (!link) {
        if (!ever_connected_ && !said_unreachable_ && why == amqp_link::open_failure::unreachable) {
            said_unreachable_ = true;
            log(wopbridge::log_level::warn,
                "no broker reachable yet at " + redacted_url(settings_) + " (" + error +
                    "); connecting in the background, backing off up to " +
                    std::to_string(settings_.reconnect_wait_ms) + " ms");
        } else if (why == amqp_link::open_failure::refused && error != last_connect_error_) {
            // Once per distinct error (a missing queue, a refused login), not per attempt.
            log(wopbridge::log_level::warn, error + "; retrying with backoff");
        }
        last_connect_error_ = error;
        return false;
    }
    link_ = std::move(link);
    ++epoch_;
    const auto where = redacted_url(settings_);
    if (lost_) {
        log(wopbridge::log_level::info, "connection regained to " + where + "; consuming");
    } else {
        log(wopbridge::log_level::info, "connected to " + where + "; consuming (prefetch " +
                                            std::to_string(settings_.prefetch) + ")");
    }
    lost_ = false;
    ever_connected_ = true;
    last_connect_error_.clear();
    return true;
}

void consumer_worker::drop_link(const std::string& why) {
    link_.reset();
    std::size_t dropped = 0;
    {
        // Every delivery of that connection goes back to the queue (the broker requeues what
        // was unacked); an outcome still outstanding for one of them finds nothing, and the
        // redelivery is answered `duplicate` if it was committed.
        std::lock_guard lock(mu_);
        for (auto it = in_flight_.begin(); it != in_flight_.end();) {
            if (it->second.epoch == epoch_) {
                it = in_flight_.erase(it);
                ++dropped;
            } else {
                ++it;
            }
        }
        actions_.clear();
    }
    if (!stopping_) {
        lost_ = true;
        log(wopbridge::log_level::warn,
            "connection lost (" + why + "); reconnecting with backoff up to " +
                std::to_string(settings_.reconnect_wait_ms) + " ms (" + std::to_string(dropped) +
                " unacked message(s) go back to the queue)");
    }
}

void consumer_worker::run() {
    auto backoff = min_backoff;
    const auto max_backoff = std::chrono::milliseconds(settings_.reconnect_wait_ms);
    for (;;) {
        if (stopping_) {
            if (!link_) {
                break;
            }
            // Draining: messages not yet submitted go back to the queue; wait for the outcomes
            // owed and send their acks, until the deadline.
            bool done = false;
            {
                std::lock_guard lock(mu_);
                for (auto it = in_flight_.begin(); it != in_flight_.end();) {
                    it = it->second.submitted ? std::next(it) : in_flight_.erase(it);
                }
                done = in_flight_.empty() && actions_.empty();
            }
            apply_actions();
            if (done || clock::now() >= deadline_) {
                break;
            }
        }
        if (!link_) {
            if (!connect()) {
                wait_for(backoff);
                backoff = std::min(backoff * 2, std::max(max_backoff, min_backoff));
                continue;
            }
            backoff = min_backoff;
        }
        apply_actions();
        if (!link_) {
            continue;
        }
        if (!stopping_) {
            submit_due();
        }
        bool readable = link_->buffered();
        if (!readable) {
            pollfd fds[2] = {{link_->fd(), POLLIN, 0}, {wake_fd_, POLLIN, 0}};
            ::poll(fds, 2, poll_ms);
            readable = (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0;
            if ((fds[1].revents & POLLIN) != 0) {
                std::uint64_t n = 0;
                [[maybe_unused]] const auto r = ::read(wake_fd_, &n, sizeof n);
            }
        }
        std::string why;
        if (!link_->keepalive(readable, why)) {
            drop_link(why);
            continue;
        }
        read_frames();
    }
    std::size_t left = 0;
    {
        std::lock_guard lock(mu_);
        for (const auto& [id, h] : in_flight_) {
            left += h.submitted ? 1 : 0;
        }
    }
    if (left > 0) {
        log(wopbridge::log_level::warn,
            "stopped with " + std::to_string(left) +
                " message(s) unacknowledged; the broker delivers them again");
    }
    if (link_) {
        link_->close();
        link_.reset();
    }
}

void consumer_worker::read_frames() {
    // Always at least one call, even when the socket looked quiet (TLS may hold decrypted bytes).
    // Bounded, so acks and submits are never starved.
    for (std::size_t i = 0; link_ && i < settings_.prefetch + 8; ++i) {
        auto r = link_->next();
        if (r.kind == amqp_link::next_kind::nothing) {
            return;
        }
        if (r.kind == amqp_link::next_kind::closed) {
            drop_link(r.why);
            return;
        }
        if (stopping_) {
            continue; // never acked: the broker requeues it when the connection closes
        }
        take(std::move(r.message));
    }
}

void consumer_worker::take(delivery d) {
    message_view view;
    view.queue = sub_.queue;
    view.exchange = d.exchange;
    view.routing_key = d.routing_key;
    if (d.message_id) {
        view.message_id = *d.message_id;
    }
    view.data = d.body;
    const bool hash = sub_.without_message_id == missing_id_policy::content_hash;
    auto id = provider_event_id(view, hash);
    if (!id) {
        // No stable identity: a delivery tag changes with every redelivery, so it cannot dedup.
        std::string error;
        if (!link_->reject(d.tag, false, error)) {
            drop_link(error);
            return;
        }
        log(wopbridge::log_level::warn,
            "message without message_id rejected (requeue=false: to the queue's dead-letter "
            "exchange, if it has one); publish with message_id, or set withoutMessageId: "
            "contentHash");
        return;
    }
    if (!d.message_id && !said_hashing_) {
        said_hashing_ = true;
        log(wopbridge::log_level::warn,
            "messages without message_id are deduplicated by a hash of their content: identical "
            "messages start one run");
    }
    std::lock_guard lock(mu_);
    held h;
    h.epoch = epoch_;
    h.msg = std::move(d);
    h.provider_event_id = std::move(*id);
    in_flight_.emplace(next_id_++, std::move(h));
}

void consumer_worker::submit_due() {
    std::vector<std::uint64_t> due;
    {
        std::lock_guard lock(mu_);
        if (backoff_.paused(clock::now())) {
            return;
        }
        for (const auto& [id, h] : in_flight_) {
            if (!h.submitted) {
                due.push_back(id);
            }
        }
    }
    for (const auto id : due) {
        // Backpressure: nothing more while the host is saturated (maxPendingIntake); the
        // messages wait unacked, and the broker sends no more than `prefetch`.
        if (!host_.has_capacity()) {
            return;
        }
        {
            std::lock_guard lock(mu_);
            auto it = in_flight_.find(id);
            if (it == in_flight_.end() || it->second.submitted || backoff_.paused(clock::now())) {
                continue;
            }
            it->second.submitted = true;
        }
        submit(id);
    }
}

void consumer_worker::submit(std::uint64_t id) {
    wopbridge::inbound_event ev;
    {
        std::lock_guard lock(mu_);
        auto it = in_flight_.find(id);
        if (it == in_flight_.end() || released_) {
            return;
        }
        const held& h = it->second;
        message_view view;
        view.queue = sub_.queue;
        view.exchange = h.msg.exchange;
        view.routing_key = h.msg.routing_key;
        view.data = h.msg.body;
        ev.content_json = event_content(view, settings_.max_message_bytes, h.without_payload);
        ev.provider_event_id = h.provider_event_id;
    }
    auto self = shared_from_this();
    wopbridge::submit_held_message(
        host_, std::move(ev), sub_id_, id,
        [self](std::uint64_t key) { self->on_committed(key); },
        [self](std::uint64_t key, const std::string& reason, int retry_after_seconds) {
            self->on_refused(key, reason, retry_after_seconds);
        });
}

void consumer_worker::on_committed(std::uint64_t id) {
    {
        std::lock_guard lock(mu_);
        auto it = in_flight_.find(id);
        if (it == in_flight_.end() || released_) {
            return;
        }
        // Committed or recognised: only now may the broker forget the message.
        actions_.push_back(action{true, it->second.epoch, it->second.msg.tag});
        in_flight_.erase(it);
        backoff_.reset();
    }
    wake();
}

void consumer_worker::on_refused(std::uint64_t id, const std::string& reason,
                                 int retry_after_seconds) {
    std::string line;
    auto level = wopbridge::log_level::info;
    {
        std::lock_guard lock(mu_);
        auto it = in_flight_.find(id);
        if (it == in_flight_.end() || released_) {
            return;
        }
        it->second.submitted = false;
        if (reason == "invalid") {
            if (!it->second.without_payload) {
                // About this message: submit it again without the payload the host refused.
                it->second.without_payload = true;
            } else {
                // Even without its payload the host can never take it: reject it without
                // requeue, so the broker dead-letters it (the queue's x-dead-letter-exchange)
                // or drops it, instead of redelivering it forever.
                actions_.push_back(action{false, it->second.epoch, it->second.msg.tag});
                in_flight_.erase(it);
                level = wopbridge::log_level::warn;
                line = "message refused as invalid even without its payload; rejected "
                       "(requeue=false)";
            }
        } else {
            // A state of the host or the subscription every message would meet: keep the
            // message unacked (the broker sends no more than `prefetch`) and submit again after
            // a delay, doubling per refused round.
            const auto round = backoff_.refused(clock::now(), retry_after_seconds);
            if (round.fresh) {
                line = "submit refused (" + reason +
                       "); holding the message(s) unacked, "
                       "submitting again in " +
                       std::to_string(round.delay.count()) + " ms";
            }
        }
    }
    if (!line.empty()) {
        log(level, line);
    }
    wake();
}

void consumer_worker::apply_actions() {
    std::vector<action> due;
    {
        std::lock_guard lock(mu_);
        due.swap(actions_);
    }
    for (const auto& a : due) {
        if (!link_ || a.epoch != epoch_) {
            continue; // that connection is gone: the broker redelivers, dedup answers duplicate
        }
        std::string error;
        const bool ok = a.ack ? link_->ack(a.tag, error) : link_->reject(a.tag, false, error);
        if (!ok) {
            drop_link(error);
            return;
        }
    }
}

} // namespace wopbridge::rabbitmq
