#include "kafka/consumer_worker.hpp"

#include "kafka/message_event.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

namespace wopbridge::kafka {

namespace {

constexpr auto capacity_poll = std::chrono::milliseconds(50);
// How long the in-flight bound may last before the partitions are paused.
constexpr auto lasting_full = std::chrono::milliseconds(500);
constexpr int probe_timeout_ms = 300;

consumer_worker* self_of(void* opaque) {
    return static_cast<consumer_worker*>(opaque);
}

void rebalance_cb(rd_kafka_t*, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* parts,
                  void* opaque) {
    self_of(opaque)->on_rebalance(err, parts);
}

void error_cb(rd_kafka_t*, int err, const char* reason, void* opaque) {
    self_of(opaque)->on_error(err, reason);
}

void commit_cb(rd_kafka_t*, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* offsets,
               void* opaque) {
    self_of(opaque)->on_commit(err, offsets);
}

void log_cb(const rd_kafka_t* rk, int level, const char* fac, const char* buf) {
    if (void* opaque = rd_kafka_opaque(rk)) {
        self_of(opaque)->on_log(level, fac, buf);
    }
}

} // namespace

consumer_worker::consumer_worker(const wopbridge::host& host, const connector_settings& settings,
                                 std::string sub_id, subscription_settings sub)
    : host_(host), settings_(settings), sub_id_(std::move(sub_id)), sub_(std::move(sub)),
      backoff_(std::chrono::milliseconds(settings_.retry_delay_ms)) {}

consumer_worker::~consumer_worker() {
    stop(clock::now());
}

void consumer_worker::log(wopbridge::log_level level, const std::string& message) const {
    // Names only (subscription, group): never record content or credentials.
    host_.log(level, "kafka[" + sub_id_ + " " + sub_.group_id +
                         "]: " + redact(message, settings_.sensitive_values()));
}

bool consumer_worker::start(std::string& error) {
    std::lock_guard lock(mu_);
    if (started_ || stopped_) {
        return true;
    }
    char err[512] = {0};
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    auto props = settings_.client_properties();
    props.emplace_back("group.id", sub_.group_id);
    props.emplace_back("auto.offset.reset", sub_.from_beginning ? "earliest" : "latest");
    for (const auto& [k, v] : props) {
        if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
            error = "settings: " + k + ": " + redact(err, settings_.sensitive_values());
            rd_kafka_conf_destroy(conf);
            return false;
        }
    }
    rd_kafka_conf_set_opaque(conf, this);
    rd_kafka_conf_set_rebalance_cb(conf, rebalance_cb);
    rd_kafka_conf_set_error_cb(conf, error_cb);
    rd_kafka_conf_set_offset_commit_cb(conf, commit_cb);
    rd_kafka_conf_set_log_cb(conf, log_cb);
    rk_ = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    if (rk_ == nullptr) {
        error = "settings: the client refused them: " + redact(err, settings_.sensitive_values());
        rd_kafka_conf_destroy(conf);
        return false;
    }
    cooperative_ = std::strcmp(rd_kafka_rebalance_protocol(rk_), "COOPERATIVE") == 0;
    rd_kafka_poll_set_consumer(rk_);
    consumer_queue_ = rd_kafka_queue_get_consumer(rk_); // under mu_ (start holds it)
    rd_kafka_topic_partition_list_t* topics =
        rd_kafka_topic_partition_list_new(static_cast<int>(sub_.topics.size()));
    for (const auto& t : sub_.topics) {
        rd_kafka_topic_partition_list_add(topics, t.c_str(), RD_KAFKA_PARTITION_UA);
    }
    const auto e = rd_kafka_subscribe(rk_, topics);
    rd_kafka_topic_partition_list_destroy(topics);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
        error = std::string("subscribe: ") + rd_kafka_err2str(e);
        return false; // stop() destroys the client
    }
    started_ = true;
    thread_ = std::thread([this] { run(); });
    return true;
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
        if (consumer_queue_ != nullptr) {
            rd_kafka_queue_yield(consumer_queue_); // under mu_: close_client may free it
        }
    }
    cv_.notify_all();
    if (thread_.joinable()) {
        thread_.join(); // the loop drains, commits and closes the client
    } else {
        close_client();
    }
}

