#include "schedule/scheduler.hpp"
#include "core/thread_name.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <chrono>

namespace wopbridge {

scheduler::scheduler(clock_source& clock, submit_fn submit, state_fn state)
    : clock_(clock), submit_(std::move(submit)), state_(std::move(state)) {}

scheduler::~scheduler() {
    stop();
}

std::vector<std::string> scheduler::update(const std::vector<subscription>& subs) {
    std::vector<std::string> errors;
    const millis now = clock_.now_ms();
    std::map<std::string, entry> next;
    std::lock_guard lock(mu_);
    for (const auto& s : subs) {
        if (s.source != source_kind::schedule || !s.schedule) {
            continue;
        }
        auto old = entries_.find(s.id);
        if (old != entries_.end() && old->second.cron_text == s.schedule->cron &&
            old->second.time_zone == s.schedule->time_zone) {
            entry e = old->second;
            e.state = s.state;
            next.emplace(s.id, std::move(e));
            continue;
        }
        auto parsed = cron_expr::parse(s.schedule->cron, s.schedule->time_zone);
        if (!parsed) {
            errors.push_back("subscription " + s.id + ": " + parsed.error().message);
            continue;
        }
        entry e{*parsed, s.schedule->cron, s.schedule->time_zone, std::nullopt, s.state};
        e.next = e.expr.next_after(now);
        next.emplace(s.id, std::move(e));
    }
    entries_ = std::move(next);
    ++generation_;
    cv_.notify_all();
    return errors;
}

inbound_submission scheduler::make_tick(const std::string& subscription_id, const cron_expr& expr,
                                        millis tick) {
    inbound_submission s;
    s.subscription_id = subscription_id;
    s.provider_event_id = "tick:" + std::to_string(tick);
    s.received_at = tick;
    s.verified = true;
    boost::json::object schedule;
    schedule["scheduledAt"] = format_iso8601(tick);
    schedule["cron"] = expr.text();
    boost::json::object root;
    root["schedule"] = std::move(schedule);
    s.content_json = boost::json::serialize(root);
    return s;
}

int scheduler::run_due(millis now) {
    struct due {
        std::string id;
        millis tick;
        inbound_submission submission;
        sub_state state;
    };
    std::vector<due> fire;
    {
        std::lock_guard lock(mu_);
        for (auto& [id, e] : entries_) {
            if (!e.next || *e.next > now) {
                continue;
            }
            // Late (suspend, clock jump): only the latest due tick fires; older ones are skipped.
            millis tick = *e.next;
            while (true) {
                auto after = e.expr.next_after(tick);
                if (!after || *after > now) {
                    break;
                }
                tick = *after;
            }
            fire.push_back({id, tick, make_tick(id, e.expr, tick), e.state});
            e.next = e.expr.next_after(std::max(tick, now));
        }
    }
    int submitted = 0;
    for (auto& d : fire) {
        std::optional<sub_state> st = state_ ? state_(d.id) : std::optional<sub_state>(d.state);
        if (st != sub_state::active) {
            continue; // paused/failed/dead-lettered at tick time: the tick is skipped, not queued
        }
        submit_(d.submission);
        ++submitted;
    }
    return submitted;
}

std::optional<millis> scheduler::next_tick(const std::string& subscription_id) const {
    std::lock_guard lock(mu_);
    auto it = entries_.find(subscription_id);
    return it == entries_.end() ? std::nullopt : it->second.next;
}

std::optional<millis> scheduler::earliest_tick() const {
    std::lock_guard lock(mu_);
    std::optional<millis> best;
    for (const auto& [id, e] : entries_) {
        if (e.next && (!best || *e.next < *best)) {
            best = e.next;
        }
    }
    return best;
}

void scheduler::start() {
    std::lock_guard lock(mu_);
    if (thread_.joinable() || stopping_) {
        return;
    }
    thread_ = std::thread([this] {
        name_this_thread("wb-scheduler");
        loop();
    });
}

void scheduler::stop() {
    {
        std::lock_guard lock(mu_);
        stopping_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) {
        thread_.join();
    }
}

void scheduler::loop() {
    std::unique_lock lock(mu_);
    while (!stopping_) {
        std::optional<millis> earliest;
        for (const auto& [id, e] : entries_) {
            if (e.next && (!earliest || *e.next < *earliest)) {
                earliest = e.next;
            }
        }
        const std::uint64_t gen = generation_;
        auto replan = [&] { return stopping_ || generation_ != gen; };
        if (!earliest) {
            cv_.wait(lock, replan);
            continue;
        }
        millis delay = *earliest - clock_.now_ms();
        if (delay > 0) {
            // Wake at the tick, on update(), or on stop(); re-check the clock after any wake-up.
            cv_.wait_for(lock, std::chrono::milliseconds(std::min<millis>(delay, 60 * 60 * 1000)),
                         replan);
            continue;
        }
        lock.unlock();
        run_due(clock_.now_ms());
        lock.lock();
    }
}

} // namespace wopbridge
