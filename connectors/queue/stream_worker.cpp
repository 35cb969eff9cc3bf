#include "queue/stream_worker.hpp"

#include "wopbridge/json_util.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <iterator>
#include <set>

namespace wopbridge::queue {

namespace {

constexpr auto min_backoff = std::chrono::milliseconds(100);
constexpr auto max_backoff = std::chrono::milliseconds(2000);
constexpr auto capacity_poll = std::chrono::milliseconds(50);
constexpr std::size_t max_ack_batch = 256;

std::optional<stream_entry> entry_of(const resp_value& v) {
    if (!v.is_array() || v.elements.size() != 2 || !v.elements[0].is_string()) {
        return std::nullopt;
    }
    stream_entry e;
    e.id = v.elements[0].text;
    const auto& f = v.elements[1];
    if (f.is_null()) {
        return e; // deleted while pending
    }
    if (!f.is_array() || f.elements.size() % 2 != 0) {
        return std::nullopt;
    }
    e.fields.emplace();
    for (std::size_t i = 0; i < f.elements.size(); i += 2) {
        if (!f.elements[i].is_string() || !f.elements[i + 1].is_string()) {
            return std::nullopt;
        }
        e.fields->emplace_back(f.elements[i].text, f.elements[i + 1].text);
    }
    return e;
}

std::optional<std::vector<stream_entry>> entries_of_list(const resp_value& list) {
    if (!list.is_array()) {
        return std::nullopt;
    }
    std::vector<stream_entry> out;
    out.reserve(list.elements.size());
    for (const auto& item : list.elements) {
        if (item.is_null()) {
            continue; // Redis 6.2 XAUTOCLAIM: an entry deleted while pending
        }
        auto e = entry_of(item);
        if (!e) {
            return std::nullopt;
        }
        out.push_back(std::move(*e));
    }
    return out;
}

} // namespace

std::optional<std::vector<stream_entry>> entries_of_read(const resp_value& reply) {
    if (reply.is_null()) {
        return std::vector<stream_entry>{}; // BLOCK timed out
    }
    if (!reply.is_array()) {
        return std::nullopt;
    }
    std::vector<stream_entry> out;
    for (const auto& per_stream : reply.elements) {
        if (!per_stream.is_array() || per_stream.elements.size() != 2) {
            return std::nullopt;
        }
        auto list = entries_of_list(per_stream.elements[1]);
        if (!list) {
            return std::nullopt;
        }
        std::move(list->begin(), list->end(), std::back_inserter(out));
    }
    return out;
}

std::optional<std::pair<std::string, std::vector<stream_entry>>>
entries_of_autoclaim(const resp_value& reply) {
    if (!reply.is_array() || reply.elements.size() < 2 || !reply.elements[0].is_string()) {
        return std::nullopt;
    }
    auto list = entries_of_list(reply.elements[1]);
    if (!list) {
        return std::nullopt;
    }
    return std::pair{reply.elements[0].text, std::move(*list)};
}

std::string event_content(const subscription_settings& sub, const stream_entry& entry,
                          std::size_t max_message_bytes) {
    std::string out = R"({"stream":{"topic":)" + json::quote(sub.stream) + R"(,"offset":)" +
                      json::quote(entry.id);
    std::size_t bytes = 0;
    if (entry.fields) {
        for (const auto& [f, v] : *entry.fields) {
            bytes += f.size() + v.size();
        }
        if (!sub.key_field.empty()) {
            for (const auto& [f, v] : *entry.fields) {
                if (f == sub.key_field) {
                    out += R"(,"key":)" + json::quote(v);
                    break;
                }
            }
        }
    }
    out += R"(,"message":)";
    if (!entry.fields || bytes > max_message_bytes) {
        // Deleted or oversize: still one event (topic + offset identify it), never a stuck stream.
        out += "null";
    } else if (!sub.message_field.empty()) {
        const std::string* value = nullptr;
        for (const auto& [f, v] : *entry.fields) {
            if (f == sub.message_field) {
                value = &v;
                break;
            }
        }
        boost::system::error_code ec;
        const auto parsed = value ? boost::json::parse(*value, ec) : boost::json::value{};
        if (value == nullptr) {
            out += "null";
        } else if (!ec) {
            out += boost::json::serialize(parsed);
        } else {
            out += json::quote(*value); // not JSON: the string itself
        }
    } else {
        out += '{';
        std::set<std::string_view> seen; // XADD allows a field twice: the first one wins
        for (const auto& [f, v] : *entry.fields) {
            if (!seen.insert(f).second) {
                continue;
            }
            if (seen.size() > 1) {
                out += ',';
            }
            out += json::quote(f) + ':' + json::quote(v);
        }
        out += '}';
    }
    out += "}}";
    return out;
}

stream_worker::stream_worker(const wopbridge::host& host, connector_settings settings,
                             std::string sub_id, subscription_settings sub)
    : host_(host), settings_(std::move(settings)), sub_id_(std::move(sub_id)), sub_(std::move(sub)),
      backoff_(std::chrono::milliseconds(settings_.retry_delay_ms)) {}

stream_worker::~stream_worker() {
    stop(clock::now());
}

void stream_worker::log(wopbridge::log_level level, const std::string& message) const {
    // Names only (subscription, stream, group): never message content or credentials.
    host_.log(level, "queue[" + sub_id_ + " " + sub_.stream + "/" + sub_.group + "]: " + message);
}

std::chrono::milliseconds stream_worker::command_timeout() const {
    return std::chrono::milliseconds(settings_.command_timeout_ms);
}

void stream_worker::start() {
    std::lock_guard lock(mu_);
    if (started_) {
        return;
    }
    started_ = true;
    // The threads hold the worker alive; stop() joins them.
    reader_ = std::thread([this] { read_loop(); });
    acker_ = std::thread([this] { ack_loop(); });
}

void stream_worker::stop(clock::time_point deadline) {
    {
        std::lock_guard lock(mu_);
        if (stopped_) {
            return;
        }
        stopped_ = true;
        stop_reading_ = true;
    }
    cv_.notify_all();
    reader_conn_.interrupt();
    if (reader_.joinable()) {
        reader_.join();
    }
    {
        // Finish in-flight work: every outcome, then every ack, until the deadline.
        std::unique_lock lock(mu_);
        const bool done = cv_.wait_until(lock, deadline, [&] { return in_flight_.empty(); });
        if (!done) {
            log(wopbridge::log_level::warn,
                "stopped with " + std::to_string(in_flight_.size()) +
                    " message(s) unacknowledged; they stay pending and are delivered again");
        }
        stop_acking_ = true;
    }
    cv_.notify_all();
    ack_conn_.interrupt();
    if (acker_.joinable()) {
        acker_.join();
    }
    reader_conn_.close();
    ack_conn_.close();
}

bool stream_worker::connect_reader(std::chrono::milliseconds retry_in) {
    std::string error;
    if (!reader_conn_.connect(settings_.url,
                              std::chrono::milliseconds(settings_.connect_timeout_ms), error)) {
        ++failed_connects_;
        // Every attempt is logged with its backoff, so an outage is visible while it lasts.
        log(wopbridge::log_level::warn, "connect failed: " + error + "; retrying in " +
                                            std::to_string(retry_in.count()) + " ms");
        return false;
    }
    const std::string start_at =
        !last_read_id_.empty() ? last_read_id_ : (sub_.from_beginning ? "0" : "$");
    auto r = reader_conn_.run(
        {"XGROUP", "CREATE", sub_.stream, sub_.group, start_at, "MKSTREAM"}, command_timeout(),
        error);
    if (!r) {
        log(wopbridge::log_level::warn, "XGROUP CREATE failed: " + error);
        return false;
    }
    if (r->is_error() && r->error_code() != "BUSYGROUP") {
        log(wopbridge::log_level::error, "XGROUP CREATE refused: " + std::string(r->error_code()));
        reader_conn_.close();
        return false;
    }
    // After every (re)connect: first our own pending entries (a reply may have been lost).
    scanning_ = true;
    scan_cursor_ = "0";
    log(wopbridge::log_level::info,
        "consuming as " + settings_.consumer +
            (failed_connects_ > 0
                 ? " (connected after " + std::to_string(failed_connects_) + " failed attempt(s))"
                 : std::string()));
    failed_connects_ = 0;
    return true;
}

void stream_worker::read_loop() {
    auto backoff = min_backoff;
    for (;;) {
        // Connect (and create the group) first, so the group exists even while we must not read.
        if (!stop_reading_ && !reader_conn_.connected() && !connect_reader(backoff)) {
            std::unique_lock lock(mu_);
            cv_.wait_for(lock, backoff, [&] { return stop_reading_.load(); });
            backoff = std::min(backoff * 2, max_backoff);
            continue;
        }
        std::size_t room = 0;
        {
            std::unique_lock lock(mu_);
            if (stop_reading_) {
                return;
            }
            // Backpressure: never hold more than maxInFlight unacked messages, never read while
            // the host is saturated or asked us to wait.
            const auto now = clock::now();
            const bool full = in_flight_.size() >= settings_.max_in_flight;
            if (full || now < paused_until_ || !host_.has_capacity()) {
                cv_.wait_until(lock, now + capacity_poll, [&] { return stop_reading_.load(); });
                continue;
            }
            room = std::min(settings_.batch_size, settings_.max_in_flight - in_flight_.size());
        }
        if (!read_round(room)) {
            std::unique_lock lock(mu_);
            cv_.wait_for(lock, backoff, [&] { return stop_reading_.load(); });
            backoff = std::min(backoff * 2, max_backoff);
            continue;
        }
        backoff = min_backoff;
    }
}

bool stream_worker::read_round(std::size_t room) {
    std::string error;
    const auto now = clock::now();
    const std::string count = std::to_string(room);
    const auto fail = [&](const std::string& what) {
        if (!stop_reading_) {
            log(wopbridge::log_level::warn, what + " failed: " + error);
        }
        reader_conn_.close();
        return false;
    };
    const auto refused = [&](const char* what, const resp_value& r) {
        log(wopbridge::log_level::warn,
            std::string(what) + " refused: " + std::string(r.error_code()));
        // NOGROUP: the stream or group vanished (e.g. a Redis restart without persistence);
        // reconnecting creates them again.
        reader_conn_.close();
        return false;
    };

    {
        std::lock_guard lock(mu_);
        if (!scanning_ && rescan_at_ && now >= *rescan_at_) {
            rescan_at_.reset();
            scanning_ = true;
            scan_cursor_ = "0";
        }
    }

    std::vector<stream_entry> entries;
    if (scanning_) {
        // Our own pending entries, page by page (ids after the cursor).
        auto r = reader_conn_.run({"XREADGROUP", "GROUP", sub_.group, settings_.consumer, "COUNT",
                                   count, "STREAMS", sub_.stream, scan_cursor_},
                                  command_timeout(), error);
        if (!r) {
            return fail("XREADGROUP (pending)");
        }
        if (r->is_error()) {
            return refused("XREADGROUP (pending)", *r);
        }
        auto list = entries_of_read(*r);
        if (!list) {
            error = "unexpected reply shape";
            return fail("XREADGROUP (pending)");
        }
        if (list->empty()) {
            scanning_ = false;
            scan_cursor_ = "0";
        } else {
            scan_cursor_ = list->back().id;
        }
        entries = std::move(*list);
    } else if (settings_.claim_idle_ms > 0 && claim_supported_ && now >= next_claim_at_) {
        auto r = reader_conn_.run({"XAUTOCLAIM", sub_.stream, sub_.group, settings_.consumer,
                                   std::to_string(settings_.claim_idle_ms), claim_cursor_, "COUNT",
                                   count},
                                  command_timeout(), error);
        if (!r) {
            return fail("XAUTOCLAIM");
        }
        if (r->is_error() && r->error_code() == "ERR") {
            // Unknown command: a Redis before 6.2. Keep consuming, without taking over entries.
            log(wopbridge::log_level::error,
                "XAUTOCLAIM is not supported by this server (Redis >= 6.2 needed); pending "
                "entries of dead consumers are not claimed");
            claim_supported_ = false;
            return true;
        }
        if (r->is_error()) {
            return refused("XAUTOCLAIM", *r);
        }
        auto claimed = entries_of_autoclaim(*r);
        if (!claimed) {
            error = "unexpected reply shape";
            return fail("XAUTOCLAIM");
        }
        claim_cursor_ = claimed->first;
        if (claim_cursor_ == "0-0") {
            // A full pass: look again when the next entries could have become idle.
            next_claim_at_ = now + std::chrono::milliseconds(
                                       std::max<std::int64_t>(settings_.claim_idle_ms / 2, 50));
        }
        entries = std::move(claimed->second);
        if (!entries.empty()) {
            log(wopbridge::log_level::info,
                "claimed " + std::to_string(entries.size()) + " idle pending message(s)");
        }
    } else {
        // New messages. Do not block past the next claim pass or pending re-read.
        auto block = std::chrono::milliseconds(settings_.block_ms);
        const auto cap_until = [&](clock::time_point t) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(t - now);
            block = std::max(std::chrono::milliseconds(1), std::min(block, left));
        };
        if (settings_.claim_idle_ms > 0 && claim_supported_) {
            cap_until(next_claim_at_);
        }
        {
            std::lock_guard lock(mu_);
            if (rescan_at_) {
                cap_until(*rescan_at_);
            }
        }
        auto r =
            reader_conn_.run({"XREADGROUP", "GROUP", sub_.group, settings_.consumer, "COUNT", count,
                              "BLOCK", std::to_string(block.count()), "STREAMS", sub_.stream, ">"},
                             block + command_timeout(), error);
        if (!r) {
            return fail("XREADGROUP");
        }
        if (r->is_error()) {
            return refused("XREADGROUP", *r);
        }
        auto list = entries_of_read(*r);
        if (!list) {
            error = "unexpected reply shape";
            return fail("XREADGROUP");
        }
        entries = std::move(*list);
        if (!entries.empty()) {
            last_read_id_ = entries.back().id;
        }
    }

