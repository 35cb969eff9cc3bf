#include "nats/consumer_worker.hpp"

#include "nats/message_event.hpp"
#include "nats/nats_link.hpp"

#include <algorithm>
#include <vector>

namespace wopbridge::nats {

namespace {

constexpr auto min_backoff = std::chrono::milliseconds(100);
constexpr auto max_backoff = std::chrono::milliseconds(2000);
constexpr auto capacity_poll = std::chrono::milliseconds(50);
constexpr std::int64_t ns_per_ms = 1'000'000;
constexpr std::int64_t api_wait_ms = 2000;
constexpr auto idle_check_after = std::chrono::seconds(5);

// The connection is down or going: the link logs that once; fetches just wait for it.
bool connection_trouble(natsStatus s) {
    return s == NATS_CONNECTION_CLOSED || s == NATS_CONNECTION_DISCONNECTED ||
           s == NATS_NOT_YET_CONNECTED || s == NATS_NO_SERVER || s == NATS_IO_ERROR ||
           s == NATS_STALE_CONNECTION || s == NATS_CONNECTION_AUTH_FAILED;
}

std::string js_error(natsStatus s, jsErrCode code) {
    std::string out = status_text(s);
    if (code != 0) {
        out += " (JetStream error " + std::to_string(static_cast<int>(code)) + ")";
    }
    return out;
}

} // namespace

void consumer_worker::held_message::release() noexcept {
    if (msg != nullptr) {
        natsMsg_Destroy(msg);
        msg = nullptr;
    }
    from.reset(); // may destroy a subscription the worker already bound past
}

void consumer_worker::held_message::replace(natsMsg* m, subscription_ref s) noexcept {
    release();
    msg = m;
    from = std::move(s);
}

consumer_worker::consumer_worker(const wopbridge::host& host, const connector_settings& settings,
                                 natsConnection* nc, std::string sub_id, subscription_settings sub)
    : host_(host), settings_(settings), nc_(nc), sub_id_(std::move(sub_id)), sub_(std::move(sub)),
      backoff_(std::chrono::milliseconds(settings_.retry_delay_ms)) {}

consumer_worker::~consumer_worker() {
    stop(clock::now());
}

void consumer_worker::log(wopbridge::log_level level, const std::string& message) const {
    // Names only (subscription, stream, durable): never message content or credentials.
    host_.log(level, "nats[" + sub_id_ + " " + sub_.stream + "/" + sub_.durable + "]: " + message);
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
        stopping_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) {
        thread_.join(); // a fetch in progress ends within fetchWaitMs
    }
    std::unique_lock lock(mu_);
    // Let the host finish the outcomes it owes us (each acks as it comes), until the deadline.
    const bool done = cv_.wait_until(lock, deadline, [&] { return in_flight_.empty(); });
    if (!done) {
        log(wopbridge::log_level::warn,
            "stopped with " + std::to_string(in_flight_.size()) +
                " message(s) unacknowledged; JetStream delivers them again after ackWait");
    }
    in_flight_.clear(); // destroys each message, then its share of its subscription
    resubmit_.clear();
    released_ = true;
    // The acks are buffered in the client: push them out before the connection may close.
    if (nc_ != nullptr && natsConnection_Status(nc_) == NATS_CONN_STATUS_CONNECTED) {
        natsConnection_FlushTimeout(nc_, 2000);
    }
    lock.unlock();
    unbind();
    if (js_ != nullptr) {
        jsCtx_Destroy(js_);
        js_ = nullptr;
    }
}

void consumer_worker::unbind() {
    // Destroyed (not unsubscribed: the durable consumer must outlive this process) once the last
    // message fetched through it is let go.
    pull_.reset();
}

