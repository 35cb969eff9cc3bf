#include "delivery/delivery_engine.hpp"

#include "contract/events.hpp"
#include "core/ids.hpp"
#include "core/thread_name.hpp"
#include "delivery/attempt_record.hpp"
#include "delivery/claim_wait.hpp"
#include "store/store.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <optional>

namespace wopbridge {

struct delivery_engine::attempt_ctx {
    delivery dlv;
    subscription sub; // snapshot at claim time (workflow, tenant); the breaker re-reads it
    run_start_request req;
    std::string attempt_event_id;
    std::string run_started_event_id;
    run_start_result prepared;
    millis claimed_at = 0;
    millis deadline = 0;
    std::atomic<bool> finished{false};
};

struct delivery_engine::completion {
    std::shared_ptr<attempt_ctx> ctx;
    run_start_result res;
    millis at = 0;
};

namespace {
run_start_result attempt_timed_out_result() {
    run_start_result r;
    r.outcome = run_start_result::kind::retry;
    r.reason = "attempt timed out";
    return r;
}
} // namespace

delivery_engine::delivery_engine(store& st, run_starter& starter, clock_source& clock,
                                 random_source& random, delivery_engine_options opts)
    : store_(st), starter_(starter), clock_(clock), random_(random), opts_(opts) {}

delivery_engine::~delivery_engine() { stop(); }

void delivery_engine::set_attempt_listener(attempt_listener listener) {
    listener_ = std::move(listener);
}

std::string delivery_engine::mint(std::string_view prefix) {
    return id_generator(random_, &clock_).make(prefix);
}

void delivery_engine::start() {
    wopbridge::lock_guard lock(mutex_);
    if (running_) {
        return;
    }
    running_ = true;
    stopping_ = false;
    recorder_running_ = true;
    recorder_stopping_ = false;
    recorder_ = std::thread([this] {
        name_this_thread("wb-recorder");
        recorder_loop();
    });
    thread_ = std::thread([this] {
        name_this_thread("wb-delivery");
        loop();
    });
}

void delivery_engine::stop() {
    {
        wopbridge::lock_guard lock(mutex_);
        if (!running_) {
            return;
        }
        stopping_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) {
        thread_.join();
    }
    std::vector<std::shared_ptr<attempt_ctx>> left;
    {
        wopbridge::lock_guard lock(mutex_);
        for (auto& [_, ctx] : in_flight_) {
            left.push_back(ctx);
        }
    }
    wait_for(left); // the recorder still runs: what finishes in time is recorded
    {
        wopbridge::lock_guard lock(mutex_);
        recorder_stopping_ = true;
    }
    completion_cv_.notify_all();
    if (recorder_.joinable()) {
        recorder_.join();
    }
    wopbridge::lock_guard lock(mutex_);
    recorder_running_ = false;
    running_ = false;
}

void delivery_engine::notify() {
    {
        wopbridge::lock_guard lock(mutex_);
        notified_ = true;
    }
    cv_.notify_all();
}

int delivery_engine::run_due(millis now) {
    int total = 0;
    // A retry with backoff `none` is due again at `now`: keep claiming until nothing is due, with a
    // bound so a misbehaving store cannot loop forever.
    for (int round = 0; round < 1000; ++round) {
        std::vector<std::shared_ptr<attempt_ctx>> ctxs;
        int claimed = claim_and_dispatch(now, std::max(1, opts_.max_in_flight), ctxs);
        wait_for(ctxs);
        total += claimed;
        if (claimed == 0) {
            break;
        }
    }
    return total;
}

void delivery_engine::loop() {
    for (;;) {
        {
            wopbridge::lock_guard lock(mutex_);
            if (stopping_) {
                return;
            }
        }
        millis now = clock_.now_ms();
        expire_timeouts(now);
        int capacity = 0;
        {
            wopbridge::lock_guard lock(mutex_);
            capacity = opts_.max_in_flight - static_cast<int>(in_flight_.size());
        }
        if (capacity > 0) {
            const int limit = std::min(capacity, std::max(1, opts_.batch_size));
            std::vector<std::shared_ptr<attempt_ctx>> ctxs;
            if (claim_and_dispatch(now, limit, ctxs) == limit) {
                continue; // more may be due
            }
        }
        // With every slot taken nothing could be claimed: wait for a completion (it notifies)
        // or an attempt's deadline without asking the store. Under a backlog every intake's
        // notification woke this loop into a next-due query (0.2 per event on PostgreSQL).
        millis wait = claim_idle_wait_ms;
        if (capacity > 0) {
            auto next = store_.next_due_at();
            wait = claim_wait_ms(now, clock_.now_ms(), next ? *next : std::nullopt);
        }
        {
            wopbridge::lock_guard lock(mutex_);
            for (auto& [_, ctx] : in_flight_) {
                wait = std::min(wait, std::max<millis>(1, ctx->deadline - now));
            }
        }
        wopbridge::unique_lock lock(mutex_);
        lock.wait_for(cv_, std::chrono::milliseconds(wait),
                      [this]() REQUIRES(mutex_) { return notified_ || stopping_; });
        notified_ = false;
    }
}

int delivery_engine::claim_and_dispatch(millis now, int limit,
                                        std::vector<std::shared_ptr<attempt_ctx>>& out) {
    auto claimed = store_.claim_due(now, limit, opts_.lease_ms);
    if (!claimed || claimed->empty()) {
        return 0;
    }
    // One read per subscription of the batch, one read for every content.
    std::map<std::string, std::optional<subscription>> subs;
    std::vector<std::string> ids;
    ids.reserve(claimed->size());
    for (const auto& d : *claimed) {
        ids.push_back(d.id);
        if (!subs.count(d.subscription_id)) {
            auto sub = store_.get_subscription(d.subscription_id);
            subs.emplace(d.subscription_id,
                         sub ? std::optional<subscription>(std::move(*sub)) : std::nullopt);
        }
    }
    auto contents = store_.delivery_contents(ids);
    for (auto& d : *claimed) {
        auto ctx = std::make_shared<attempt_ctx>();
        ctx->dlv = std::move(d);
        ctx->claimed_at = now;
        ctx->deadline = now + opts_.attempt_timeout_ms;
        const auto& sub = subs[ctx->dlv.subscription_id];
        if (!sub) {
            // Deleted meanwhile: nothing to record against; the lease lapses with the subscription.
            continue;
        }
        ctx->sub = *sub;
        {
            wopbridge::lock_guard lock(mutex_);
            in_flight_[ctx.get()] = ctx;
        }
        out.push_back(ctx);
        std::optional<std::string> content;
        if (contents) {
            if (auto it = contents->find(ctx->dlv.id); it != contents->end()) {
                content = std::move(it->second);
            }
        }
        dispatch(ctx, std::move(content));
    }
    return static_cast<int>(claimed->size());
}

void delivery_engine::dispatch(const std::shared_ptr<attempt_ctx>& ctx,
                               std::optional<std::string> content) {
    ctx->attempt_event_id = mint("evt");
    ctx->run_started_event_id = mint("evt");

    auto& req = ctx->req;
    req.run_id = ctx->dlv.run_id;
    req.delivery_id = ctx->dlv.id;
    req.tenant = ctx->sub.tenant;
    req.workflow_id = ctx->sub.workflow_id;
    req.subscription_id = ctx->sub.id;
    req.causation_event_id = ctx->attempt_event_id;
    req.deadline = ctx->deadline;

    if (!content) {
        run_start_result r;
        r.outcome = run_start_result::kind::retry;
        r.reason = "delivery content unavailable";
        complete(ctx, std::move(r), ctx->claimed_at);
        return;
    }
    req.trigger_event_json = std::move(*content);

    ctx->prepared = starter_.prepare(req);
    if (ctx->prepared.outcome != run_start_result::kind::started) {
        complete(ctx, ctx->prepared, ctx->claimed_at);
        return;
    }
    if (starter_.starts_before_commit()) {
        // Upstream: the Idempotency-Key (delivery id) makes a repeated start return the same run.
        starter_.start(req, [this, ctx](run_start_result r) {
            complete(ctx, std::move(r), std::max(ctx->claimed_at, clock_.now_ms()));
        });
        return;
    }
    // Local: run.started is committed first (the recorder starts the run after its commit), so a
    // crash never runs the command twice.
    complete(ctx, ctx->prepared, ctx->claimed_at);
}

void delivery_engine::complete(const std::shared_ptr<attempt_ctx>& ctx, run_start_result res,
                               millis at) {
    if (ctx->finished.exchange(true)) {
        return; // already timed out (or finished): a late answer changes nothing
    }
    {
        wopbridge::lock_guard lock(mutex_);
        completions_.push_back(completion{ctx, std::move(res), at});
    }
    completion_cv_.notify_one();
    done_cv_.notify_all();
}

void delivery_engine::recorder_loop() {
    for (;;) {
        {
            wopbridge::unique_lock lock(mutex_);
            lock.wait(completion_cv_, [this]() REQUIRES(mutex_) {
                return recorder_stopping_ || !completions_.empty();
            });
            if (completions_.empty()) {
                return; // stopping, and drained
            }
        }
        record_queued();
    }
}

void delivery_engine::after_commit_start(const std::shared_ptr<attempt_ctx>& ctx) {
    starter_.start(ctx->req, [this, ctx](run_start_result r) {
        millis at = std::max(ctx->claimed_at, clock_.now_ms());
        const auto& run_id = ctx->dlv.run_id;
        if (r.outcome == run_start_result::kind::started) {
            if (r.follow_up_events.empty()) {
                return; // the lifecycle sink reports the run's end
            }
            if (!ctx->prepared.follow_up_events.empty()) {
                return; // prepare() reported them: committed with run.started, never twice
            }
            // A starter that reports what follows only from start() (e.g. run.completed for a
            // workflow without a command): appended right after the commit.
            const bool ends = r.status_after != run_status::running &&
                              r.status_after != run_status::pending;
            for (std::size_t i = 0; i < r.follow_up_events.size(); ++i) {
                const auto& [type, payload] = r.follow_up_events[i];
                if (ends && i + 1 == r.follow_up_events.size()) {
                    store_.end_run(run_id, type, payload, mint("evt"), r.status_after, at);
                } else {
                    store_.append_run_event(run_id, type, payload, "", mint("evt"), at);
                }
            }
        } else {
            // The run is committed as started: a failed start fails the run; it is never re-run.
            store_.end_run(run_id, std::string(events::run_failed_type),
                           events::run_failed_payload(run_id, "start-failed"), mint("evt"),
                           run_status::failed, at);
        }
        if (listener_) {
            attempt_report rep;
            rep.delivery_id = ctx->dlv.id;
            rep.subscription_id = ctx->dlv.subscription_id;
            rep.run_id = run_id;
            rep.reserved_run_id = run_id;
            rep.outcome = attempt_outcome::delivered;
            listener_(rep);
        }
    });
}


int delivery_engine::record_queued() {
    wopbridge::lock_guard record_lock(record_mutex_);
    std::vector<completion> batch;
    {
        wopbridge::lock_guard lock(mutex_);
        const auto n = std::min<std::size_t>(completions_.size(),
                                             static_cast<std::size_t>(std::max(1, opts_.batch_size)));
        batch.assign(std::make_move_iterator(completions_.begin()),
                     std::make_move_iterator(completions_.begin() + static_cast<long>(n)));
        completions_.erase(completions_.begin(), completions_.begin() + static_cast<long>(n));
    }
    if (batch.empty()) {
        return 0;
    }
    // Each subscription read once, fresh, then carried from record to record: the breaker count of
    // the second failure of a subscription in this batch follows from the first.
    std::map<std::string, std::optional<subscription>> subs;
    std::vector<attempt_record> recs(batch.size());
    std::vector<bool> delivered(batch.size(), false);
    const auto mint_event_id = [this] { return mint("evt"); };
    for (std::size_t i = 0; i < batch.size(); ++i) {
        const auto& ctx = *batch[i].ctx;
        auto [it, fresh] = subs.try_emplace(ctx.dlv.subscription_id);
        if (fresh) {
            if (auto sub = store_.get_subscription(ctx.dlv.subscription_id)) {
                it->second = std::move(*sub);
            }
        }
        const subscription& sub = it->second ? *it->second : ctx.sub;
        const attempt_view view{ctx.dlv, ctx.prepared, ctx.attempt_event_id,
                                ctx.run_started_event_id};
        delivered[i] = delivery_detail::build_record(view, sub, batch[i].res, batch[i].at, opts_,
                                                     random_, mint_event_id, recs[i]);
        if (it->second) {
            it->second->consecutive_failures = recs[i].consecutive_failures;
            it->second->next_probe_at = recs[i].next_probe_at;
            if (recs[i].state_change_caused) {
                it->second->state = recs[i].state_change_caused->to;
            }
        }
    }
    const auto commit_start = std::chrono::steady_clock::now();
    auto recorded = store_.record_attempts(recs);
    const double commit_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - commit_start).count();

