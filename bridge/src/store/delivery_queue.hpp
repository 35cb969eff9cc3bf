#pragma once
// The store's role for deliveries: claiming, recording attempts, and reading them and their dead
// letters back (see store.hpp for the transaction and threading rules).

#include "contract/types.hpp"
#include "core/error.hpp"
#include "store/store_page.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace wopbridge {

// The outcome of one delivery attempt, written in one transaction: the attempt event, the delivery
// row update, and (as applicable) the new run + run.started, the dead-letter row, the state change.
struct attempt_record {
    std::string delivery_id;
    std::string subscription_id;
    millis at = 0;
    delivery_attempt attempt;          // the trigger.delivery.attempted payload
    std::string attempt_event_id;      // pre-minted; becomes run.started.causationId when delivered

    // delivered:
    std::optional<run_record> run;              // the run to create (id = delivery.run_id)
    std::string run_started_event_id;
    std::string run_started_payload_json;       // the run.started payload
    std::vector<std::pair<std::string, std::string>> extra_run_events; // (type, payload) appended after
                                                                        // run.started (e.g. run.completed)
    // Event ids for extra_run_events, index for index. Entries missing here (or empty) get the
    // derived id "<run_started_event_id>.<n>" (n = 1-based index into extra_run_events).
    std::vector<std::string> extra_run_event_ids;
    // retrying:
    millis next_due_at = 0;
    std::string error; // content-free

    // Subscription bookkeeping done in the same transaction.
    int consecutive_failures = 0;
    millis next_probe_at = 0;
    std::optional<state_change> state_change_caused; // e.g. active -> failed, -> dead-lettered
    std::string state_change_event_id;
    millis dead_letter_expires_at = 0;               // when outcome is dead-lettered
};

// Deliveries of one subscription by status, for the dashboard and the metrics gauges.
struct subscription_delivery_stats {
    std::string subscription_id;
    std::int64_t pending = 0;       // waiting (includes due and backing off)
    std::int64_t due = 0;           // of those, due at or before `now`
    std::int64_t in_flight = 0;
    std::int64_t held = 0;
    std::int64_t delivered = 0;
    std::int64_t dead_lettered = 0; // deliveries that ended dead-lettered
    std::int64_t dead_letters = 0;  // unexpired dead letters (verification refusals included)
};

class delivery_queue {
public:
    virtual ~delivery_queue() = default;

    // Deliveries. claim_due marks up to `limit` pending deliveries of `active` (or probing `failed`)
    // subscriptions due at or before `now` as in_flight with a lease until now + lease_ms, and returns
    // them. A lease that expires (the claimer died) makes the delivery claimable again.
    virtual result<std::vector<delivery>> claim_due(millis now, int limit, millis lease_ms) = 0;
    virtual result<std::string> delivery_content(const std::string& delivery_id) = 0;
    virtual result<void> record_attempt(const attempt_record& rec) = 0;
    // Several attempts at once: where the backend can, in one transaction (one fsync, shared with
    // intake's group commit on SQLite), each record in its own savepoint so one that fails (a
    // settled delivery: conflict) leaves the others; a commit that fails fails them all. One result
    // per record, in order. The default records them one by one through record_attempt.
    virtual std::vector<result<void>> record_attempts(const std::vector<attempt_record>& recs);
    // The contents of several deliveries by id; a missing one is absent from the map. The default
    // reads them one by one through delivery_content.
    virtual result<std::map<std::string, std::string>>
    delivery_contents(const std::vector<std::string>& delivery_ids);
    virtual result<std::optional<millis>> next_due_at() = 0; // earliest pending due time, if any
    virtual result<page<delivery>> list_deliveries(const std::string& subscription_id,
                                                   const page_request& req) = 0;
    virtual result<delivery> get_delivery(const std::string& delivery_id) = 0;
    // Held deliveries of a subscription become pending (due now), in arrival order.
    virtual result<int> release_held(const std::string& subscription_id, millis now) = 0;

    // Dead letters, newest first. A cursor minted for another subscription -> invalid_argument.
    virtual result<page<dead_letter>> list_dead_letters(const std::string& subscription_id,
                                                        const page_request& req, millis now) = 0;

    // Operator views. Delivery counts per subscription (only subscriptions with deliveries or dead
    // letters appear). A read: metrics gauges and the dashboard overview call it on every scrape /
    // refresh.
    virtual result<std::vector<subscription_delivery_stats>> delivery_stats(millis now) = 0;
    // The same counts of the work still to do (pending, due, in flight, held) and the unexpired
    // dead letters, with delivered and dead_lettered left 0: index seeks per subscription, so the
    // cost follows the outstanding work, never the stored history. The /metrics scrape calls it.
    virtual result<std::vector<subscription_delivery_stats>> outstanding_work(millis now) = 0;
    // The deliveries of a subscription that hold these dedup keys (a dead letter's replay holds
    // "replay:<attemptEventId>"), by dedup key; keys without a delivery are absent.
    virtual result<std::map<std::string, delivery>>
    deliveries_by_dedup_key(const std::string& subscription_id,
                            const std::vector<std::string>& dedup_keys) = 0;
};

} // namespace wopbridge