bool consumer_worker::bind(std::chrono::milliseconds retry_in) {
    jsErrCode code = static_cast<jsErrCode>(0);
    if (natsConnection_Status(nc_) != NATS_CONN_STATUS_CONNECTED) {
        // A JetStream API request would wait for the connection (up to its timeout) and hold
        // stop() that long; the link logs the outage, we try again after the backoff.
        ++failed_binds_;
        return false;
    }
    if (js_ == nullptr) {
        jsOptions jo;
        jsOptions_Init(&jo);
        jo.Wait = api_wait_ms; // bounds a JetStream API call (consumer create, bind)
        const auto s = natsConnection_JetStream(&js_, nc_, &jo);
        if (s != NATS_OK) {
            log(wopbridge::log_level::error, "JetStream context: " + status_text(s));
            return false;
        }
    }
    const auto retrying = "; retrying in " + std::to_string(retry_in.count()) + " ms";
    if (sub_.create_consumer) {
        jsConsumerConfig cc;
        jsConsumerConfig_Init(&cc);
        cc.Durable = sub_.durable.c_str();
        cc.AckPolicy = js_AckExplicit;
        cc.AckWait = sub_.ack_wait_ms * ns_per_ms;
        cc.MaxDeliver = sub_.max_deliver;
        cc.MaxAckPending = sub_.max_ack_pending;
        cc.DeliverPolicy = sub_.from_beginning ? js_DeliverAll : js_DeliverNew;
        if (!sub_.filter_subject.empty()) {
            cc.FilterSubject = sub_.filter_subject.c_str();
        }
        // Creating an existing durable with the same settings is a no-op; changed settings that
        // JetStream can update (ackWait, maxDeliver, maxAckPending) are updated.
        const auto s = js_AddConsumer(nullptr, js_, sub_.stream.c_str(), &cc, nullptr, &code);
        if (s != NATS_OK && connection_trouble(s)) {
            ++failed_binds_;
            return false; // the link logs the outage
        }
        if (s != NATS_OK && code == JSStreamNotFoundErr) {
            ++failed_binds_;
            log(wopbridge::log_level::warn, "stream not found" + retrying);
            return false;
        }
        if (s != NATS_OK) {
            // E.g. a durable created with another deliver policy or filter: use it as it is.
            log(wopbridge::log_level::warn,
                "could not create or update the consumer (" + js_error(s, code) +
                    "); binding to the existing one with its own settings");
        }
    }
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = sub_.stream.c_str();
    so.Consumer = sub_.durable.c_str();
    so.ManualAck = true;
    code = static_cast<jsErrCode>(0);
    natsSubscription* bound = nullptr;
    const auto s =
        js_PullSubscribe(&bound, js_, nullptr, sub_.durable.c_str(), nullptr, &so, &code);
    if (s != NATS_OK) {
        if (bound != nullptr) {
            natsSubscription_Destroy(bound);
        }
        ++failed_binds_;
        if (!connection_trouble(s)) {
            log(wopbridge::log_level::warn,
                "cannot bind to the consumer: " + js_error(s, code) + retrying);
        }
        return false;
    }
    log(wopbridge::log_level::info,
        "consuming" + (failed_binds_ > 0 ? " (bound after " + std::to_string(failed_binds_) +
                                               " failed attempt(s))"
                                         : std::string()));
    pull_ = subscription_ref(bound, natsSubscription_Destroy);
    idle_since_.reset();
    last_idle_check_.reset();
    withheld_reported_ = false;
    failed_binds_ = 0;
    last_fetch_error_.clear();
    return true;
}

void consumer_worker::run() {
    auto backoff = min_backoff;
    const auto pause = [&](std::chrono::milliseconds d) {
        std::unique_lock lock(mu_);
        cv_.wait_for(lock, d, [&] { return stopping_.load(); });
    };
    while (!stopping_) {
        if (pull_ == nullptr && !bind(backoff)) {
            pause(backoff);
            backoff = std::min(backoff * 2, max_backoff);
            continue;
        }
        std::deque<std::uint64_t> again;
        std::size_t room = 0;
        bool wait = false;
        {
            std::lock_guard lock(mu_);
            again.swap(resubmit_);
            const auto now = clock::now();
            // Backpressure: never hold more than maxInFlight messages, never fetch while the
            // host is saturated or asked us to wait.
            const bool full = in_flight_.size() >= settings_.max_in_flight;
            wait = full || backoff_.paused(now) || !host_.has_capacity();
            room =
                wait ? 0
                     : std::min(settings_.batch_size, settings_.max_in_flight - in_flight_.size());
        }
        for (const auto seq : again) {
            submit(seq);
        }
        keep_in_progress();
        if (wait) {
            pause(capacity_poll);
            continue;
        }
        if (!fetch_round(room)) {
            unbind();
            pause(backoff);
            backoff = std::min(backoff * 2, max_backoff);
            continue;
        }
        backoff = min_backoff;
    }
}