    for (const auto& e : entries) {
        submit(e);
    }
    return true;
}

void stream_worker::submit(const stream_entry& entry) {
    bool minimal = false;
    {
        std::lock_guard lock(mu_);
        if (!in_flight_.insert(entry.id).second) {
            return; // already submitted and awaiting its outcome or ack
        }
        if (!entry.fields) {
            // Deleted from the stream while pending: nothing left to deliver.
            ack_queue_.push_back(entry.id);
            cv_.notify_all();
            return;
        }
        ++awaiting_outcome_;
        minimal = minimal_.count(entry.id) != 0;
    }
    wopbridge::inbound_event ev;
    ev.provider_event_id = sub_.stream + ":" + entry.id;
    // After an "invalid" refusal the payload is what the host could not take: send the event
    // without it (topic + offset still name the message), so the stream is never stuck on it.
    ev.content_json = event_content(sub_, entry, minimal ? 0 : settings_.max_message_bytes);
    auto self = shared_from_this();
    wopbridge::submit_held_message(
        host_, std::move(ev), sub_id_, entry.id,
        [self](const std::string& key) { self->on_committed(key); },
        [self](const std::string& key, const std::string& reason, int retry_after_seconds) {
            self->on_refused(key, reason, retry_after_seconds);
        });
}