void consumer_worker::set_paused(bool paused) {
    if (paused == paused_ || rk_ == nullptr) {
        return;
    }
    rd_kafka_topic_partition_list_t* assigned = nullptr;
    if (rd_kafka_assignment(rk_, &assigned) == RD_KAFKA_RESP_ERR_NO_ERROR && assigned != nullptr) {
        if (assigned->cnt > 0) {
            if (paused) {
                rd_kafka_pause_partitions(rk_, assigned);
            } else {
                rd_kafka_resume_partitions(rk_, assigned);
            }
        }
        rd_kafka_topic_partition_list_destroy(assigned);
    }
    paused_ = paused;
}

void consumer_worker::run() {
    while (!stopping_) {
        resubmit_due();
        bool full = false;
        bool hold = false;
        auto now = clock::now();
        {
            std::lock_guard lock(mu_);
            // Backpressure: never hold more than maxInFlight records, never read while the host
            // is saturated or asked us to wait.
            full = held_.size() >= settings_.max_in_flight;
            hold = backoff_.paused(now) || !host_.has_capacity();
        }
        // At the in-flight bound the loop first waits for room without polling (outcomes come
        // within milliseconds at speed); only a bound that lasts pauses the partitions, which
        // drops librdkafka's prefetch and costs a fetch round trip on resume.
        if (!full) {
            full_since_ = clock::time_point{};
        } else if (full_since_ == clock::time_point{}) {
            full_since_ = now;
        }
        const bool lasting = full && now - full_since_ >= lasting_full;
        set_paused(hold || lasting);
        if (now >= next_commit_) {
            commit(false);
            next_commit_ = now + std::chrono::milliseconds(settings_.commit_interval_ms);
        }
        if (down_ && now >= next_probe_) {
            probe_brokers();
        }
        if (full && !hold && !lasting) {
            std::unique_lock lock(mu_);
            cv_.wait_for(lock, std::chrono::milliseconds(10), [&] {
                return stopping_.load() || held_.size() < settings_.max_in_flight;
            });
            continue;
        }
        const bool pause = hold || lasting;
        const auto wait = pause ? capacity_poll : std::chrono::milliseconds(settings_.poll_wait_ms);
        rd_kafka_message_t* m = rd_kafka_consumer_poll(rk_, static_cast<int>(wait.count()));
        if (m == nullptr) {
            continue;
        }
        if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
            if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                const std::string what = std::string(rd_kafka_err2str(m->err)) +
                                         (m->rkt ? std::string(" (topic ") +
                                                       rd_kafka_topic_name(m->rkt) + ")"
                                                 : std::string());
                std::lock_guard lock(log_mu_);
                if (what != last_error_) {
                    last_error_ = what;
                    log(wopbridge::log_level::warn, "consumer error: " + what);
                }
            }
            rd_kafka_message_destroy(m);
            continue;
        }
        if (down_) {
            down_ = false;
            log(wopbridge::log_level::info, "connection regained; consuming again");
        }
        take(m);
        rd_kafka_message_destroy(m);
    }
    close_client();
}

void consumer_worker::probe_brokers() {
    next_probe_ = clock::now() + broker_probe_every;
    // An assigned partition's end offset asks its leader (a broker this member needs, so
    // librdkafka reconnects to it); without an assignment, a metadata request to any broker.
    std::optional<partition_key> any;
    {
        std::lock_guard lock(mu_);
        if (!parts_.empty()) {
            any = parts_.begin()->first;
        }
    }
    bool answered = false;
    if (any) {
        std::int64_t lo = 0;
        std::int64_t hi = 0;
        answered = rd_kafka_query_watermark_offsets(rk_, any->first.c_str(), any->second, &lo, &hi,
                                                    probe_timeout_ms) ==
                   RD_KAFKA_RESP_ERR_NO_ERROR;
    }
    const struct rd_kafka_metadata* md = nullptr;
    if (!answered &&
        rd_kafka_metadata(rk_, 0, nullptr, &md, probe_timeout_ms) == RD_KAFKA_RESP_ERR_NO_ERROR &&
        md != nullptr) {
        answered = true;
    }
    if (answered) {
        const int brokers = md != nullptr ? md->broker_cnt : 0;
        if (md != nullptr) {
            rd_kafka_metadata_destroy(md);
        }
        down_ = false;
        {
            std::lock_guard lock(log_mu_);
            last_error_.clear();
        }
        log(wopbridge::log_level::info,
            "connection regained (" +
                (brokers > 0 ? std::to_string(brokers) + " broker(s) answer"
                             : std::string("the partitions' leader answers")) +
                "); consuming again");
    }
}