bool consumer_worker::fetch_round(std::size_t room) {
    natsMsgList list{nullptr, 0};
    jsErrCode code = static_cast<jsErrCode>(0);
    // Short enough that the loop sends +WPI for held messages in time (every ackWait / 2).
    const auto wait = std::min(settings_.fetch_wait_ms, sub_.ack_wait_ms / 4);
    const auto s =
        natsSubscription_Fetch(&list, pull_.get(), static_cast<int>(room), wait, &code);
    if (s == NATS_OK || (s == NATS_TIMEOUT && list.Count > 0)) {
        for (int i = 0; i < list.Count; ++i) {
            take(list.Msgs[i], pull_);
            list.Msgs[i] = nullptr; // ours now
        }
        natsMsgList_Destroy(&list);
        last_fetch_error_.clear();
        idle_since_.reset();
        last_idle_check_.reset();
        withheld_reported_ = false;
        return true;
    }
    natsMsgList_Destroy(&list);
    if (s == NATS_TIMEOUT) {
        return note_idle_fetch(); // nothing new within fetchWaitMs
    }
    if (connection_trouble(s)) {
        // The link logged "connection lost"; the pull subscription survives a reconnect.
        std::unique_lock lock(mu_);
        cv_.wait_for(lock, capacity_poll * 4, [&] { return stopping_.load(); });
        return true;
    }
    const auto what = js_error(s, code);
    if (what != last_fetch_error_) {
        // Once per distinct error, not per fetch (the consumer may be gone for a while).
        log(wopbridge::log_level::warn, "fetch failed: " + what + "; binding again");
        last_fetch_error_ = what;
    }
    return false;
}

bool consumer_worker::note_idle_fetch() {
    const auto now = clock::now();
    if (!idle_since_) {
        idle_since_ = now;
    }
    if (now - last_idle_check_.value_or(*idle_since_) < idle_check_after) {
        return true;
    }
    last_idle_check_ = now;
    return check_idle_consumer();
}

bool consumer_worker::check_idle_consumer() {
    // One JetStream API call per idle_check_after of an idle stretch.
    jsConsumerInfo* info = nullptr;
    jsErrCode code = static_cast<jsErrCode>(0);
    const auto s = js_GetConsumerInfo(&info, js_, sub_.stream.c_str(), sub_.durable.c_str(),
                                      nullptr, &code);
    if (s != NATS_OK || info == nullptr) {
        if (code == JSConsumerNotFoundErr) {
            // Deleted under us (`nats consumer rm`, a stream re-created): pulls from it only time
            // out. Bind again, which creates it anew unless createConsumer is false. Messages
            // still held keep the old subscription until their outcomes are acked.
            log(wopbridge::log_level::warn, "the durable consumer is gone; binding again");
            return false;
        }
        return true;
    }
    const auto pending = info->NumPending;
    const auto ack_pending = info->NumAckPending;
    const auto limit = info->Config != nullptr ? info->Config->MaxAckPending : 0;
    const auto wait_ms = info->Config != nullptr ? info->Config->AckWait / ns_per_ms : 0;
    jsConsumerInfo_Destroy(info);
    bool holding = false;
    {
        std::lock_guard lock(mu_);
        holding = !in_flight_.empty();
    }
    // Does the consumer keep messages back because its MaxAckPending is taken up by deliveries
    // nobody here holds (a member that stopped, another node)?
    if (withheld_reported_ || holding || ack_pending <= 0 ||
        (pending == 0 && (limit <= 0 || ack_pending < limit))) {
        return true;
    }
    withheld_reported_ = true;
    log(wopbridge::log_level::info,
        std::to_string(ack_pending) +
            " message(s) are delivered to this durable but unacknowledged and none is held here" +
            (limit > 0 && ack_pending >= limit
                 ? " (maxAckPending " + std::to_string(limit) + " reached, " +
                       std::to_string(pending) + " more waiting)"
                 : std::string()) +
            ": another member holds them, or one that stopped; JetStream redelivers them after "
            "ackWait (" +
            std::to_string(wait_ms) + " ms)");
    return true;
}

void consumer_worker::take(natsMsg* msg, const subscription_ref& from) {
    jsMsgMetaData* meta = nullptr;
    if (natsMsg_GetMetaData(&meta, msg) != NATS_OK || meta == nullptr) {
        // Not a JetStream message (no ack subject): nothing to ack, nothing to deliver.
        natsMsg_Destroy(msg);
        return;
    }
    const std::uint64_t seq = meta->Sequence.Stream;
    jsMsgMetaData_Destroy(meta);
    bool fresh = false;
    {
        std::lock_guard lock(mu_);
        auto it = in_flight_.find(seq);
        if (it != in_flight_.end()) {
            // Redelivered while its outcome is outstanding: ack the newest delivery instead.
            it->second.message.replace(msg, from);
            return;
        }
        auto [at, inserted] = in_flight_.try_emplace(seq, msg, from);
        at->second.subject = natsMsg_GetSubject(msg);
        at->second.progress_at = clock::now() + std::chrono::milliseconds(sub_.ack_wait_ms / 2);
        fresh = inserted;
    }
    if (fresh) {
        submit(seq);
    }
}

