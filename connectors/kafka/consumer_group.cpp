// The group side of a consumer_worker: offset commits and their results, rebalances (assign,
// revoke with a grace for outstanding outcomes), client errors and log lines, and the bounded
// close (drain, last commits, leave the group). consumer_worker.cpp has the poll loop and the
// submit / outcome side.
#include "kafka/consumer_worker.hpp"

#include "kafka/message_event.hpp"

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

namespace wopbridge::kafka {

namespace {

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
            next_probe_ = clock::now() + broker_probe_every;
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
    rd_kafka_queue_t* queue = nullptr;
    {
        std::lock_guard lock(mu_);
        std::swap(queue, consumer_queue_); // no host thread yields it from here on
    }
    if (queue != nullptr) {
        rd_kafka_queue_destroy(queue);
    }
    rd_kafka_destroy_flags(rk_, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
    rk_ = nullptr;
}

} // namespace wopbridge::kafka
