// PostgreSQL store: intake, and the writer thread that group-commits intake batches.
#include "store/postgres/postgres_store_impl.hpp"

#include <unordered_map>

namespace wopbridge::postgres_detail {

void postgres_store::intake(intake_request req, intake_callback done) {
    {
        wopbridge::unique_lock lock(queue_mu_);
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

namespace {

intake_outcome accepted_outcome(const intake_request& req) {
    return {req.hold ? intake_status::held : intake_status::accepted, req.delivery_id, req.run_id};
}

} // namespace

result<intake_outcome> postgres_store::intake_one(connection& c, const intake_request& req) {
    const auto status = req.hold ? delivery_status::held : delivery_status::pending;
    const intake_outcome accepted = accepted_outcome(req);
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

result<std::vector<std::string>>
postgres_store::intake_many(connection& c, const std::vector<const intake_request*>& reqs) {
    std::vector<std::string> subs, keys, ids, runs, tenants, statuses, contents;
    std::vector<std::int64_t> expires, dues, received;
    millis oldest = reqs.front()->received_at;
    for (const intake_request* r : reqs) {
        subs.push_back(r->subscription_id);
        keys.push_back(r->dedup_key);
        ids.push_back(r->delivery_id);
        runs.push_back(r->run_id);
        tenants.push_back(r->tenant);
        statuses.emplace_back(
            codec::name_of(r->hold ? delivery_status::held : delivery_status::pending));
        contents.push_back(r->content_json);
        expires.push_back(r->dedup_expires_at);
        dues.push_back(r->due_at);
        received.push_back(r->received_at);
        oldest = std::min(oldest, r->received_at);
    }
    // An expired row gives way only if it expired before the oldest request of the batch; one
    // that expired in between stays and its request takes the exact path (intake_one).
    auto r = c.exec_prepared(
        "WITH r AS (SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], "
        "$5::text[], $6::text[], $7::text[], $8::bigint[], $9::bigint[], $10::bigint[]) "
        "AS r(sub, dkey, id, run, tenant, status, content, expires, due, received)), "
        "k AS (INSERT INTO dedup (subscription_id, dedup_key, delivery_id, run_id, expires_at) "
        "SELECT sub, dkey, id, run, expires FROM r ON CONFLICT (subscription_id, dedup_key) "
        "DO UPDATE SET delivery_id = excluded.delivery_id, run_id = excluded.run_id, "
        "expires_at = excluded.expires_at WHERE dedup.expires_at < $11 RETURNING delivery_id), "
        "ins AS (INSERT INTO deliveries (id, subscription_id, tenant, dedup_key, run_id, status, "
        "due_at, received_at, updated_at) SELECT r.id, r.sub, r.tenant, r.dkey, r.run, r.status, "
        "r.due, r.received, r.received FROM r JOIN k ON k.delivery_id = r.id RETURNING id) "
        "INSERT INTO delivery_contents (delivery_id, content_json) SELECT ins.id, r.content "
        "FROM ins JOIN r ON r.id = ins.id RETURNING delivery_id",
        {postgres::text_array(subs), postgres::text_array(keys), postgres::text_array(ids),
         postgres::text_array(runs), postgres::text_array(tenants),
         postgres::text_array(statuses), postgres::text_array(contents),
         postgres::int_array(expires), postgres::int_array(dues), postgres::int_array(received),
         p(oldest)});
    if (!r) {
        return r.error();
    }
    std::vector<std::string> accepted;
    accepted.reserve(static_cast<std::size_t>(r->size()));
    for (int i = 0; i < r->size(); ++i) {
        accepted.push_back(r->text(i, 0));
    }
    return accepted;
}

void postgres_store::writer_loop() {
    std::vector<queued_intake> batch;
    std::vector<result<intake_outcome>> results;
    for (;;) {
        batch.clear();
        {
            wopbridge::unique_lock lock(queue_mu_);
            lock.wait(queue_cv_,
                      [&]() REQUIRES(queue_mu_) { return stopping_ || !queue_.empty(); });
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
    bool batched = true; // off once a batch statement failed for a reason other than contention
    // After a failed statement: true to replay the batch, false when every result is final.
    auto replay_after = [&](boost::system::error_code ec, std::size_t culprit) {
        if (c.healthy()) {
            (void)c.run("ROLLBACK");
        }
        if (!c.healthy()) {
            note_failure(c);
            fail_all(errc::store_unavailable);
            return false;
        }
        if (ec == errc::store_unavailable) {
            // Deadlock / serialization failure: the whole batch may succeed on replay.
            if (++transient_retries > batch_replays) {
                fail_all(ec);
                return false;
            }
        } else if (culprit < batch.size()) {
            failed[culprit] = true;
            results[culprit] = ec;
        } else {
            batched = false; // one request of many is at fault: find it one by one
        }
        return true;
    };
    for (;;) {
        if (auto r = begin(c); !r) {
            note_failure(c);
            fail_all(r.error());
            return;
        }
        std::vector<bool> done(batch.size(), false);
        if (batched) {
            std::vector<const intake_request*> firsts;
            std::unordered_map<std::string, std::size_t> index_of;
            const intake_request* last = nullptr;
            for (std::size_t i : order) {
                const intake_request& req = batch[i].req;
                if (failed[i] || !req.dedup_enabled ||
                    (last != nullptr && last->subscription_id == req.subscription_id &&
                     last->dedup_key == req.dedup_key)) {
                    continue;
                }
                last = &req;
                firsts.push_back(&req);
                index_of.emplace(req.delivery_id, i);
            }
            if (firsts.size() > 1) {
                auto accepted = intake_many(c, firsts);
                if (!accepted) {
                    if (!replay_after(accepted.error(), batch.size())) {
                        return;
                    }
                    continue;
                }
                for (const std::string& id : *accepted) {
                    if (auto it = index_of.find(id); it != index_of.end()) {
                        results[it->second] = accepted_outcome(batch[it->second].req);
                        done[it->second] = true;
                    }
                }
            }
        }
        bool replay = false;
        for (std::size_t i : order) {
            if (failed[i] || done[i]) {
                continue;
            }
            auto out = intake_one(c, batch[i].req);
            if (out) {
                results[i] = std::move(out);
                continue;
            }
            if (!replay_after(out.error(), i)) {
                return;
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