void consumer_worker::submit(std::uint64_t seq) {
    wopbridge::inbound_event ev;
    {
        std::lock_guard lock(mu_);
        auto it = in_flight_.find(seq);
        if (it == in_flight_.end() || released_) {
            return;
        }
        const held& h = it->second;
        message_view view;
        view.stream = sub_.stream;
        view.stream_sequence = seq;
        view.subject = h.subject;
        if (!sub_.key_header.empty()) {
            const char* value = nullptr;
            if (natsMsgHeader_Get(h.msg(), sub_.key_header.c_str(), &value) == NATS_OK &&
                value != nullptr) {
                view.key = std::string_view(value);
            }
        }
        const char* data = natsMsg_GetData(h.msg());
        view.data = std::string_view(data ? data : "", static_cast<std::size_t>(std::max(
                                                           0, natsMsg_GetDataLength(h.msg()))));
        ev.content_json = event_content(view, settings_.max_message_bytes, h.without_payload);
    }
    ev.provider_event_id = provider_event_id(sub_.stream, seq);
    auto self = shared_from_this();
    wopbridge::submit_held_message(
        host_, std::move(ev), sub_id_, seq,
        [self](std::uint64_t key) { self->on_committed(key); },
        [self](std::uint64_t key, const std::string& reason, int retry_after_seconds) {
            self->on_refused(key, reason, retry_after_seconds);
        });
}

void consumer_worker::on_committed(std::uint64_t seq) {
    natsStatus st = NATS_OK;
    {
        std::lock_guard lock(mu_);
        auto it = in_flight_.find(seq);
        if (it == in_flight_.end() || released_) {
            return;
        }
        // Committed or recognised: only now may JetStream forget the message.
        st = natsMsg_Ack(it->second.msg(), nullptr);
        in_flight_.erase(it);
        backoff_.reset();
    }
    if (st != NATS_OK) {
        // Redelivered after ackWait; the host's dedup answers duplicate and that one is acked.
        log(wopbridge::log_level::warn,
            "ack failed (" + status_text(st) + "); the message is redelivered and deduplicated");
    }
    cv_.notify_all();
}

void consumer_worker::on_refused(std::uint64_t seq, const std::string& reason,
                                 int retry_after_seconds) {
    std::string line;
    auto level = wopbridge::log_level::info;
    {
        std::lock_guard lock(mu_);
        auto it = in_flight_.find(seq);
        if (it == in_flight_.end() || released_) {
            return;
        }
        if (reason == "invalid") {
            if (!it->second.without_payload) {
                // About this message: submit it again without the payload the host refused.
                it->second.without_payload = true;
                resubmit_.push_back(seq);
                cv_.notify_all();
                return;
            }
            // Even without its payload: the host can never take it. Terminate it, so JetStream
            // stops redelivering it (and its MSG_TERMINATED advisory can feed a dead-letter
            // stream).
            natsMsg_Term(it->second.msg(), nullptr);
            in_flight_.erase(it);
            level = wopbridge::log_level::warn;
            line = "message refused as invalid even without its payload; terminated";
        } else {
            // A state of the host or the subscription every message would meet: hand the message
            // back to JetStream with a delay and stop fetching for as long, doubling per refused
            // round so a dead-lettered subscription is not polled every retryDelayMs.
            // Later refusals of the same round come back when fetching resumes.
            const auto round = backoff_.refused(clock::now(), retry_after_seconds);
            natsMsg_NakWithDelay(it->second.msg(),
                                 std::max<std::int64_t>(1, round.delay.count()), nullptr);
            in_flight_.erase(it);
            if (round.fresh) {
                // A new refused round: one line, not one per message.
                line = "submit refused (" + reason +
                       "); the message(s) go back to JetStream, fetching again in " +
                       std::to_string(round.delay.count()) + " ms";
            }
        }
    }
    if (!line.empty()) {
        log(level, line);
    }
    cv_.notify_all();
}

void consumer_worker::keep_in_progress() {
    std::lock_guard lock(mu_);
    const auto now = clock::now();
    for (auto& [seq, h] : in_flight_) {
        if (now >= h.progress_at) {
            natsMsg_InProgress(h.msg(), nullptr);
            h.progress_at = now + std::chrono::milliseconds(sub_.ack_wait_ms / 2);
        }
    }
}

} // namespace wopbridge::nats
