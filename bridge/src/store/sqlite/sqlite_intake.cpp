// SQLite store: intake, and the writer thread that group-commits intake and attempt batches.
#include "store/sqlite/sqlite_store_impl.hpp"

namespace wopbridge::sqlite_detail {

bool sqlite_store::enqueue_write(queued_write& w) {
    wopbridge::unique_lock lock(queue_mu_);
    if (stopping_) {
        return false;
    }
    queued_rows_ += rows_of(w);
    queue_.push_back(std::move(w));
    // Inside a commit window the writer waits for a full batch, not for each arrival.
    const bool wake = !writer_in_window_ || queued_rows_ >= static_cast<std::size_t>(max_batch_);
    lock.unlock();
    if (wake) {
        queue_cv_.notify_one();
    }
    return true;
}

void sqlite_store::intake(intake_request req, intake_callback done) {
    queued_write w = queued_intake{std::move(req), std::move(done)};
    if (enqueue_write(w)) {
        return;
    }
    if (auto& cb = std::get<queued_intake>(w).done) {
        cb(errc::shutting_down);
    }
}

result<void> sqlite_store::record_verification_refusal(const verification_refusal& r) {
    return write_transaction([&]() REQUIRES(write_mu_) -> result<void> {
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
    // One statement: the delivery's row carries its claim on the dedup key (migration 11), and
    // the partial unique index deliveries_dedup is the dedup check, inside this commit. No
    // existence check of the subscription first: the foreign key refuses an unknown one
    // (SQLITE_CONSTRAINT_FOREIGNKEY -> not_found).
    const auto insert = [&]() -> result<bool> {
        auto dlv = c.prepare(
            "INSERT INTO deliveries (id, subscription_id, tenant, dedup_key, run_id, status, "
            "attempts, due_at, lease_until, received_at, updated_at, last_error, content_json, "
            "dedup_expires_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, 0, ?7, 0, ?8, ?8, '', ?9, ?10) "
            "ON CONFLICT (subscription_id, dedup_key) WHERE dedup_expires_at IS NOT NULL "
            "DO NOTHING");
        dlv.bind(1, req.delivery_id)
            .bind(2, req.subscription_id)
            .bind(3, req.tenant)
            .bind(4, req.dedup_key)
            .bind(5, req.run_id)
            .bind(6, codec::name_of(req.hold ? delivery_status::held : delivery_status::pending))
            .bind(7, req.due_at)
            .bind(8, req.received_at)
            .bind(9, req.content_json);
        if (req.dedup_enabled) {
            dlv.bind(10, req.dedup_expires_at);
        } else {
            dlv.bind_null(10);
        }
        if (auto ran = dlv.run(); !ran) {
            return result<bool>(boost::system::in_place_error, ran.error());
        }
        return c.changes() == 1;
    };
    auto inserted = insert();
    if (!inserted) {
        return inserted.error();
    }
    if (!*inserted) {
        // The key is claimed. Past its retention the claim is let go and this delivery takes
        // the key; within it, this is a duplicate of the claiming delivery.
        auto orig = c.prepare("SELECT seq, id, run_id, dedup_expires_at FROM deliveries "
                              "WHERE subscription_id = ?1 AND dedup_key = ?2 "
                              "AND dedup_expires_at IS NOT NULL");
        orig.bind(1, req.subscription_id).bind(2, req.dedup_key);
        auto found = orig.step();
        if (!found) {
            return found.error();
        }
        if (!*found) {
            return errc::internal;
        }
        if (orig.int64(3) >= req.received_at) {
            return intake_outcome{intake_status::duplicate, orig.text(1), orig.text(2)};
        }
        auto release = c.prepare("UPDATE deliveries SET dedup_expires_at = NULL WHERE seq = ?1");
        release.bind(1, orig.int64(0));
        WB_TRY(release.run());
        inserted = insert();
        if (!inserted) {
            return inserted.error();
        }
        if (!*inserted) {
            return errc::internal;
        }
    }
    return intake_outcome{req.hold ? intake_status::held : intake_status::accepted, req.delivery_id,
                          req.run_id};
}

void sqlite_store::writer_loop() {
    std::vector<queued_write> batch;
    std::vector<write_outcome> results;
    for (;;) {
        batch.clear();
        {
            wopbridge::unique_lock lock(queue_mu_);
            lock.wait(queue_cv_,
                      [&]() REQUIRES(queue_mu_) { return stopping_ || !queue_.empty(); });
            if (queue_.empty()) {
                return; // stopping, and drained
            }
            const auto full = [&]() REQUIRES(queue_mu_) {
                return stopping_ || queued_rows_ >= static_cast<std::size_t>(max_batch_);
            };
            if (commit_window_.count() > 0 && !full() &&
                std::chrono::steady_clock::now() - last_batch_end_ < commit_window_) {
                writer_in_window_ = true;
                lock.wait_for(queue_cv_, commit_window_, full);
                writer_in_window_ = false;
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
        last_batch_end_ = std::chrono::steady_clock::now();
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
            } else if (auto* a = std::get_if<queued_attempts>(&batch[i])) {
                a->done->set_value(std::move(results[i].attempts));
            } else {
                std::get<queued_claim>(batch[i]).done->set_value(std::move(results[i].claimed));
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

bool sqlite_store::run_units(const std::vector<queued_write>& batch,
                             std::vector<write_outcome>& results, bool savepoints) {
    const auto unit = [&](auto&& body) REQUIRES(write_mu_) -> decltype(body()) {
        return savepoints ? in_savepoint(body) : body();
    };
    for (std::size_t i = 0; i < batch.size(); ++i) {
        if (const auto* in = std::get_if<queued_intake>(&batch[i])) {
            results[i].intake = unit([&]() REQUIRES(write_mu_) { return intake_locked(in->req); });
            if (!savepoints && !results[i].intake) {
                return false;
            }
            continue;
        }
        if (const auto* cl = std::get_if<queued_claim>(&batch[i])) {
            results[i].claimed = unit([&]() REQUIRES(write_mu_) {
                return claim_locked(cl->now, cl->limit, cl->lease_ms);
            });
            if (!savepoints && !results[i].claimed) {
                return false;
            }
            continue;
        }
        const auto& recs = *std::get<queued_attempts>(batch[i]).recs;
        results[i].attempts.reserve(recs.size());
        for (const auto& rec : recs) {
            results[i].attempts.push_back(unit([&]() REQUIRES(write_mu_) -> result<void> {
                if (rec.attempt.outcome == attempt_outcome::delivered && !rec.run) {
                    return errc::invalid_argument;
                }
                return record_attempt_locked(rec);
            }));
            if (!savepoints && !results[i].attempts.back()) {
                return false;
            }
        }
    }
    return true;
}

void sqlite_store::run_batch(const std::vector<queued_write>& batch,
                             std::vector<write_outcome>& results) {
    wopbridge::lock_guard lock(write_mu_);
    connection& c = *writer_;
    results.resize(batch.size());
    boost::system::error_code failed;
    // Claims alone need no fsync (claim_due); anything else in the batch makes it FULL.
    const bool claims_only = std::all_of(batch.begin(), batch.end(), [](const queued_write& w) {
        return std::holds_alternative<queued_claim>(w);
    });
    if (damage_.seen()) {
        // Nothing more is written into a file known to be damaged (damage()).
        failed = errc::store_unavailable;
    } else if (auto r = claims_only ? c.exec("PRAGMA synchronous=NORMAL") : result<void>{}; !r) {
        failed = r.error();
    } else if (auto r = c.exec("BEGIN IMMEDIATE"); !r) {
        rollback_if_open(c);
        failed = r.error();
    } else {
        // Optimistic first: no savepoint per unit (each one costs statements, and a copy of
        // every page the unit touches into the sub-journal). A unit that fails undoes the whole
        // attempt, and the batch runs again with a savepoint per unit, so only the failing unit
        // is left out, exactly as if it had run alone.
        if (!run_units(batch, results, false)) {
            rollback_if_open(c);
            results.assign(batch.size(), write_outcome{});
            if (auto r = c.exec("BEGIN IMMEDIATE"); !r) {
                rollback_if_open(c);
                failed = r.error();
            } else {
                run_units(batch, results, true);
            }
        }
        if (!failed && !c.in_transaction()) {
            failed = errc::store_unavailable; // an I/O error rolled it all back under us
        } else if (!failed) {
            if (auto r = c.exec("COMMIT"); !r) {
                failed = r.error();
                rollback_if_open(c);
            }
        }
    }
    if (claims_only) {
        // Back to FULL before anything else commits. If even that fails, no later commit could
        // be acknowledged as fsynced: the store stops writing (as for a damaged file).
        if (auto r = c.exec("PRAGMA synchronous=FULL"); !r) {
            damage_.note(SQLITE_ERROR, "cannot restore PRAGMA synchronous=FULL after a claim");
            failed = r.error();
        }
    }
    // Only a subscription whose row an attempt changed leaves the cache (most attempts change
    // nothing there): forgetting on every batch made each ingest read its subscription again.
    for (const auto& id : changed_subscriptions_) {
        forget_subscription(id);
    }
    changed_subscriptions_.clear();
    if (failed) {
        // Nothing of this batch is durable: no request may be told it was accepted.
        for (std::size_t i = 0; i < batch.size(); ++i) {
            if (std::holds_alternative<queued_intake>(batch[i])) {
                results[i].intake = failed;
            } else if (const auto* a = std::get_if<queued_attempts>(&batch[i])) {
                results[i].attempts.assign(a->recs->size(), failed);
            } else {
                results[i].claimed = failed;
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
