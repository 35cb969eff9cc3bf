// PostgreSQL store: intake, and the writer thread that group-commits intake batches.
#include "store/postgres/postgres_store_impl.hpp"

namespace wopbridge::postgres_detail {

void postgres_store::intake(intake_request req, intake_callback done) {
    {
        std::unique_lock lock(queue_mu_);
        if (!stopping_) {
            queue_.push_back(queued_intake{std::move(req), std::move(done)});
            lock.unlock();
            queue_cv_.notify_one();
            return;
        }
    }
    if (done) {
        done(errc::shutting_down);
    }
}

result<void> postgres_store::record_verification_refusal(const verification_refusal& v) {
    delivery_attempt a;
    a.subscription_id = v.subscription_id;
    a.dedup_key = v.dedup_key;
    a.attempt = 1;
    a.outcome = attempt_outcome::dead_lettered;
    return write([&](connection& c) -> result<void> {
        auto r =
            c.exec("WITH s AS (UPDATE subscriptions SET next_event_seq = next_event_seq + 1 "
                   "WHERE id = $1 RETURNING next_event_seq - 1 AS seq), "
                   "e AS (INSERT INTO subscription_events (subscription_id, sequence, event_id, "
                   "type, payload_json, timestamp) SELECT $1, seq, $2, $3, $4, $5 FROM s) "
                   "INSERT INTO dead_letters (subscription_id, attempt_event_id, dedup_key, "
                   "attempt, reason, dead_lettered_at, expires_at, delivery_id) "
                   "SELECT $1, $2, $6, 1, $7, $5, $8, '' FROM s RETURNING 1",
                   {p(v.subscription_id), p(v.attempt_event_id), p(codec::event_delivery_attempted),
                    p(codec::attempt_payload_json(a)), p(v.at), p(v.dedup_key),
                    p(codec::name_of(dead_letter_reason::verification_failed)), p(v.expires_at)});
        if (!r) {
            return r.error();
        }
        if (r->empty()) {
            return errc::not_found;
        }
        return {};
    });
}

result<intake_outcome> postgres_store::intake_one(connection& c, const intake_request& req) {
    const auto status = req.hold ? delivery_status::held : delivery_status::pending;
    const intake_outcome accepted{req.hold ? intake_status::held : intake_status::accepted,
                                  req.delivery_id, req.run_id};
    if (!req.dedup_enabled) {
        auto r =
            c.exec_prepared("WITH ins AS (INSERT INTO deliveries (id, subscription_id, tenant, dedup_key, "
                   "run_id, status, due_at, received_at, updated_at) VALUES "
                   "($1, $2, $3, $4, $5, $6, $7, $8, $8) RETURNING id) "
                   "INSERT INTO delivery_contents (delivery_id, content_json) "
                   "SELECT id, $9 FROM ins",
                   {p(req.delivery_id), p(req.subscription_id), p(req.tenant), p(req.dedup_key),
                    p(req.run_id), p(codec::name_of(status)), p(req.due_at), p(req.received_at),
                    p(req.content_json)});
        if (!r) {
            return r.error();
        }
        return accepted;
    }
    auto r =
        c.exec_prepared("WITH k AS (INSERT INTO dedup (subscription_id, dedup_key, delivery_id, run_id, "
               "expires_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (subscription_id, dedup_key) "
               "DO UPDATE SET delivery_id = excluded.delivery_id, run_id = excluded.run_id, "
               "expires_at = excluded.expires_at WHERE dedup.expires_at < $6 RETURNING 1), "
               "ins AS (INSERT INTO deliveries (id, subscription_id, tenant, dedup_key, run_id, "
               "status, due_at, received_at, updated_at) SELECT $3, $1, $7, $2, $4, $8, $9, $6, $6 "
               "FROM k RETURNING id) "
               "INSERT INTO delivery_contents (delivery_id, content_json) "
               "SELECT id, $10 FROM ins RETURNING 1",
               {p(req.subscription_id), p(req.dedup_key), p(req.delivery_id), p(req.run_id),
                p(req.dedup_expires_at), p(req.received_at), p(req.tenant),
                p(codec::name_of(status)), p(req.due_at), p(req.content_json)});
    if (!r) {
        return r.error();
    }
    if (!r->empty()) {
        return accepted;
    }
    auto orig = c.exec_prepared("SELECT delivery_id, run_id FROM dedup "
                       "WHERE subscription_id = $1 AND dedup_key = $2",
                       {p(req.subscription_id), p(req.dedup_key)});
    if (!orig) {
        return orig.error();
    }
    if (orig->empty()) {
        return errc::internal;
    }
    return intake_outcome{intake_status::duplicate, orig->text(0, 0), orig->text(0, 1)};
}

void postgres_store::writer_loop() {
    std::vector<queued_intake> batch;
    std::vector<result<intake_outcome>> results;
    for (;;) {
        batch.clear();
        {
            std::unique_lock lock(queue_mu_);
            queue_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
            if (queue_.empty()) {
                return;
            }
            while (!queue_.empty() && batch.size() < static_cast<std::size_t>(max_batch_)) {
                batch.push_back(std::move(queue_.front()));
                queue_.pop_front();
            }
        }
        const std::uint64_t before = writer_->round_trips();
        run_batch(batch, results);
        round_trips_.fetch_add(writer_->round_trips() - before);
        intake_requests_.fetch_add(batch.size());
        for (std::size_t i = 0; i < batch.size(); ++i) {
            if (!batch[i].done) {
                continue;
            }
            try {
                batch[i].done(std::move(results[i]));
            } catch (...) {
                // A throwing callback must not take the writer (and every later intake) down.
            }
        }
    }
}

void postgres_store::run_batch(const std::vector<queued_intake>& batch,
                               std::vector<result<intake_outcome>>& results) {
    connection& c = *writer_;
    results.assign(batch.size(), result<intake_outcome>(errc::internal));
    std::vector<std::size_t> order(batch.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return std::tie(batch[a].req.subscription_id, batch[a].req.dedup_key) <
               std::tie(batch[b].req.subscription_id, batch[b].req.dedup_key);
    });
    std::vector<bool> failed(batch.size(), false);
    int transient_retries = 0;
    auto fail_all = [&](boost::system::error_code ec) {
        for (std::size_t i = 0; i < batch.size(); ++i) {
            if (!failed[i]) {
                results[i] = ec;
            }
        }
    };
    const bool reconnect = writer_epoch_ < reset_epoch_.load();
    if (auto r = c.ensure(reconnect); !r) {
        fail_all(errc::store_unavailable);
        return;
    }
    writer_epoch_ = reset_epoch_.load();
    for (;;) {
        if (auto r = begin(c); !r) {
            note_failure(c);
            fail_all(r.error());
            return;
        }
        bool replay = false;
        for (std::size_t i : order) {
            if (failed[i]) {
                continue;
            }
            auto out = intake_one(c, batch[i].req);
            if (out) {
                results[i] = std::move(out);
                continue;
            }
            const bool transient = out.error() == errc::store_unavailable;
            if (c.healthy()) {
                (void)c.run("ROLLBACK");
            }
            if (!c.healthy()) {
                note_failure(c);
                fail_all(errc::store_unavailable);
                return;
            }
            if (transient) {
                // Deadlock / serialization failure: the whole batch may succeed on replay.
                if (++transient_retries > batch_replays) {
                    fail_all(out.error());
                    return;
                }
            } else {
                failed[i] = true;
                results[i] = out.error();
            }
            replay = true;
            break;
        }
        if (replay) {
            continue;
        }
        if (auto r = c.run("COMMIT"); !r) {
            // Nothing of this batch may be reported accepted.
            if (c.healthy() && c.in_transaction()) {
                (void)c.run("ROLLBACK");
            }
            note_failure(c);
            fail_all(r.error());
            return;
        }
        commits_.fetch_add(1);
        intake_batches_.fetch_add(1);
        return;
    }
}

void postgres_store::note_failure(connection& c) {
    if (!c.healthy()) {
        reset_epoch_.fetch_add(1);
    }
}

} // namespace wopbridge::postgres_detail
