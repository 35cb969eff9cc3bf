#pragma once
// A thin RAII layer over one sqlite3 connection: prepared statements cached by SQL text (bounded,
// finalised on close), typed binds and
// columns, and the mapping of SQLite result codes onto the bridge's errc. Not thread-safe: the
// owner serializes use of a connection with its own mutex.

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/thread_annotations.hpp"
#include "store/row_value.hpp"

#include <sqlite3.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace wopbridge::sqlite {

// SQLite (extended) result code -> the bridge's error code.
errc map_result_code(int rc) noexcept;

class connection;

// The first corruption any of a store's connections met, kept for the store's damage(). Shared
// by the store's connections; written from whichever thread's statement met it.
class damage_watch {
  public:
    void note(int result_code, const char* message) EXCLUDES(mu_);
    bool seen() const noexcept { return seen_.load(std::memory_order_acquire); }
    std::string first() const EXCLUDES(mu_);

  private:
    std::atomic<bool> seen_{false};
    mutable wopbridge::mutex mu_;
    std::string first_ GUARDED_BY(mu_);
};

// A borrowed cached statement; reset (and its bindings cleared) when this handle goes away, so no
// read transaction outlives a call.
class statement {
  public:
    // `owned`: not in the connection's cache (it was full), so finalised here instead of reset.
    statement(connection& conn, sqlite3_stmt* stmt, int prepare_rc, bool owned = false) noexcept
        : conn_(&conn), stmt_(stmt), prepare_rc_(prepare_rc), owned_(owned) {}
    statement(const statement&) = delete;
    statement& operator=(const statement&) = delete;
    ~statement();

    statement& bind(int index, std::string_view text);
    statement& bind(int index, std::int64_t value);
    statement& bind(int index, int value) { return bind(index, static_cast<std::int64_t>(value)); }
    statement& bind(int index, bool value) { return bind(index, static_cast<std::int64_t>(value)); }
    statement& bind_null(int index);
    // Binds text, or NULL when empty (optional columns).
    statement& bind_or_null(int index, std::string_view text);

    // true: a row is available; false: done.
    result<bool> step();
    // Runs to completion, expecting no rows.
    result<void> run();

    std::int64_t int64(int col) const { return sqlite3_column_int64(stmt_, col); }
    int integer(int col) const { return sqlite3_column_int(stmt_, col); }
    std::string text(int col) const;
    bool is_null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }

  private:
    connection* conn_;
    sqlite3_stmt* stmt_;
    int prepare_rc_;
    bool owned_;
    int bind_rc_ = SQLITE_OK;
};

// Binds the values it is called with to ?1, ?2, ... in call order (the shared row codec's value
// lists); a nullopt text binds NULL.
class positional_binder {
  public:
    explicit positional_binder(statement& st) noexcept : st_(st) {}
    void operator()(std::optional<std::string_view> text) {
        ++index_;
        text ? st_.bind(index_, *text) : st_.bind_null(index_);
    }
    template <class Value> void operator()(const Value& value) { st_.bind(++index_, value); }

  private:
    statement& st_;
    int index_ = 0;
};

// Steps `st` through its rows, calling `on_row(st)` at each one; a failed step is the answer.
// `on_row` returns void (go on), bool (false: stop before stepping again), result<void> (an error
// stops and is the answer) or result<bool> (both).
template <class OnRow> result<void> each_row(statement& st, OnRow&& on_row) {
    using answer = std::invoke_result_t<OnRow&, statement&>;
    for (;;) {
        auto row = st.step();
        if (!row) {
            return row.error();
        }
        if (!*row) {
            return {};
        }
        if constexpr (std::is_void_v<answer>) {
            on_row(st);
        } else if constexpr (std::is_same_v<answer, bool>) {
            if (!on_row(st)) {
                return {};
            }
        } else if constexpr (std::is_same_v<answer, result<void>>) {
            if (auto r = on_row(st); !r) {
                return r.error();
            }
        } else {
            static_assert(std::is_same_v<answer, result<bool>>,
                          "on_row returns void, bool, result<void> or result<bool>");
            auto r = on_row(st);
            if (!r) {
                return r.error();
            }
            if (!*r) {
                return {};
            }
        }
    }
}