void consumer_worker::take(const rd_kafka_message_t* m) {
    held h;
    h.topic = rd_kafka_topic_name(m->rkt);
    h.partition = m->partition;
    h.offset = m->offset;
    if (m->key != nullptr) {
        h.key.emplace(static_cast<const char*>(m->key), m->key_len);
    }
    if (m->len > settings_.max_message_bytes) {
        h.oversize = true;
    } else if (m->payload != nullptr) {
        h.data.assign(static_cast<const char*>(m->payload), m->len);
    }
    std::uint64_t id = 0;
    {
        std::lock_guard lock(mu_);
        auto& part = parts_[{h.topic, h.partition}];
        if (!part.offsets.received(h.offset)) {
            return; // read again after a rebalance or seek: the first reading is outstanding
        }
        id = next_id_++;
        held_.emplace(id, std::move(h));
    }
    submit(id);
}

void consumer_worker::submit(std::uint64_t id) {
    wopbridge::inbound_event ev;
    {
        std::lock_guard lock(mu_);
        auto it = held_.find(id);
        if (it == held_.end() || released_) {
            return;
        }
        const held& h = it->second;
        record_view view;
        view.topic = h.topic;
        view.partition = h.partition;
        view.offset = h.offset;
        if (h.key) {
            view.key = std::string_view(*h.key);
        }
        view.data = h.data;
        ev.content_json =
            event_content(view, settings_.max_message_bytes, h.without_payload || h.oversize);
        ev.provider_event_id = provider_event_id(h.topic, h.partition, h.offset);
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
    bool was_full = false;
    {
        std::lock_guard lock(mu_);
        auto it = held_.find(id);
        if (it == held_.end() || released_) {
            return;
        }
        // Committed or recognised: only now may the group's offset pass it.
        was_full = held_.size() >= settings_.max_in_flight;
        auto p = parts_.find({it->second.topic, it->second.partition});
        if (p != parts_.end()) {
            p->second.offsets.done(it->second.offset);
        }
        held_.erase(it);
        backoff_.reset();
        if (was_full && consumer_queue_ != nullptr) {
            // Resume reading now, not after a poll wait. Under mu_: the poll thread may be
            // closing the client and freeing the queue (a yield does not block).
            rd_kafka_queue_yield(consumer_queue_);
        }
    }
    cv_.notify_all();
}

void consumer_worker::on_refused(std::uint64_t id, const std::string& reason,
                                 int retry_after_seconds) {
    std::string line;
    auto level = wopbridge::log_level::info;
    {
        std::lock_guard lock(mu_);
        auto it = held_.find(id);
        if (it == held_.end() || released_) {
            return;
        }
        held& h = it->second;
        const auto now = clock::now();
        if (reason == "invalid") {
            if (!h.without_payload) {
                // About this record: submit it again without the payload the host refused.
                h.without_payload = true;
                h.waiting = true;
                h.retry_at = now;
            } else {
                // Even without its payload the host can never take it: commit past it, so it
                // does not block its partition for good.
                auto p = parts_.find({h.topic, h.partition});
                if (p != parts_.end()) {
                    p->second.offsets.done(h.offset);
                }
                level = wopbridge::log_level::warn;
                line = "record " + provider_event_id(h.topic, h.partition, h.offset) +
                       " refused as invalid even without its payload; skipped";
                held_.erase(it);
            }
        } else {
            // A state of the host or the subscription every record would meet: hold the record,
            // pause the partitions for the delay (doubling per refused round) and submit again.
            const auto round = backoff_.refused(now, retry_after_seconds);
            h.waiting = true;
            h.retry_at = now + round.delay;
            if (round.fresh) {
                line = "submit refused (" + reason +
                       "); partitions paused, the record(s) are submitted again in " +
                       std::to_string(round.delay.count()) + " ms";
            }
        }
    }
    if (!line.empty()) {
        log(level, line);
    }
    cv_.notify_all();
}

void consumer_worker::resubmit_due() {
    std::vector<std::uint64_t> due;
    {
        std::lock_guard lock(mu_);
        const auto now = clock::now();
        for (auto& [id, h] : held_) {
            if (h.waiting && now >= h.retry_at) {
                h.waiting = false;
                due.push_back(id);
            }
        }
    }
    for (const auto id : due) {
        submit(id);
    }
}

} // namespace wopbridge::kafka
