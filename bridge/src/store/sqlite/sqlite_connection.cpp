#include "store/sqlite/sqlite_connection.hpp"

namespace wopbridge::sqlite {

errc map_result_code(int rc) noexcept {
    switch (rc) {
    case SQLITE_CONSTRAINT_PRIMARYKEY:
    case SQLITE_CONSTRAINT_UNIQUE:
        return errc::already_exists;
    case SQLITE_CONSTRAINT_FOREIGNKEY:
        return errc::not_found;
    default:
        break;
    }
    switch (rc & 0xff) {
    case SQLITE_CONSTRAINT:
        return errc::invalid_argument;
    case SQLITE_FULL:
    case SQLITE_READONLY:
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_PERM:
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
    case SQLITE_NOMEM:
    case SQLITE_PROTOCOL:
        return errc::store_unavailable;
    default:
        return errc::internal;
    }
}

void damage_watch::note(int result_code, const char* message) {
    wopbridge::lock_guard lock(mu_);
    if (seen_.load(std::memory_order_relaxed)) {
        return;
    }
    const std::string generic = sqlite3_errstr(result_code);
    first_ = message != nullptr ? message : generic;
    if (first_ != generic) {
        first_ += " (" + generic + ")";
    }
    seen_.store(true, std::memory_order_release);
}

std::string damage_watch::first() const {
    wopbridge::lock_guard lock(mu_);
    return first_;
}

int connection::note_result(int rc) noexcept {
    const int primary = rc & 0xff;
    if (watch_ != nullptr && (primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB)) {
        try {
            watch_->note(rc, sqlite3_errmsg(db_));
        } catch (...) { // allocation failure: the code still says unavailable
        }
    }
    return rc;
}

statement::~statement() {
    if (stmt_ == nullptr) {
        return;
    }
    if (owned_) {
        sqlite3_finalize(stmt_);
        return;
    }
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
}

statement& statement::bind(int index, std::string_view text) {
    if (stmt_ != nullptr && bind_rc_ == SQLITE_OK) {
        bind_rc_ = sqlite3_bind_text64(stmt_, index, text.data(), text.size(), SQLITE_TRANSIENT,
                                       SQLITE_UTF8);
    }
    return *this;
}

statement& statement::bind(int index, std::int64_t value) {
    if (stmt_ != nullptr && bind_rc_ == SQLITE_OK) {
        bind_rc_ = sqlite3_bind_int64(stmt_, index, value);
    }
    return *this;
}

statement& statement::bind_null(int index) {
    if (stmt_ != nullptr && bind_rc_ == SQLITE_OK) {
        bind_rc_ = sqlite3_bind_null(stmt_, index);
    }
    return *this;
}

statement& statement::bind_or_null(int index, std::string_view text) {
    return text.empty() ? bind_null(index) : bind(index, text);
}

result<bool> statement::step() {
    if (stmt_ == nullptr) {
        return map_result_code(
            prepare_rc_ == SQLITE_OK ? SQLITE_ERROR : conn_->note_result(prepare_rc_));
    }
    if (bind_rc_ != SQLITE_OK) {
        return map_result_code(bind_rc_);
    }
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) {
        return true;
    }
    if (rc == SQLITE_DONE) {
        return false;
    }
    return map_result_code(conn_->note_result(sqlite3_extended_errcode(conn_->handle())));
}

result<void> statement::run() {
    return each_row(*this, [](const statement&) {});
}

std::string statement::text(int col) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
    if (p == nullptr) {
        return {};
    }
    return std::string(p, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, col)));
}

result<std::unique_ptr<connection>, error_info>
connection::open(const std::string& path, bool create, millis busy_timeout_ms) {
    sqlite3* db = nullptr;
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX;
    if (create) {
        flags |= SQLITE_OPEN_CREATE;
    }
    int rc = sqlite3_open_v2(path.c_str(), &db, flags, nullptr);
    if (rc != SQLITE_OK) {
        error_info e{errc::store_unavailable, "cannot open database: "};
        e.message += db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
        sqlite3_close_v2(db);
        return e;
    }
    std::unique_ptr<connection> conn(new connection(db));
    sqlite3_extended_result_codes(db, 1);
    sqlite3_busy_timeout(db, static_cast<int>(busy_timeout_ms));

    // journal_mode answers the mode in effect; anything but "wal" means we could not switch.
    {
        auto st = conn->prepare("PRAGMA journal_mode=WAL");
        auto r = st.step();
        if (!r || !*r || st.text(0) != "wal") {
            return error_info{errc::store_unavailable,
                              "cannot enable WAL journal mode: " + conn->last_error()};
        }
    }
    // FULL: the WAL is fsynced at every commit, so a committed intake survives power loss.
    // cache_size: up to 32 MiB of pages per connection (the default 2 MiB made every intake and
    // record re-read index pages from the OS: pread was ~10 % of the serve process's profile).
    if (auto r = conn->exec("PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON; "
                            "PRAGMA cache_size=-32768;");
        !r) {
        return error_info{errc_of(r.error()), "cannot configure connection: " + conn->last_error()};
    }
    return conn;
}

connection::~connection() {
    for (auto& [sql, stmt] : cache_) {
        sqlite3_finalize(stmt);
    }
    sqlite3_close_v2(db_);
}

result<void> connection::exec(const char* sql) {
    const std::string_view text(sql);
    if (cache_.find(text) == cache_.end()) {
        // Only a single statement is cached; a script (migrations, pragmas) runs as before.
        sqlite3_stmt* stmt = nullptr;
        const char* tail = nullptr;
        int rc = sqlite3_prepare_v3(db_, sql, -1, 0, &stmt, &tail);
        const bool single =
            rc == SQLITE_OK && stmt != nullptr && tail != nullptr &&
            std::string_view(tail).find_first_not_of(" \t\r\n;") == std::string_view::npos;
        sqlite3_finalize(stmt);
        if (!single) {
            rc = sqlite3_exec(db_, sql, nullptr, nullptr, nullptr);
            if (rc != SQLITE_OK) {
                return map_result_code(note_result(sqlite3_extended_errcode(db_)));
            }
            return {};
        }
    }
    return prepare(sql).run();
}

statement connection::prepare(const char* sql) {
    const std::string_view text(sql);
    if (auto it = cache_.find(text); it != cache_.end()) {
        return statement(*this, it->second, SQLITE_OK);
    }
    const bool cache = cache_.size() < max_cached_statements;
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v3(db_, text.data(), static_cast<int>(text.size()),
                                cache ? SQLITE_PREPARE_PERSISTENT : 0, &stmt, nullptr);
    if (rc != SQLITE_OK || stmt == nullptr) {
        sqlite3_finalize(stmt);
        return statement(*this, nullptr, rc == SQLITE_OK ? SQLITE_ERROR : rc);
    }
    if (!cache) {
        return statement(*this, stmt, SQLITE_OK, true);
    }
    cache_.emplace(text, stmt);
    return statement(*this, stmt, SQLITE_OK);
}

} // namespace wopbridge::sqlite
