#pragma once
// The Store interface: every durable fact of the bridge goes through here. Backends live in
// store/<backend>/ and are the only code that sees SQL. Every mutating call is one transaction that is
// committed durably (fsync) before it returns or calls back; "committed" in these comments means that.
//
// Thread-safety: every method may be called from any thread.
//
// `store` is the aggregate of the role interfaces below; code that needs one role only can take
// that role.

#include "contract/types.hpp"
#include "core/error.hpp"
#include "store/delivery_queue.hpp"
#include "store/intake_store.hpp"
#include "store/key_store.hpp"
#include "store/node_registry.hpp"
#include "store/outbound_store.hpp"
#include "store/replay_job_store.hpp"
#include "store/run_log.hpp"
#include "store/store_page.hpp"
#include "store/store_upkeep.hpp"
#include "store/subscription_store.hpp"

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wopbridge {

class store : public subscription_store,
              public intake_store,
              public delivery_queue,
              public run_log,
              public key_store,
              public outbound_store,
              public replay_job_store,
              public node_registry,
              public store_upkeep {
public:
    ~store() override = default;
};

// PRAGMA integrity_check or quick_check (store/sqlite/sqlite_check.hpp says what each covers).
enum class sqlite_startup_check { integrity, quick };

struct sqlite_options {
    std::string path;                 // file path; ":memory:" is refused (durability)
    int group_commit_max_batch = 256; // intake requests per transaction at most
    // Group commit window: while writes keep coming (the last commit ended less than this long
    // ago), the writer lets this long pass, or the batch fill, before it commits, so a moderate
    // load shares one commit (one fsync, one copy of each touched page in the WAL) among several
    // events instead of paying it for each. 0 commits as soon as anything is queued. An idle
    // store never waits.
    int commit_window_us = 1000;
    millis busy_timeout_ms = 5000;
    // Size cap in database pages (0 = none). Past it writes fail like on a full disk:
    // store_unavailable, nothing half-written. (Never below the current size.)
    std::int64_t max_page_count = 0;
    // WAL size (pages) past which the checkpointer copies it back and restarts it; the WAL stays
    // near this size under sustained load and is truncated after a second without commits.
    int checkpoint_pages = 4096;
    // A 0-byte file is a database that was lost (or a creation that never finished): refused as a
    // new store unless `init` says so (`serve --init`).
    bool init = false;
    // The file (and its WAL) checked before serving: a damaged file is refused, not served.
    bool check_integrity = true;
    // How deep (store.sqlite.startupCheck): integrity also checks every index against its table.
    sqlite_startup_check startup_check = sqlite_startup_check::integrity;
};

// `path` may also be an SQLite URI ("file:/var/lib/x.db?mode=ro"). Fails with store_unavailable
// when the file cannot be opened or migrated, unsupported when its schema is newer than this build;
// the error carries a human-readable reason (no secrets).
result<std::unique_ptr<store>, error_info> open_sqlite_store(const sqlite_options& opts);

// ---- PostgreSQL (several bridge nodes sharing one database) ------------------------------------

struct postgres_options {
    // libpq connection URI or key=value string ("postgresql://user@host:5432/db"). Holds a
    // password at most; never logged or echoed in errors.
    std::string url;
    int pool_size = 4; // connections for synchronous calls (plus the intake writer and the listener)
    int group_commit_max_batch = 256; // intake requests per transaction at most
    int connect_timeout_s = 5;        // applies to the first connect and to every reconnect
};

// Connects, applies pending migrations (once across nodes: under an advisory lock) and returns the
// store. store_unavailable when the server cannot be reached or migrated, unsupported when the
// schema is newer than this build. A lost connection later makes calls answer store_unavailable
// until a later call reconnects.
result<std::unique_ptr<store>, error_info> open_postgres_store(const postgres_options& opts);

} // namespace wopbridge