    std::vector<attempt_report> reports(batch.size());
    for (std::size_t i = 0; i < batch.size(); ++i) {
        const auto& ctx = *batch[i].ctx;
        const auto& rec = recs[i];
        auto& rep = reports[i];
        const bool ok = i < recorded.size() && recorded[i];
        if (!ok) {
            // Not committed: the lease lapses and the delivery is claimed again; nothing started.
            delivered[i] = false;
            rep.outcome = attempt_outcome::retrying;
        } else {
            rep.outcome = rec.attempt.outcome;
            rep.state_changed = rec.state_change_caused;
            rep.commit_seconds = commit_seconds;
            if (delivered[i]) {
                rep.run_id = ctx.dlv.run_id;
                rep.run_started = true;
            }
        }
        rep.received_at = ctx.dlv.received_at;
        rep.recorded_at = rec.at;
        rep.delivery_id = ctx.dlv.id;
        rep.subscription_id = rec.subscription_id;
        rep.reserved_run_id = ctx.dlv.run_id;
    }
    {
        wopbridge::lock_guard lock(mutex_);
        for (const auto& c : batch) {
            in_flight_.erase(c.ctx.get());
        }
        notified_ = true; // capacity is free again
    }
    done_cv_.notify_all();
    cv_.notify_all();
    for (std::size_t i = 0; i < batch.size(); ++i) {
        if (listener_) {
            listener_(reports[i]);
        }
        if (delivered[i] && !starter_.starts_before_commit()) {
            after_commit_start(batch[i].ctx);
        }
    }
    return static_cast<int>(batch.size());
}

