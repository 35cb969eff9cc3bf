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
constexpr auto probe_every = std::chrono::milliseconds(500);
constexpr int probe_timeout_ms = 300;
// Cap of the pause after repeated refusals (or retryDelayMs, when larger).
constexpr auto max_refusal_delay = std::chrono::milliseconds(30000);

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

std::string partition_names(const rd_kafka_topic_partition_list_t* parts) {
    std::map<std::string, std::vector<std::int32_t>> by_topic;
    for (int i = 0; i < parts->cnt; ++i) {
        by_topic[parts->elems[i].topic].push_back(parts->elems[i].partition);
    }
    std::string out;
    for (auto& [topic, ps] : by_topic) {
        std::sort(ps.begin(), ps.end());
        out += (out.empty() ? "" : " ") + topic + "[";
        for (std::size_t i = 0; i < ps.size(); ++i) {
            out += (i ? "," : "") + std::to_string(ps[i]);
        }
        out += "]";
    }
    return out.empty() ? "none" : out;
}

} // namespace

consumer_worker::consumer_worker(const wopbridge::host& host, const connector_settings& settings,
                                 std::string sub_id, subscription_settings sub)
    : host_(host), settings_(settings), sub_id_(std::move(sub_id)), sub_(std::move(sub)),
      refusal_delay_(settings_.retry_delay_ms) {}

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
    consumer_queue_ = rd_kafka_queue_get_consumer(rk_);
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
    }
    cv_.notify_all();
    if (consumer_queue_ != nullptr) {
        rd_kafka_queue_yield(consumer_queue_);
    }
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
            hold = now < paused_until_ || !host_.has_capacity();
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
    next_probe_ = clock::now() + probe_every;
    const struct rd_kafka_metadata* md = nullptr;
    const auto e = rd_kafka_metadata(rk_, 0, nullptr, &md, probe_timeout_ms);
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR && md != nullptr) {
        const int brokers = md->broker_cnt;
        rd_kafka_metadata_destroy(md);
        down_ = false;
        {
            std::lock_guard lock(log_mu_);
            last_error_.clear();
        }
        log(wopbridge::log_level::info, "connection regained (" + std::to_string(brokers) +
                                            " broker(s) answer); consuming again");
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
    ev.subscription_id = sub_id_;
    ev.received_at_ms = host_.now_ms();
    ev.verified = false; // Kafka authenticates the connection, not the producer
    auto self = shared_from_this();
    const auto st = host_.submit(
        ev, [self, id](const wopbridge::submit_outcome& o) { self->on_outcome(id, o); });
    if (st != wopbridge::status::ok) {
        on_refused(id, "not taken, status " + std::to_string(static_cast<int>(st)), 0);
    }
}

void consumer_worker::on_outcome(std::uint64_t id, const wopbridge::submit_outcome& o) {
    if (o.kind == wopbridge::outcome_kind::refused) {
        on_refused(id, o.reason, o.retry_after_seconds);
        return;
    }
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
        refusal_delay_ = std::chrono::milliseconds(settings_.retry_delay_ms);
    }
    cv_.notify_all();
    if (was_full && consumer_queue_ != nullptr) {
        rd_kafka_queue_yield(consumer_queue_); // resume reading now, not after a poll wait
    }
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
            const auto base = std::chrono::milliseconds(settings_.retry_delay_ms);
            const bool new_round = now >= paused_until_;
            const auto delay =
                new_round ? std::max(refusal_delay_,
                                     std::chrono::milliseconds(retry_after_seconds * 1000LL))
                          : std::chrono::duration_cast<std::chrono::milliseconds>(paused_until_ -
                                                                                  now);
            h.waiting = true;
            h.retry_at = now + delay;
            if (new_round) {
                paused_until_ = now + delay;
                refusal_delay_ = std::min(refusal_delay_ * 2, std::max(base, max_refusal_delay));
                line = "submit refused (" + reason +
                       "); partitions paused, the record(s) are submitted again in " +
                       std::to_string(delay.count()) + " ms";
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

void consumer_worker::commit(bool sync, const std::set<partition_key>* only) {
    rd_kafka_topic_partition_list_t* list = nullptr;
    {
        std::lock_guard lock(mu_);
        for (auto& [key, p] : parts_) {
            if (only != nullptr && only->count(key) == 0) {
                continue;
            }
            const auto c = p.offsets.committable();
            if (!c || *c <= p.sent) {
                continue;
            }
            if (list == nullptr) {
                list = rd_kafka_topic_partition_list_new(4);
            }
            rd_kafka_topic_partition_list_add(list, key.first.c_str(), key.second)->offset = *c;
            p.sent = *c;
        }
    }
    if (list == nullptr) {
        return;
    }
    const auto e = rd_kafka_commit(rk_, list, sync ? 0 : 1);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
        // Not sent (e.g. no longer a member): sent again on the next round; the callback, if it
        // comes, also resets what failed.
        std::lock_guard lock(mu_);
        for (int i = 0; i < list->cnt; ++i) {
            auto p = parts_.find({list->elems[i].topic, list->elems[i].partition});
            if (p != parts_.end()) {
                p->second.sent = p->second.confirmed;
            }
        }
    }
    rd_kafka_topic_partition_list_destroy(list);
}

