// SQLite store: intake, and the writer thread that group-commits intake and attempt batches.
#include "store/sqlite/sqlite_store_impl.hpp"

namespace wopbridge::sqlite_detail {

void sqlite_store::intake(intake_request req, intake_callback done) {
    {
        std::unique_lock lock(queue_mu_);
        if (!stopping_) {
            queue_.push_back(queued_intake{std::move(req), std::move(done)});
            ++queued_rows_;
            lock.unlock();
            queue_cv_.notify_one();
            return;
        }
    }
    if (done) {
        done(errc::shutting_down);
    }
}

result<void> sqlite_store::record_verification_refusal(const verification_refusal& r) {
    return write_transaction([&]() -> result<void> {
        delivery_attempt a;
        a.subscription_id = r.subscription_id;
        a.dedup_key = r.dedup_key;
        a.attempt = 1;
        a.outcome = attempt_outcome::dead_lettered;
        WB_TRY(insert_subscription_event(
            *writer_, r.subscription_id, codec::event_delivery_attempted,
            codec::attempt_payload_json(a), {}, r.attempt_event_id, r.at));
        return insert_dead_letter(r.subscription_id, r.attempt_event_id, a,
                                  dead_letter_reason::verification_failed, std::nullopt, r.at,
                                  r.expires_at, {});
    });
}

result<intake_outcome> sqlite_store::intake_locked(const intake_request& req) {
    connection& c = *writer_;
    // No existence check first: the foreign keys of dedup and deliveries refuse an unknown
    // subscription (SQLITE_CONSTRAINT_FOREIGNKEY -> not_found) in the same statements.
    if (req.dedup_enabled) {
        // The uniqueness constraint is the dedup check: no check-then-insert. An expired row
        // (retention over) is taken over by the new delivery.
        auto ins = c.prepare(
            "INSERT INTO dedup (subscription_id, dedup_key, delivery_id, run_id, expires_at) "
            "VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (subscription_id, dedup_key) DO UPDATE "
            "SET delivery_id = excluded.delivery_id, run_id = excluded.run_id, "
            "expires_at = excluded.expires_at WHERE dedup.expires_at < ?6 RETURNING 1");
        ins.bind(1, req.subscription_id)
            .bind(2, req.dedup_key)
            .bind(3, req.delivery_id)
            .bind(4, req.run_id)
            .bind(5, req.dedup_expires_at)
            .bind(6, req.received_at);
        auto row = ins.step();
        if (!row) {
            return row.error();
        }
        bool claimed = *row;
        WB_TRY(ins.run());
        if (!claimed) {
            auto orig = c.prepare("SELECT delivery_id, run_id FROM dedup "
                                  "WHERE subscription_id = ?1 AND dedup_key = ?2");
            orig.bind(1, req.subscription_id).bind(2, req.dedup_key);
            auto found = orig.step();
            if (!found) {
                return found.error();
            }
            if (!*found) {
                return errc::internal;
            }
            return intake_outcome{intake_status::duplicate, orig.text(0), orig.text(1)};
        }
    }
    auto dlv =
        c.prepare("INSERT INTO deliveries (id, subscription_id, tenant, dedup_key, run_id, status, "
                  "attempts, due_at, lease_until, received_at, updated_at, last_error) "
                  "VALUES (?1, ?2, ?3, ?4, ?5, ?6, 0, ?7, 0, ?8, ?8, '')");
    dlv.bind(1, req.delivery_id)
        .bind(2, req.subscription_id)
        .bind(3, req.tenant)
        .bind(4, req.dedup_key)
        .bind(5, req.run_id)
        .bind(6, codec::name_of(req.hold ? delivery_status::held : delivery_status::pending))
        .bind(7, req.due_at)
        .bind(8, req.received_at);
    WB_TRY(dlv.run());
    auto content =
        c.prepare("INSERT INTO delivery_contents (delivery_id, content_json) VALUES (?1, ?2)");
    content.bind(1, req.delivery_id).bind(2, req.content_json);
    WB_TRY(content.run());
    return intake_outcome{req.hold ? intake_status::held : intake_status::accepted, req.delivery_id,
                          req.run_id};
}

void sqlite_store::writer_loop() {
    std::vector<queued_write> batch;
    std::vector<write_outcome> results;
    for (;;) {
        batch.clear();
        {
            std::unique_lock lock(queue_mu_);
            queue_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
            if (queue_.empty()) {
                return; // stopping, and drained
            }
            std::size_t rows = 0;
            while (!queue_.empty() &&
                   (batch.empty() || rows < static_cast<std::size_t>(max_batch_))) {
                rows += rows_of(queue_.front());
                batch.push_back(std::move(queue_.front()));
                queue_.pop_front();
            }
            queued_rows_ -= rows;
        }
        results.clear();
        run_batch(batch, results);
        for (std::size_t i = 0; i < batch.size(); ++i) {
            if (auto* in = std::get_if<queued_intake>(&batch[i])) {
                intake_requests_.fetch_add(1);
                if (!in->done) {
                    continue;
                }
                try {
                    in->done(std::move(results[i].intake));
                } catch (...) {
                    // A throwing callback must not take the writer (and every later intake)
                    // down.
                }
            } else {
                std::get<queued_attempts>(batch[i]).done->set_value(std::move(results[i].attempts));
            }
        }
    }
}

std::size_t sqlite_store::rows_of(const queued_write& w) {
    if (const auto* a = std::get_if<queued_attempts>(&w)) {
        return std::max<std::size_t>(1, a->recs->size());
    }
    return 1;
}

void sqlite_store::run_batch(const std::vector<queued_write>& batch,
                             std::vector<write_outcome>& results) {
    std::lock_guard lock(write_mu_);
    connection& c = *writer_;
    results.resize(batch.size());
    boost::system::error_code failed;
    if (damage_.seen()) {
        // Nothing more is written into a file known to be damaged (damage()).
        failed = errc::store_unavailable;
    } else if (auto r = c.exec("BEGIN IMMEDIATE"); !r) {
        rollback_if_open(c);
        failed = r.error();
    } else {
        for (std::size_t i = 0; i < batch.size(); ++i) {
            if (const auto* in = std::get_if<queued_intake>(&batch[i])) {
                results[i].intake = in_savepoint([&] { return intake_locked(in->req); });
                continue;
            }
            const auto& recs = *std::get<queued_attempts>(batch[i]).recs;
            results[i].attempts.reserve(recs.size());
            for (const auto& rec : recs) {
                results[i].attempts.push_back(in_savepoint([&]() -> result<void> {
                    if (rec.attempt.outcome == attempt_outcome::delivered && !rec.run) {
                        return errc::invalid_argument;
                    }
                    return record_attempt_locked(rec);
                }));
            }
        }
        if (!c.in_transaction()) {
            failed = errc::store_unavailable;
        } else if (auto r = c.exec("COMMIT"); !r) {
            failed = r.error();
            rollback_if_open(c);
        }
    }
    for (const auto& w : batch) {
        if (const auto* a = std::get_if<queued_attempts>(&w)) {
            for (const auto& rec : *a->recs) {
                forget_subscription(rec.subscription_id);
            }
        }
    }
    if (failed) {
        // Nothing of this batch is durable: no request may be told it was accepted.
        for (std::size_t i = 0; i < batch.size(); ++i) {
            if (std::holds_alternative<queued_intake>(batch[i])) {
                results[i].intake = failed;
            } else {
                const auto n = std::get<queued_attempts>(batch[i]).recs->size();
                results[i].attempts.assign(n, failed);
            }
        }
        return;
    }
    commits_.fetch_add(1);
    if (std::any_of(batch.begin(), batch.end(), [](const queued_write& w) {
            return std::holds_alternative<queued_intake>(w);
        })) {
        intake_batches_.fetch_add(1);
    }
}

} // namespace wopbridge::sqlite_detail
