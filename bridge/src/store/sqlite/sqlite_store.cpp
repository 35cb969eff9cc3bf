// The SQLite store backend. One write connection (guarded by write_mu_) serves the intake writer
// thread and the synchronous mutators; one query_only read connection (guarded by read_mu_) serves
// the reads. WAL lets reads proceed while a batch commits. This file: opening, the threads'
// lifetime, checkpoints, upkeep, and the outbound and replay-job roles (sqlite_outbound.cpp,
// sqlite_replay_jobs.cpp).
#include "store/sqlite/sqlite_store_impl.hpp"
#include "core/thread_name.hpp"
#include "core/log.hpp"
#include "store/sqlite/sqlite_check.hpp"
#include "store/sqlite/wal_check.hpp"

#include <fcntl.h>
#include <unistd.h>

namespace wopbridge::sqlite_detail {

sqlite_store::sqlite_store(std::unique_ptr<connection> writer, std::unique_ptr<connection> reader,
                           std::unique_ptr<connection> checkpointer, int max_batch,
                           int checkpoint_pages, std::chrono::microseconds commit_window)
    : writer_(std::move(writer)), reader_(std::move(reader)),
      checkpointer_(std::move(checkpointer)), max_batch_(std::max(1, max_batch)),
      commit_window_(std::max(std::chrono::microseconds(0), commit_window)),
      checkpoint_pages_(std::max(1, checkpoint_pages)) {
    for (auto* c : {writer_.get(), reader_.get(), checkpointer_.get()}) {
        c->watch_damage(&damage_);
    }
    {
        auto st = writer_->prepare("SELECT EXISTS (SELECT 1 FROM outbound_webhooks)");
        auto row = st.step();
        outbound_possible_.store(!row || !*row || st.int64(0) != 0);
    }
    sqlite3_wal_hook(writer_->handle(), &sqlite_store::on_wal_commit, this);
    thread_ = std::thread([this] {
        name_this_thread("wb-sqlite-write");
        writer_loop();
    });
    ckpt_thread_ = std::thread([this] {
        name_this_thread("wb-sqlite-ckpt");
        checkpointer_loop();
    });
}

sqlite_store::~sqlite_store() {
    {
        wopbridge::lock_guard lock(queue_mu_);
        stopping_ = true;
    }
    queue_cv_.notify_all();
    thread_.join(); // the loop drains the queue first: every callback gets its answer
    {
        wopbridge::lock_guard lock(ckpt_mu_);
        ckpt_stopping_ = true;
    }
    ckpt_cv_.notify_all();
    ckpt_thread_.join();
    sqlite3_wal_hook(writer_->handle(), nullptr, nullptr);
}

result<int> sqlite_store::purge_expired(millis now) {
    return write_transaction([&]() REQUIRES(write_mu_) -> result<int> {
        // Expired dedup claims are let go when their key comes again (intake_locked): a sweep
        // would rewrite every delivery's page once more.
        std::int64_t removed = 0;
        // A refused signature's run-less attempt event goes with its dead letter: forged posts
        // must not leave a row behind for ever (their retention is the short one).
        auto refused = writer_->prepare(
            "DELETE FROM subscription_events WHERE event_id IN (SELECT attempt_event_id FROM "
            "dead_letters WHERE expires_at <= ?1 AND reason = 'verification_failed')");
        refused.bind(1, now);
        WB_TRY(refused.run());
        removed += writer_->changes();
        auto dead = writer_->prepare("DELETE FROM dead_letters WHERE expires_at <= ?1");
        dead.bind(1, now);
        WB_TRY(dead.run());
        removed += writer_->changes();
        auto jobs = sqlite::replay_jobs::purge_finished(*writer_, now);
        if (!jobs) {
            return jobs.error();
        }
        return static_cast<int>(removed) + *jobs;
    });
}

result<int> sqlite_store::release_all_claims() {
    return write_transaction([&]() REQUIRES(write_mu_) -> result<int> {
        auto st = writer_->prepare(
            "UPDATE deliveries SET lease_until = 0 WHERE status = 'in_flight' AND lease_until > 0");
        WB_TRY(st.run());
        const auto deliveries = static_cast<int>(writer_->changes());
        WB_TRY(sqlite::replay_jobs::release(*writer_, ""));
        return deliveries;
    });
}

result<int> sqlite_store::keep_node_alive(millis /*silent_ms*/) {
    return make_error_code(errc::unsupported);
}

result<void> sqlite_store::leave_cluster() {
    return make_error_code(errc::unsupported);
}

std::string sqlite_store::damage() const {
    return damage_.seen() ? damage_.first() : std::string();
}

result<void> sqlite_store::probe_write() {
    if (damage_.seen()) {
        return errc::store_unavailable; // a write into a damaged file may spread the damage
    }
    return write_transaction([&]() REQUIRES(write_mu_) -> result<void> {
        // Row written and removed: the pages still go through the WAL and its fsync.
        auto put = writer_->prepare(
            "INSERT OR REPLACE INTO store_meta (name, value) VALUES ('write_probe', ?1)");
        put.bind(1, std::string(512, 'p'));
        WB_TRY(put.run());
        auto drop = writer_->prepare("DELETE FROM store_meta WHERE name = 'write_probe'");
        WB_TRY(drop.run());
        return {};
    });
}

result<void> sqlite_store::ping() {
    if (damage_.seen()) {
        return errc::store_unavailable;
    }
    {
        wopbridge::lock_guard lock(write_mu_);
        if (sqlite3_db_readonly(writer_->handle(), "main") != 0) {
            return errc::store_unavailable;
        }
    }
    return read_transaction([&]() REQUIRES(read_mu_) -> result<void> {
        auto st = reader_->prepare("SELECT 1");
        auto row = st.step();
        if (!row) {
            return row.error();
        }
        return {};
    });
}

store_stats sqlite_store::stats() const {
    return {commits_.load(), intake_batches_.load(), intake_requests_.load()};
}

result<void> sqlite_store::insert_outbound_webhook(const outbound_webhook& w) {
    outbound_possible_.store(true); // before the commit: no run event may miss its outbox
    return write_transaction(
        [&]() REQUIRES(write_mu_) { return sqlite::outbound::insert_webhook(*writer_, w); });
}

result<outbound_webhook> sqlite_store::get_outbound_webhook(const std::string& id) {
    return read_transaction(
        [&]() REQUIRES(read_mu_) { return sqlite::outbound::get_webhook(*reader_, id); });
}

result<std::vector<outbound_webhook>> sqlite_store::list_outbound_webhooks(const std::string& t) {
    return read_transaction(
        [&]() REQUIRES(read_mu_) { return sqlite::outbound::list_webhooks(*reader_, t); });
}

result<void> sqlite_store::delete_outbound_webhook(const std::string& id) {
    return write_transaction(
        [&]() REQUIRES(write_mu_) { return sqlite::outbound::delete_webhook(*writer_, id); });
}

result<int> sqlite_store::enqueue_outbound(const std::string& run_id, std::int64_t sequence,
                                           millis at) {
    return write_transaction([&]() REQUIRES(write_mu_) {
        return sqlite::outbound::enqueue(*writer_, run_id, sequence, at);
    });
}

result<std::vector<outbound_delivery>>
sqlite_store::claim_outbound_due(millis now, int limit, int per_webhook_limit, millis lease_ms) {
    return write_transaction([&]() REQUIRES(write_mu_) {
        return sqlite::outbound::claim_due(*writer_, now, limit, per_webhook_limit, lease_ms);
    });
}

result<void> sqlite_store::record_outbound_attempt(const outbound_attempt& a) {
    return write_transaction(
        [&]() REQUIRES(write_mu_) { return sqlite::outbound::record_attempt(*writer_, a); });
}

result<int> sqlite_store::count_outbound_failures(const std::string& id, millis since) {
    return read_transaction(
        [&]() REQUIRES(read_mu_) { return sqlite::outbound::count_failures(*reader_, id, since); });
}

result<std::optional<millis>> sqlite_store::outbound_next_due_at() {
    return read_transaction(
        [&]() REQUIRES(read_mu_) { return sqlite::outbound::next_due_at(*reader_); });
}

result<std::vector<outbound_delivery>>
sqlite_store::list_outbound_deliveries(const std::string& id) {
    return read_transaction(
        [&]() REQUIRES(read_mu_) { return sqlite::outbound::list_deliveries(*reader_, id); });
}

result<page<outbound_dead_letter>> sqlite_store::list_outbound_dead_letters(const std::string& id,
                                                                            const page_request& req,
                                                                            millis now) {
    return read_transaction([&]() REQUIRES(read_mu_) {
        return sqlite::outbound::list_dead_letters(*reader_, id, req, now);
    });
}

result<std::vector<outbound_state_change>>
sqlite_store::list_outbound_state_changes(const std::string& id) {
    return read_transaction(
        [&]() REQUIRES(read_mu_) { return sqlite::outbound::list_state_changes(*reader_, id); });
}

result<void> sqlite_store::create_replay_job(const replay_job_record& job,
                                             const std::vector<std::string>& ids) {
    return write_transaction(
        [&]() REQUIRES(write_mu_) { return sqlite::replay_jobs::create(*writer_, job, ids); });
}

result<replay_job_record> sqlite_store::get_replay_job(const std::string& id) {
    return read_transaction(
        [&]() REQUIRES(read_mu_) { return sqlite::replay_jobs::get(*reader_, id); });
}

result<std::vector<replay_job_item>>
sqlite_store::unsettled_replay_job_items(const std::string& id) {
    return read_transaction(
        [&]() REQUIRES(read_mu_) { return sqlite::replay_jobs::unsettled_items(*reader_, id); });
}

result<void> sqlite_store::update_replay_job(const replay_job_update& u) {
    return write_transaction(
        [&]() REQUIRES(write_mu_) { return sqlite::replay_jobs::update(*writer_, u); });
}

result<std::vector<replay_job_record>>
sqlite_store::claim_replay_jobs(const std::string& owner, millis now, millis lease_ms) {
    return write_transaction([&]() REQUIRES(write_mu_) {
        return sqlite::replay_jobs::claim(*writer_, owner, now, lease_ms);
    });
}

result<int> sqlite_store::release_replay_jobs(const std::string& owner) {
    if (owner.empty()) {
        return make_error_code(errc::invalid_argument); // "" would release every node's
    }
    return write_transaction(
        [&]() REQUIRES(write_mu_) { return sqlite::replay_jobs::release(*writer_, owner); });
}

void sqlite_store::rollback_if_open(connection& c) {
    if (c.in_transaction()) {
        c.exec("ROLLBACK");
    }
}

int sqlite_store::on_wal_commit(void* self, sqlite3*, const char*, int pages) {
    static_cast<sqlite_store*>(self)->wal_committed(pages);
    return SQLITE_OK;
}

void sqlite_store::wal_committed(int pages) {
    bool wake = false;
    {
        wopbridge::lock_guard lock(ckpt_mu_);
        wal_pages_ = pages;
        wal_file_used_ = true;
        last_commit_ = std::chrono::steady_clock::now();
        wake = pages >= checkpoint_pages_;
    }
    if (wake) {
        ckpt_cv_.notify_one();
    }
}

void sqlite_store::checkpointer_loop() {
    using namespace std::chrono_literals;
    wopbridge::unique_lock lock(ckpt_mu_);
    for (;;) {
        lock.wait_for(ckpt_cv_, 1s, [&]() REQUIRES(ckpt_mu_) {
            return ckpt_stopping_ || wal_pages_ >= checkpoint_pages_;
        });
        if (ckpt_stopping_) {
            return;
        }
        const bool large = wal_pages_ >= checkpoint_pages_;
        const bool idle = wal_file_used_ && std::chrono::steady_clock::now() - last_commit_ >= 1s;
        if (!large && !idle) {
            continue;
        }
        lock.unlock();
        sqlite3* db = checkpointer_->handle();
        int rc = SQLITE_OK;
        if (large) {
            rc = sqlite3_wal_checkpoint_v2(db, "main", SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
        }
        if (rc == SQLITE_OK) {
            // Holding the store's write mutex, the RESTART (or TRUNCATE) never waits on the
            // writer's busy handler (which a busy writer would starve); it only finishes what
            // the passive pass left, so the writer waits briefly.
            wopbridge::lock_guard write_lock(write_mu_);
            rc = sqlite3_wal_checkpoint_v2(
                db, "main", large ? SQLITE_CHECKPOINT_RESTART : SQLITE_CHECKPOINT_TRUNCATE, nullptr,
                nullptr);
        }
        lock.lock();
        if (rc == SQLITE_OK) {
            checkpoints_.fetch_add(1);
            wal_pages_ = 0;
            wal_file_used_ = large; // a restarted WAL keeps its file size until truncated
        } else {
            // Busy or an I/O error (a full disk): try again at the next commit or idle tick.
            lock.wait_for(ckpt_cv_, 100ms, [&]() REQUIRES(ckpt_mu_) { return ckpt_stopping_; });
        }
    }
}

} // namespace wopbridge::sqlite_detail

namespace wopbridge {
namespace {

using namespace sqlite_detail;

bool is_memory_database(const std::string& path) {
    return path == ":memory:" || path.rfind("file::memory:", 0) == 0 ||
           (path.rfind("file:", 0) == 0 && path.find("mode=memory") != std::string::npos);
}

} // namespace

result<std::unique_ptr<store>, error_info> open_sqlite_store(const sqlite_options& opts) {
    if (opts.path.empty() || is_memory_database(opts.path)) {
        return error_info{errc::invalid_argument,
                          "an in-memory SQLite database is not durable; give a file"};
    }
    struct stat st {};
    if (!opts.init && ::stat(opts.path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        st.st_size == 0) {
        return error_info{errc::invalid_argument,
                          opts.path +
                              " is empty (0 bytes): the database that was here is gone, or its "
                              "creation never finished. Restore it from a backup; to start a "
                              "new, empty store in it, run serve once with --init"};
    }
    if (opts.check_integrity) {
        // Before SQLite opens the file: its recovery would drop what a damaged WAL frame hides.
        // A WAL that cannot be read is left to SQLite's open, which then reports it.
        auto damage = [&] {
            auto wal = sqlite::find_wal_damage(opts.path);
            return wal ? *wal : std::nullopt;
        };
        auto wal = damage();
        if (wal) {
            // Once more: a node writing this WAL right now may have been read mid-frame.
            wal = damage();
        }
        if (wal) {
            return error_info{
                errc::store_unavailable,
                opts.path + "-wal is damaged: " +
                    (wal->first_bad_frame == 0
                         ? std::string("its header fails its checksum")
                         : "frame " + std::to_string(wal->first_bad_frame) + " of " +
                               std::to_string(wal->frames) + " fails its checksum") +
                    ", and SQLite's recovery would discard the " +
                    std::to_string(wal->commits_after) +
                    " committed transaction(s) after it, events that were acknowledged. It "
                    "is not opened: restore the database from a backup. To accept that loss "
                    "(after a power cut the last of them may be one never acknowledged), let "
                    "SQLite recover the file with `sqlite3 " +
                    opts.path +
                    " 'PRAGMA quick_check'` and start again "
                    "(docs/guarantees/durable-intake.md)"};
        }
    }
    if (opts.path.rfind("file:", 0) != 0) {
        // A new store is created readable by its owner only, whatever the umask (the unit's
        // UMask does this under systemd; a shell's 022 would leave secrets' ciphertexts, dedup
        // keys and content world-readable). SQLite gives its -wal and -shm the same mode.
        const int fd = ::open(opts.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd >= 0) {
            ::close(fd);
        }
    }
    auto writer = sqlite::connection::open(opts.path, true, opts.busy_timeout_ms);
    if (!writer) {
        return writer.error();
    }
    if (opts.check_integrity) {
        auto report = sqlite::run_check(**writer, opts.startup_check, 1);
        if (!report.ok()) {
            return error_info{
                errc::store_unavailable,
                opts.path + " is damaged (" + sqlite::check_name(opts.startup_check) + ": " +
                    (report.error.empty() ? report.findings.front() : report.error) +
                    "). It is not served: restore it from a backup (or salvage rows with "
                    "`sqlite3 " +
                    opts.path + " .recover`); `wopbridge check-store` lists every finding"};
        }
        if (report.seconds >= 1.0) {
            log_line("info", "store.checked",
                     {{"check", sqlite::check_name(opts.startup_check)},
                      {"seconds", report.seconds}});
        }
    }
    if (auto r = sqlite::migrate(**writer); !r) {
        return r.error();
    }
    if (opts.max_page_count > 0) {
        // PRAGMA takes no parameters; the value is a number we format ourselves.
        std::string pragma = "PRAGMA max_page_count=" + std::to_string(opts.max_page_count);
        if (sqlite3_exec((*writer)->handle(), pragma.c_str(), nullptr, nullptr, nullptr) !=
            SQLITE_OK) {
            return error_info{errc::store_unavailable, "cannot set max_page_count"};
        }
    }
    auto reader = sqlite::connection::open(opts.path, false, opts.busy_timeout_ms);
    if (!reader) {
        return reader.error();
    }
    if (auto r = (*reader)->exec("PRAGMA query_only=1"); !r) {
        return error_info{errc_of(r.error()), "cannot configure the read connection"};
    }
    auto checkpointer = sqlite::connection::open(opts.path, false, opts.busy_timeout_ms);
    if (!checkpointer) {
        return checkpointer.error();
    }
    return std::unique_ptr<store>(std::make_unique<sqlite_store>(
        std::move(*writer), std::move(*reader), std::move(*checkpointer),
        opts.group_commit_max_batch, opts.checkpoint_pages,
        std::chrono::microseconds(opts.commit_window_us)));
}

} // namespace wopbridge