void consumer_worker::on_commit(rd_kafka_resp_err_t err,
                                rd_kafka_topic_partition_list_t* offsets) {
    if (offsets == nullptr || err == RD_KAFKA_RESP_ERR__NO_OFFSET) {
        return;
    }
    bool failed = false;
    {
        std::lock_guard lock(mu_);
        for (int i = 0; i < offsets->cnt; ++i) {
            const auto& e = offsets->elems[i];
            auto p = parts_.find({e.topic, e.partition});
            if (p == parts_.end()) {
                continue; // revoked meanwhile
            }
            if (err != RD_KAFKA_RESP_ERR_NO_ERROR || e.err != RD_KAFKA_RESP_ERR_NO_ERROR) {
                // Sent again on the next round: a lost commit only means a redelivery, which
                // the host's dedup absorbs.
                p->second.sent = p->second.confirmed;
                failed = true;
            } else {
                p->second.confirmed = std::max(p->second.confirmed, e.offset);
            }
        }
    }
    if (failed) {
        std::lock_guard lock(log_mu_);
        const std::string what = std::string("offset commit failed: ") + rd_kafka_err2str(err);
        if (what != last_error_) {
            last_error_ = what;
            log(wopbridge::log_level::warn, what + "; committing again");
        }
    }
}

void consumer_worker::on_rebalance(rd_kafka_resp_err_t err,
                                   rd_kafka_topic_partition_list_t* parts) {
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        {
            std::lock_guard lock(mu_);
            for (int i = 0; i < parts->cnt; ++i) {
                parts_[{parts->elems[i].topic, parts->elems[i].partition}] = partition_state{};
            }
        }
        if (cooperative_) {
            if (auto* e = rd_kafka_incremental_assign(rk_, parts)) {
                log(wopbridge::log_level::error,
                    std::string("assign failed: ") + rd_kafka_error_string(e));
                rd_kafka_error_destroy(e);
            }
        } else {
            rd_kafka_assign(rk_, parts);
        }
        if (paused_ && parts->cnt > 0) {
            rd_kafka_pause_partitions(rk_, parts); // the loop resumes them with the rest
        }
        log(wopbridge::log_level::info, "consuming: assigned " + partition_names(parts));
        return;
    }
    // Revoked (or an error: let everything go). Outcomes outstanding for these partitions get a
    // grace period; what is contiguous is committed, the rest is the next owner's to read.
    std::set<partition_key> revoked;
    for (int i = 0; i < parts->cnt; ++i) {
        revoked.emplace(parts->elems[i].topic, parts->elems[i].partition);
    }
    {
        std::unique_lock lock(mu_);
        const auto until =
            stopping_ ? deadline_
                      : clock::now() + std::chrono::milliseconds(settings_.revoke_grace_ms);
        cv_.wait_until(lock, until, [&] {
            return std::none_of(held_.begin(), held_.end(), [&](const auto& e) {
                return !e.second.waiting &&
                       revoked.count({e.second.topic, e.second.partition}) != 0;
            });
        });
    }
    commit(true, &revoked);
    std::size_t dropped = 0;
    {
        std::lock_guard lock(mu_);
        for (auto it = held_.begin(); it != held_.end();) {
            if (revoked.count({it->second.topic, it->second.partition}) != 0) {
                it = held_.erase(it);
                ++dropped;
            } else {
                ++it;
            }
        }
        for (const auto& k : revoked) {
            parts_.erase(k);
        }
    }
    if (cooperative_) {
        if (auto* e = rd_kafka_incremental_unassign(rk_, parts)) {
            rd_kafka_error_destroy(e);
        }
    } else {
        rd_kafka_assign(rk_, nullptr);
    }
    log(wopbridge::log_level::info,
        "revoked " + partition_names(parts) +
            (dropped ? "; " + std::to_string(dropped) +
                           " uncommitted record(s) left to the next owner"
                     : std::string()));
}