void stream_worker::on_committed(const std::string& id) {
    {
        std::lock_guard lock(mu_);
        --awaiting_outcome_;
        ack_queue_.push_back(id); // committed or recognised: safe to ack
        backoff_.reset();
    }
    cv_.notify_all();
}

void stream_worker::on_refused(const std::string& id, const std::string& reason,
                               int retry_after_seconds) {
    std::string line;
    {
        std::lock_guard lock(mu_);
        --awaiting_outcome_;
        in_flight_.erase(id);
        // "invalid" is about this message (sent again without its payload); anything else is a
        // state of the host or the subscription (not active, overloaded, store down) that every
        // message would meet: stop reading new ones until the re-read, and back off the re-reads
        // (doubling per refused round) so a dead-lettered or failed subscription is not polled
        // every retryDelayMs with one log line per message.
        const bool per_message = reason == "invalid";
        if (per_message) {
            minimal_.insert(id);
        }
        const auto now = clock::now();
        if (!rescan_at_) {
            // A per-message refusal re-reads after the base delay and does not lengthen rounds.
            const auto delay =
                per_message ? std::max(backoff_.base(),
                                       std::chrono::milliseconds(retry_after_seconds * 1000LL))
                            : backoff_.next_delay(retry_after_seconds);
            rescan_at_ = now + delay;
            // One line per refused round, not per message.
            line = "submit refused (" + reason + "); the message(s) stay pending, re-read in " +
                   std::to_string(delay.count()) + " ms";
        } else if (retry_after_seconds > 0) {
            rescan_at_ = std::max(*rescan_at_, now + std::chrono::seconds(retry_after_seconds));
        }
        if (!per_message) {
            paused_until_ = std::max(paused_until_, *rescan_at_);
        }
    }
    if (!line.empty()) {
        log(wopbridge::log_level::info, line);
    }
    cv_.notify_all();
}