// Every row of `st` as read by `read_row(st)` (a T, or a result<T> whose error is the answer).
template <class ReadRow>
auto collect_rows(statement& st, ReadRow&& read_row)
    -> result<std::vector<store_codec::row_value_t<ReadRow, statement&>>> {
    using value = store_codec::row_value_t<ReadRow, statement&>;
    std::vector<value> out;
    auto done = each_row(st, [&](statement& row) -> result<void> {
        if constexpr (std::is_same_v<store_codec::read_answer_t<ReadRow, statement&>, value>) {
            out.push_back(read_row(row));
        } else {
            auto item = read_row(row);
            if (!item) {
                return item.error();
            }
            out.push_back(std::move(*item));
        }
        return {};
    });
    if (!done) {
        return done.error();
    }
    return out;
}

// The one row a lookup by key finds, read by `read_row` (a T or a result<T>); not_found when
// there is none.
template <class ReadRow>
auto read_found_row(statement& st, ReadRow&& read_row)
    -> result<store_codec::row_value_t<ReadRow, statement&>> {
    auto row = st.step();
    if (!row) {
        return row.error();
    }
    if (!*row) {
        return errc::not_found;
    }
    return read_row(st);
}

// The first column of the first row (a MIN or MAX, say); nullopt when NULL or there is no row.
inline result<std::optional<std::int64_t>> optional_int64(statement& st) {
    auto row = st.step();
    if (!row) {
        return row.error();
    }
    if (!*row || st.is_null(0)) {
        return std::optional<std::int64_t>{};
    }
    return std::optional<std::int64_t>{st.int64(0)};
}

class connection {
  public:
    // Opens (creating when `create`) with WAL, synchronous=FULL, foreign keys and the busy timeout.
    // On failure, store_unavailable (or the failing statement's code) and SQLite's reason.
    static result<std::unique_ptr<connection>, error_info>
    open(const std::string& path, bool create, millis busy_timeout_ms);
    ~connection();
    connection(const connection&) = delete;
    connection& operator=(const connection&) = delete;

    // Statements kept prepared per connection; beyond this, statements are prepared per call.
    static constexpr std::size_t max_cached_statements = 128;

    // One or more statements without parameters or results. A single statement (BEGIN, COMMIT,
    // SAVEPOINT...) goes through the statement cache; several are run by sqlite3_exec.
    result<void> exec(const char* sql);
    // Cached by the SQL text (the pointer need not outlive the call).
    statement prepare(const char* sql);

    // Number of rows the last INSERT/UPDATE/DELETE changed.
    std::int64_t changes() const noexcept { return sqlite3_changes64(db_); }
    bool in_transaction() const noexcept { return sqlite3_get_autocommit(db_) == 0; }
    // Last SQLite error text (SQL-level, never bound values).
    std::string last_error() const { return sqlite3_errmsg(db_); }
    sqlite3* handle() noexcept { return db_; }
    // Where this connection reports corruption it meets (nullptr: nowhere).
    void watch_damage(damage_watch* watch) noexcept { watch_ = watch; }
    // Reports `rc` to the damage watch when it says the file is damaged; returns it.
    int note_result(int rc) noexcept;

  private:
    // Lookups by string_view without building a std::string.
    struct text_hash {
        using is_transparent = void;
        std::size_t operator()(std::string_view s) const noexcept {
            return std::hash<std::string_view>{}(s);
        }
    };

    explicit connection(sqlite3* db) : db_(db) {}
    sqlite3* db_;
    damage_watch* watch_ = nullptr;
    std::unordered_map<std::string, sqlite3_stmt*, text_hash, std::equal_to<>> cache_;
};

} // namespace wopbridge::sqlite
