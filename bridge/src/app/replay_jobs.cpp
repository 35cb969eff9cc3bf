#include "app/replay_jobs.hpp"
#include "core/thread_name.hpp"

#include "core/log.hpp"

#include <algorithm>
#include <chrono>
#include <map>

namespace wopbridge {
namespace {

constexpr millis day_ms = 24LL * 3600 * 1000;

replay_job_status status_of(const replay_job_record& j) {
    replay_job_status s;
    s.id = j.id;
    s.subscription_id = j.subscription_id;
    s.state = j.state;
    s.total = j.total;
    s.replayed = j.replayed;
    s.delivered = j.delivered;
    s.failed = j.failed;
    s.started_at = j.started_at;
    s.finished_at = j.finished_at;
    return s;
}

} // namespace

replay_jobs::replay_jobs(store& st, clock_source& clock, replay_jobs_options opts, replay_fn replay,
                         dead_letters_fn dead_letters)
    : st_(st), clock_(clock), opts_(std::move(opts)), replay_(std::move(replay)),
      dead_letters_(std::move(dead_letters)) {
    opts_.lease_ms = std::max<millis>(opts_.lease_ms, 1000);
    opts_.poll_ms = std::max<millis>(opts_.poll_ms, 10);
    opts_.failure_limit = std::max(1, opts_.failure_limit);
}

replay_jobs::~replay_jobs() { stop(); }

void replay_jobs::start() {
    {
        std::lock_guard lock(mu_);
        if (running_) {
            return;
        }
        running_ = true;
        stopping_ = false;
    }
    claim_orphans(); // a restart resumes what the previous process left at once
    poller_ = std::thread([this] {
        name_this_thread("wb-replay-poll");
        poll_loop();
    });
}

void replay_jobs::stop() {
    std::list<runner> runners;
    {
        std::lock_guard lock(mu_);
        // Jobs may run without start() (tests drive the bridge without its threads): their
        // runners are joined here all the same.
        if (!running_ && runners_.empty()) {
            return;
        }
        running_ = false;
        stopping_ = true;
        runners = std::move(runners_);
        runners_.clear();
    }
    cv_.notify_all();
    if (poller_.joinable()) {
        poller_.join();
    }
    for (auto& r : runners) {
        r.thread.join();
    }
    {
        std::lock_guard lock(mu_);
        active_.clear();
    }
    // Unfinished jobs stay `running`: a restart or another node resumes them without waiting for
    // the lease. If this write fails the lease simply runs out.
    (void)st_.release_replay_jobs(opts_.owner);
}

void replay_jobs::poll_loop() {
    for (;;) {
        {
            std::unique_lock lock(mu_);
            if (cv_.wait_for(lock, std::chrono::milliseconds(opts_.poll_ms),
                             [&] { return stopping_; })) {
                return;
            }
            reap();
        }
        claim_orphans();
    }
}

void replay_jobs::claim_orphans() {
    auto claimed = st_.claim_replay_jobs(opts_.owner, clock_.now_ms(), opts_.lease_ms);
    if (!claimed) {
        return; // the store is unavailable: the next pass tries again
    }
    std::lock_guard lock(mu_);
    for (auto& job : *claimed) {
        // Our own job claimed again (its lease looked expired, e.g. an injected clock jumped):
        // its runner is alive and the lease is ours either way.
        if (stopping_ || active_.count(job.id) != 0) {
            continue;
        }
        log_line("info", "replay_job.resumed",
                 {{"jobId", job.id},
                  {"subscriptionId", job.subscription_id},
                  {"replayed", job.replayed},
                  {"total", job.total}});
        launch(std::move(job));
    }
}

void replay_jobs::launch(replay_job_record job) {
    active_.insert(job.id);
    runners_.push_back({job.id, {}, false});
    auto* slot = &runners_.back();
    slot->thread = std::thread([this, slot, job = std::move(job)]() mutable {
        const std::string id = job.id;
        run(std::move(job));
        std::lock_guard lock(mu_);
        active_.erase(id);
        slot->done = true;
    });
}

void replay_jobs::reap() {
    for (auto it = runners_.begin(); it != runners_.end();) {
        if (it->done) {
            it->thread.join();
            it = runners_.erase(it);
        } else {
            ++it;
        }
    }
}

result<std::string> replay_jobs::create(const std::string& id, const subscription& sub,
                                        const std::vector<dead_letter>& selected,
                                        double rate_per_second) {
    {
        std::lock_guard lock(mu_);
        if (stopping_) {
            return make_error_code(errc::shutting_down);
        }
    }
    replay_job_record job;
    job.id = id;
    job.tenant = sub.tenant;
    job.subscription_id = sub.id;
    job.rate_per_second = std::clamp(rate_per_second, 0.01, 10000.0);
    job.total = static_cast<int>(selected.size());
    job.started_at = clock_.now_ms();
    job.owner = opts_.owner;
    job.lease_until = job.started_at + opts_.lease_ms;
    std::vector<std::string> ids;
    ids.reserve(selected.size());
    for (const auto& dl : selected) {
        ids.push_back(dl.attempt_event_id);
    }
    if (auto r = st_.create_replay_job(job, ids); !r) {
        return r.error();
    }
    std::lock_guard lock(mu_);
    if (stopping_) {
        // Stored but not started: the lease runs out and a later start (or another node) runs it.
        return id;
    }
    launch(std::move(job));
    return id;
}

result<replay_job_status> replay_jobs::get(const std::string& tenant, const std::string& id) {
    auto job = st_.get_replay_job(id);
    if (!job) {
        return job.error();
    }
    if (job->tenant != tenant) {
        return make_error_code(errc::not_found);
    }
    return status_of(*job);
}

void replay_jobs::run(replay_job_record job) {
    auto sub = st_.get_subscription(job.subscription_id);
    auto items = st_.unsettled_replay_job_items(job.id);
    auto dead = sub ? dead_letters_(sub->id) : result<std::vector<dead_letter>>(sub.error());
    if (!sub || !items || !dead) {
        return; // the lease runs out and a later pass tries again (a deleted subscription took the job)
    }
    std::map<std::string, const dead_letter*> by_attempt;
    for (const auto& dl : *dead) {
        by_attempt.emplace(dl.attempt_event_id, &dl);
    }
    std::vector<replay_job_item> pending; // replayed, outcome not known yet
    std::vector<replay_job_item> selected; // not replayed yet, in order
    for (auto& it : *items) {
        (it.outcome == "replayed" ? pending : selected).push_back(std::move(it));
    }

    replay_job_update u;
    u.job_id = job.id;
    u.owner = opts_.owner;
    u.replayed = job.replayed;
    u.delivered = job.delivered;
    u.failed = job.failed;
    u.consecutive_failures = job.consecutive_failures;

    // Writes the changed items with the counters and renews the lease; false = the job is no
    // longer ours (taken over after our lease ran out, finished, deleted) or the store failed:
    // stop here, whoever holds it next resumes from what is stored.
    auto write = [&](std::vector<replay_job_item> changed) {
        u.items = std::move(changed);
        u.lease_until = clock_.now_ms() + opts_.lease_ms;
        return st_.update_replay_job(u).has_value();
    };
    auto settle = [&](std::vector<replay_job_item>& changed) {
        for (auto it = pending.begin(); it != pending.end();) {
            auto d = st_.get_delivery(it->delivery_id);
            if (d && d->status == delivery_status::delivered) {
                it->outcome = "delivered";
                ++u.delivered;
                u.consecutive_failures = 0;
            } else if (d && d->status == delivery_status::dead_lettered) {
                it->outcome = "failed";
                ++u.failed;
                ++u.consecutive_failures;
            } else {
                ++it;
                continue;
            }
            changed.push_back(*it);
            it = pending.erase(it);
        }
    };
    auto finish = [&](const char* state, std::vector<replay_job_item> changed) {
        const millis at = clock_.now_ms();
        u.state = state;
        u.finished_at = at;
        u.expires_at = at + std::max(1, opts_.retention_days) * day_ms;
        if (write(std::move(changed))) {
            log_line("info", "replay_job.finished",
                     {{"jobId", job.id},
                      {"state", state},
                      {"replayed", u.replayed},
                      {"delivered", u.delivered},
                      {"failed", u.failed}});
        }
    };

    const auto interval = std::chrono::microseconds(
        static_cast<std::int64_t>(1e6 / std::clamp(job.rate_per_second, 0.01, 10000.0)));
    // Renew well inside the lease while waiting between replays at a low rate.
    const auto renew_every = std::chrono::milliseconds(std::max<millis>(opts_.lease_ms / 3, 1));
    auto last_write = std::chrono::steady_clock::now();
    for (auto& item : selected) {
        const auto due = std::chrono::steady_clock::now() + interval;
        for (;;) {
            std::unique_lock lock(mu_);
            const auto wake = std::min(due, last_write + renew_every);
            if (cv_.wait_until(lock, wake, [&] { return stopping_; })) {
                return; // stop(): the job stays running and is resumed from the store
            }
            lock.unlock();
            if (std::chrono::steady_clock::now() >= due) {
                break;
            }
            if (!write({})) {
                return;
            }
            last_write = std::chrono::steady_clock::now();
        }
        std::vector<replay_job_item> changed;
        settle(changed);
        if (u.consecutive_failures >= opts_.failure_limit) {
            finish("stopped", std::move(changed));
            return;
        }
        auto found = by_attempt.find(item.attempt_event_id);
        auto r = found == by_attempt.end() ? result<replay_result>(make_error_code(errc::not_found))
                                           : replay_(*sub, *found->second);
        if (r) {
            // A repeat (an earlier run of this job committed it but not this row) is the same
            // delivery: counted here once, since the row never counted it.
            item.outcome = "replayed";
            item.delivery_id = r->delivery_id;
            ++u.replayed;
            pending.push_back(item);
        } else if (r.error() == make_error_code(errc::store_unavailable)) {
            return; // nothing known to be committed: resumed later from this item
        } else {
            item.outcome = "failed"; // purged, or not replayable
            ++u.failed;
            ++u.consecutive_failures;
        }
        changed.push_back(item);
        if (!write(std::move(changed))) {
            return;
        }
        last_write = std::chrono::steady_clock::now();
    }
    // Every item replayed: the job ends when each has moved to delivered or failed (the last
    // deliveries are usually still being started), not before, or its counters would end short.
    const auto settle_every = std::min<std::chrono::steady_clock::duration>(
        renew_every, std::chrono::milliseconds(100));
    std::vector<replay_job_item> changed;
    settle(changed);
    while (!pending.empty() && u.consecutive_failures < opts_.failure_limit) {
        {
            std::unique_lock lock(mu_);
            if (cv_.wait_for(lock, settle_every, [&] { return stopping_; })) {
                return; // resumed from the store: the pending items are settled then
            }
        }
        settle(changed);
        if (!changed.empty() ||
            std::chrono::steady_clock::now() - last_write >= renew_every) {
            if (!write(std::move(changed))) {
                return;
            }
            changed.clear();
            last_write = std::chrono::steady_clock::now();
        }
    }
    finish(u.consecutive_failures >= opts_.failure_limit ? "stopped" : "completed",
           std::move(changed));
}

} // namespace wopbridge