void stream_worker::ack_loop() {
    auto backoff = min_backoff;
    for (;;) {
        std::vector<std::string> batch;
        {
            std::unique_lock lock(mu_);
            cv_.wait(lock, [&] { return stop_acking_ || !ack_queue_.empty(); });
            if (stop_acking_) {
                return;
            }
            while (!ack_queue_.empty() && batch.size() < max_ack_batch) {
                batch.push_back(std::move(ack_queue_.front()));
                ack_queue_.pop_front();
            }
        }
        std::string error;
        bool ok = ack_conn_.connected() ||
                  ack_conn_.connect(settings_.url,
                                    std::chrono::milliseconds(settings_.connect_timeout_ms), error);
        if (ok) {
            command cmd{"XACK", sub_.stream, sub_.group};
            cmd.insert(cmd.end(), batch.begin(), batch.end());
            auto r = ack_conn_.run(cmd, command_timeout(), error);
            if (r && r->is_error()) {
                error = std::string(r->error_code());
                ack_conn_.close();
            }
            ok = r && !r->is_error();
        }
        std::unique_lock lock(mu_);
        if (ok) {
            for (const auto& id : batch) {
                in_flight_.erase(id);
                minimal_.erase(id);
            }
            backoff = min_backoff;
            lock.unlock();
            cv_.notify_all();
            continue;
        }
        if (!stop_acking_) {
            log(wopbridge::log_level::warn, "XACK failed, retrying: " + error);
        }
        // Put them back in order and retry after a pause (or give up at stop: still pending).
        ack_queue_.insert(ack_queue_.begin(), batch.begin(), batch.end());
        cv_.wait_for(lock, backoff, [&] { return stop_acking_.load(); });
        backoff = std::min(backoff * 2, max_backoff);
    }
}

} // namespace wopbridge::queue