void delivery_engine::expire_timeouts(millis now) {
    std::vector<std::shared_ptr<attempt_ctx>> expired;
    {
        wopbridge::lock_guard lock(mutex_);
        for (auto& [_, ctx] : in_flight_) {
            if (ctx->deadline <= now && !ctx->finished) {
                expired.push_back(ctx);
            }
        }
    }
    for (auto& ctx : expired) {
        complete(ctx, attempt_timed_out_result(), now);
    }
}

void delivery_engine::wait_for(const std::vector<std::shared_ptr<attempt_ctx>>& ctxs) {
    // Bounded in real time by the attempt timeout; an attempt still out then counts as timed out.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(opts_.attempt_timeout_ms);
    wopbridge::unique_lock lock(mutex_);
    auto all_done = [&]() REQUIRES(mutex_) {
        return std::all_of(ctxs.begin(), ctxs.end(), [this](const auto& c) REQUIRES(mutex_) {
            return !in_flight_.count(c.get());
        });
    };
    bool expired = false;
    for (;;) {
        if (all_done()) {
            return;
        }
        if (!recorder_running_ && !completions_.empty()) {
            // No recorder thread (run_due without start()): record here.
            lock.unlock();
            record_queued();
            lock.lock();
            continue;
        }
        if (expired) {
            lock.wait(done_cv_); // the timeouts are queued: they are recorded promptly
            continue;
        }
        if (lock.wait_until(done_cv_, deadline) == std::cv_status::timeout) {
            expired = true;
            lock.unlock();
            for (const auto& ctx : ctxs) {
                complete(ctx, attempt_timed_out_result(),
                         std::max(ctx->claimed_at, clock_.now_ms()));
            }
            lock.lock();
        }
    }
}

} // namespace wopbridge