void consumer_worker::on_error(int err, const char* reason) {
    const auto code = static_cast<rd_kafka_resp_err_t>(err);
    if (code == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN) {
        if (!down_) {
            down_ = true;
            next_probe_ = clock::now() + probe_every;
            log(wopbridge::log_level::warn,
                "connection lost: all brokers down; reconnecting (uncommitted offsets stay "
                "with the group)");
        }
        return;
    }
    if (code == RD_KAFKA_RESP_ERR__TRANSPORT || code == RD_KAFKA_RESP_ERR__RESOLVE ||
        code == RD_KAFKA_RESP_ERR__TIMED_OUT) {
        return; // one broker's connection; the outage line above covers the whole cluster
    }
    std::string what = std::string(rd_kafka_err2str(code)) + ": " + (reason ? reason : "");
    if (code == RD_KAFKA_RESP_ERR__FATAL) {
        char buf[512] = {0};
        rd_kafka_fatal_error(rk_, buf, sizeof buf);
        what = std::string("fatal: ") + buf;
    }
    std::lock_guard lock(log_mu_);
    if (what != last_error_) {
        last_error_ = what;
        log(code == RD_KAFKA_RESP_ERR__FATAL ? wopbridge::log_level::error
                                             : wopbridge::log_level::warn,
            "client error: " + what);
    }
}

void consumer_worker::on_log(int level, const char* facility, const char* line) {
    // librdkafka's own warnings and errors (levels 0..4); connection failures are the outage
    // line's business, the rest (debug, info) is not ours to log.
    if (level > 4 || (facility != nullptr && std::strcmp(facility, "FAIL") == 0)) {
        return;
    }
    const std::string what = std::string(facility ? facility : "?") + ": " + (line ? line : "");
    std::lock_guard lock(log_mu_);
    if (what != last_error_) {
        last_error_ = what;
        log(wopbridge::log_level::warn, "librdkafka: " + what);
    }
}

void consumer_worker::close_client() {
    if (rk_ == nullptr) {
        return;
    }
    if (started_) {
        // No more records; the outcomes outstanding get until the deadline, polling meanwhile so
        // commit results and rebalances are served.
        set_paused(true);
        for (;;) {
            {
                std::unique_lock lock(mu_);
                const bool outstanding = std::any_of(held_.begin(), held_.end(),
                                                     [](const auto& e) { return !e.second.waiting; });
                if (!outstanding || clock::now() >= deadline_) {
                    break;
                }
                cv_.wait_for(lock, std::chrono::milliseconds(20));
            }
            commit(false);
            if (auto* m = rd_kafka_consumer_poll(rk_, 0)) {
                rd_kafka_message_destroy(m); // read after the pause: not taken, read again later
            }
        }
        commit(false);
        // The last commits answered (or failed), so the group holds them before we leave it.
        for (;;) {
            {
                std::lock_guard lock(mu_);
                const bool unconfirmed = std::any_of(parts_.begin(), parts_.end(), [](const auto& e) {
                    return e.second.sent > e.second.confirmed;
                });
                if (!unconfirmed || clock::now() >= deadline_) {
                    break;
                }
            }
            if (auto* m = rd_kafka_consumer_poll(rk_, 20)) {
                rd_kafka_message_destroy(m);
            }
        }
        std::size_t left = 0;
        {
            std::lock_guard lock(mu_);
            left = held_.size();
            held_.clear();
            released_ = true;
        }
        if (left > 0) {
            log(wopbridge::log_level::warn,
                "stopped with " + std::to_string(left) +
                    " record(s) not committed in the bridge; the group reads them again");
        }
        // Leave the group, bounded by the deadline (a broker that is down must not hold stop()).
        rd_kafka_queue_t* q = rd_kafka_queue_new(rk_);
        if (auto* e = rd_kafka_consumer_close_queue(rk_, q)) {
            rd_kafka_error_destroy(e);
        } else {
            const auto until = std::max(deadline_, clock::now() + std::chrono::milliseconds(500));
            while (!rd_kafka_consumer_closed(rk_) && clock::now() < until) {
                rd_kafka_event_t* ev = rd_kafka_queue_poll(q, 50);
                if (ev == nullptr) {
                    continue;
                }
                if (rd_kafka_event_type(ev) == RD_KAFKA_EVENT_REBALANCE) {
                    on_rebalance(rd_kafka_event_error(ev),
                                 rd_kafka_event_topic_partition_list(ev));
                }
                rd_kafka_event_destroy(ev);
            }
        }
        rd_kafka_queue_destroy(q);
    }
    if (consumer_queue_ != nullptr) {
        rd_kafka_queue_destroy(consumer_queue_);
        consumer_queue_ = nullptr;
    }
    rd_kafka_destroy_flags(rk_, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
    rk_ = nullptr;
}

} // namespace wopbridge::kafka
