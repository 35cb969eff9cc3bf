// SQLite store: recording delivery attempts (the run, dead letter and state change they cause).
#include "store/sqlite/sqlite_store_impl.hpp"

namespace wopbridge::sqlite_detail {

result<void> sqlite_store::record_attempt(const attempt_record& rec) {
    auto out = record_attempts({rec});
    return out.front();
}

std::vector<result<void>> sqlite_store::record_attempts(const std::vector<attempt_record>& recs) {
    if (recs.empty()) {
        return {};
    }
    std::promise<std::vector<result<void>>> promise;
    auto future = promise.get_future();
    queued_write w = queued_attempts{&recs, &promise};
    if (!enqueue_write(w)) {
        return std::vector<result<void>>(recs.size(), make_error_code(errc::shutting_down));
    }
    return future.get();
}

result<void> sqlite_store::insert_dead_letter(const std::string& subscription_id,
                                              const std::string& attempt_event_id,
                                              const delivery_attempt& a, dead_letter_reason reason,
                                              const std::optional<state_change>& change, millis at,
                                              millis expires_at, const std::string& delivery_id) {
    auto st = writer_->prepare(
        "INSERT INTO dead_letters (subscription_id, attempt_event_id, dedup_key, attempt, "
        "reason, state_change_source, state_change_from, state_change_to, "
        "state_change_reason, dead_lettered_at, expires_at, delivery_id) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)");
    st.bind(1, subscription_id)
        .bind(2, attempt_event_id)
        .bind(3, a.dedup_key)
        .bind(4, a.attempt)
        .bind(5, codec::name_of(reason));
    if (change) {
        st.bind(6, codec::name_of(change->source))
            .bind(7, codec::name_of(change->from))
            .bind(8, codec::name_of(change->to))
            .bind(9, codec::name_of(change->reason));
    } else {
        st.bind_null(6).bind_null(7).bind_null(8).bind_null(9);
    }
    st.bind(10, at).bind(11, expires_at).bind(12, delivery_id);
    return st.run();
}

result<void> sqlite_store::record_attempt_locked(const attempt_record& rec) {
    connection& c = *writer_;
    const delivery_attempt attempt = codec::recorded_attempt(rec);
    const std::string payload = codec::attempt_payload_json(attempt);
    // The common case settles the row in one statement: this subscription's delivery, not yet
    // settled, reserved at intake for this run. Anything else is told apart below.
    bool settled = false;
    if (attempt.outcome == attempt_outcome::delivered) {
        auto upd = c.prepare("UPDATE deliveries SET status = 'delivered', attempts = ?2, "
                             "lease_until = 0, updated_at = ?3, last_error = '' WHERE id = ?1 "
                             "AND subscription_id = ?5 AND run_id = ?4 "
                             "AND status IN ('pending', 'in_flight', 'held')");
        upd.bind(1, rec.delivery_id)
            .bind(2, attempt.attempt)
            .bind(3, rec.at)
            .bind(4, rec.run->id)
            .bind(5, rec.subscription_id);
        WB_TRY(upd.run());
        settled = c.changes() == 1;
    }
    if (!settled) {
        auto st = c.prepare("SELECT status, subscription_id FROM deliveries WHERE id = ?1");
        st.bind(1, rec.delivery_id);
        auto row = st.step();
        if (!row) {
            return row.error();
        }
        if (!*row) {
            return errc::not_found;
        }
        auto status = codec::delivery_status_from(st.text(0));
        if (st.text(1) != rec.subscription_id) {
            return errc::invalid_argument;
        }
        // A settled delivery is never settled twice (e.g. by a claimer whose lease expired).
        if (!status || *status == delivery_status::delivered ||
            *status == delivery_status::dead_lettered) {
            return errc::conflict;
        }
    }

    switch (attempt.outcome) {
    case attempt_outcome::delivered: {
        const run_record& run = *rec.run;
        auto ins = c.prepare("INSERT INTO runs (" WB_RUN_COLS
                             ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
        ins.bind(1, run.id)
            .bind(2, run.tenant)
            .bind(3, run.workflow_id)
            .bind(4, run.subscription_id)
            .bind(5, run.delivery_id)
            .bind(6, codec::name_of(run.status))
            .bind(7, run.upstream_run_id)
            .bind(8, run.created_at)
            .bind(9, run.updated_at);
        WB_TRY(ins.run());
        // A new run's log is empty: its sequences are known (0, 1, ...), no MAX() lookup.
        std::vector<new_run_event> log;
        log.reserve(2 + rec.extra_run_events.size());
        log.push_back({codec::event_delivery_attempted, payload, {}, rec.attempt_event_id});
        log.push_back({codec::event_run_started, rec.run_started_payload_json,
                       rec.attempt_event_id, rec.run_started_event_id});
        for (std::size_t i = 0; i < rec.extra_run_events.size(); ++i) {
            std::string id =
                i < rec.extra_run_event_ids.size() ? rec.extra_run_event_ids[i] : std::string{};
            if (id.empty()) {
                id = rec.run_started_event_id + "." + std::to_string(i + 1);
            }
            const auto& [type, extra_payload] = rec.extra_run_events[i];
            log.push_back({type, extra_payload, {}, std::move(id)});
        }
        WB_TRY(insert_new_run_log(c, run.id, log, rec.at, outbound_possible_.load()));
        if (!settled) {
            auto upd = c.prepare("UPDATE deliveries SET status = 'delivered', attempts = ?2, "
                                 "lease_until = 0, updated_at = ?3, last_error = '', "
                                 "run_id = ?4 WHERE id = ?1");
            upd.bind(1, rec.delivery_id).bind(2, attempt.attempt).bind(3, rec.at).bind(4, run.id);
            WB_TRY(upd.run());
        }
        break;
    }
    case attempt_outcome::retrying: {
        WB_TRY(insert_subscription_event(c, rec.subscription_id, codec::event_delivery_attempted,
                                         payload, {}, rec.attempt_event_id, rec.at));
        auto upd = c.prepare("UPDATE deliveries SET status = 'pending', due_at = ?2, "
                             "attempts = ?3, last_error = ?4, lease_until = 0, "
                             "updated_at = ?5 WHERE id = ?1");
        upd.bind(1, rec.delivery_id)
            .bind(2, rec.next_due_at)
            .bind(3, attempt.attempt)
            .bind(4, rec.error)
            .bind(5, rec.at);
        WB_TRY(upd.run());
        break;
    }
    case attempt_outcome::dead_lettered: {
        WB_TRY(insert_subscription_event(c, rec.subscription_id, codec::event_delivery_attempted,
                                         payload, {}, rec.attempt_event_id, rec.at));
        auto upd = c.prepare("UPDATE deliveries SET status = 'dead_lettered', "
                             "attempts = ?2, last_error = ?3, lease_until = 0, "
                             "updated_at = ?4 WHERE id = ?1");
        upd.bind(1, rec.delivery_id).bind(2, attempt.attempt).bind(3, rec.error).bind(4, rec.at);
        WB_TRY(upd.run());
        WB_TRY(insert_dead_letter(rec.subscription_id, rec.attempt_event_id, attempt,
                                  dead_letter_reason::retries_exhausted, rec.state_change_caused,
                                  rec.at, rec.dead_letter_expires_at, rec.delivery_id));
        break;
    }
    }

    // Written only when it changes (a run of deliveries leaves it at 0, 0). The subscription
    // exists: its delivery row does (deleting a subscription cascades to its deliveries).
    auto sub = c.prepare("UPDATE subscriptions SET consecutive_failures = ?2, "
                         "next_probe_at = ?3 WHERE id = ?1 AND "
                         "(consecutive_failures <> ?2 OR next_probe_at <> ?3)");
    sub.bind(1, rec.subscription_id).bind(2, rec.consecutive_failures).bind(3, rec.next_probe_at);
    WB_TRY(sub.run());
    if (c.changes() > 0 || rec.state_change_caused) {
        changed_subscriptions_.insert(rec.subscription_id);
    }
    if (rec.state_change_caused) {
        WB_TRY(apply_state_change(c, *rec.state_change_caused, rec.state_change_event_id, rec.at,
                                  rec.attempt_event_id));
    }
    return {};
}

} // namespace wopbridge::sqlite_detail
