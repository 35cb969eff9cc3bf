#pragma once
// The store's role for housekeeping and its own health (see store.hpp for the transaction and
// threading rules).

#include "contract/types.hpp"
#include "core/error.hpp"

#include <cstdint>
#include <string>

namespace wopbridge {

// Counters of a store's own work, for tests and metrics.
struct store_stats {
    std::uint64_t commits = 0;         // write transactions committed (each one fsync)
    std::uint64_t intake_batches = 0;  // group-commit transactions of the intake writer
    std::uint64_t intake_requests = 0; // intake requests answered from those batches
    std::uint64_t round_trips = 0;     // statements sent to a database server (networked backends)
    // PostgreSQL: the subscription cache is in use (its change notifications are being received).
    bool subscription_cache_live = false;
};

class store_upkeep {
public:
    virtual ~store_upkeep() = default;

    // Housekeeping: drops dedup rows, dead letters and finished replay jobs past their expiry.
    // Returns rows removed.
    virtual result<int> purge_expired(millis now) = 0;

    // Cheap liveness probe for /readyz.
    virtual result<void> ping() = 0;
    // A small committed (fsynced) write, for /readyz after a failed commit: a full disk or a
    // read-only file fails it, so readiness returns only once writes work again.
    virtual result<void> probe_write() = 0;

    // Counters since open.
    virtual store_stats stats() const = 0;

    // The first damage the store met in its own files (a corrupt page or index: SQLite's
    // SQLITE_CORRUPT / SQLITE_NOTADB), as the database named it; empty while there is none. Damage
    // does not heal: from then on ping() and probe_write() fail, so /readyz answers 503 until the
    // node is restarted on a repaired or restored database.
    virtual std::string damage() const = 0;
};

} // namespace wopbridge
