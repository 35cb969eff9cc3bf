#pragma once
// A thin RAII layer over one libpq connection: parameterised statements (text format, one round
// trip each), result access, and the mapping of SQLSTATEs onto the bridge's errc. Not thread-safe:
// the owner hands a connection to one thread at a time.

#include "core/error.hpp"
#include "store/row_value.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

struct pg_conn;
struct pg_result;

namespace wopbridge::postgres {

// A statement parameter in text format; nullopt is SQL NULL.
using param = std::optional<std::string>;

inline param p(std::string_view s) {
    return std::string(s);
}
inline param p(const std::string& s) {
    return s;
}
inline param p(const char* s) {
    return std::string(s);
}
inline param p(std::int64_t v) {
    return std::to_string(v);
}
inline param p(int v) {
    return std::to_string(v);
}
inline param p(bool v) {
    return std::string(v ? "1" : "0");
}
// NULL when empty (optional columns).
inline param p_or_null(std::string_view s) {
    return s.empty() ? param{} : param{std::string(s)};
}
// A text[] / bigint[] literal for `= ANY($n::text[])` and unnest().
param text_array(const std::vector<std::string>& items);
param int_array(const std::vector<std::int64_t>& items);

class rows {
  public:
    explicit rows(pg_result* r) noexcept : r_(r) {}
    rows(rows&& o) noexcept : r_(o.r_) { o.r_ = nullptr; }
    rows& operator=(rows&& o) noexcept;
    rows(const rows&) = delete;
    rows& operator=(const rows&) = delete;
    ~rows();

    int size() const noexcept;
    bool empty() const noexcept { return size() == 0; }
    std::int64_t affected() const noexcept; // rows changed by INSERT/UPDATE/DELETE
    bool is_null(int row, int col) const noexcept;
    std::string text(int row, int col) const;
    std::int64_t int64(int row, int col) const noexcept;
    int integer(int row, int col) const noexcept { return static_cast<int>(int64(row, col)); }
    // Column `col` of every row, as text (an id list to pass on as a text[] parameter).
    std::vector<std::string> texts(int col) const;

  private:
    pg_result* r_;
};

// One row of a result, read by column like a SQLite statement's current row (so the shared row
// codec reads either).
class row_ref {
  public:
    row_ref(const rows& r, int row) noexcept : rows_(&r), row_(row) {}
    bool is_null(int col) const noexcept { return rows_->is_null(row_, col); }
    std::string text(int col) const { return rows_->text(row_, col); }
    std::int64_t int64(int col) const noexcept { return rows_->int64(row_, col); }
    int integer(int col) const noexcept { return rows_->integer(row_, col); }

  private:
    const rows* rows_;
    int row_;
};

// Every row of `r` as read by `read_row(row_ref)` (a T, or a result<T> whose error is the answer).
template <class ReadRow>
auto collect_rows(const rows& r, ReadRow&& read_row)
    -> result<std::vector<store_codec::row_value_t<ReadRow, row_ref>>> {
    using value = store_codec::row_value_t<ReadRow, row_ref>;
    std::vector<value> out;
    out.reserve(static_cast<std::size_t>(r.size()));
    for (int i = 0; i < r.size(); ++i) {
        if constexpr (std::is_same_v<store_codec::read_answer_t<ReadRow, row_ref>, value>) {
            out.push_back(read_row(row_ref(r, i)));
        } else {
            auto item = read_row(row_ref(r, i));
            if (!item) {
                return item.error();
            }
            out.push_back(std::move(*item));
        }
    }
    return out;
}

// Collects values into statement parameters in call order (the shared row codec's value lists);
// a nullopt text is NULL.
struct param_list {
    std::vector<param> params;
    void operator()(std::optional<std::string_view> text) {
        params.push_back(text ? p(*text) : param{});
    }
    template <class Value> void operator()(const Value& value) { params.push_back(p(value)); }
};

class connection {
  public:
    // On failure, store_unavailable with a reason that leaves out the URL (it may hold a
    // password).
    static result<std::unique_ptr<connection>, error_info> open(const std::string& url,
                                                                int connect_timeout_s);
    ~connection();
    connection(const connection&) = delete;
    connection& operator=(const connection&) = delete;

    // One statement with parameters ($1..$n), one round trip. SQL errors map onto errc:
    // unique violation -> already_exists, foreign key -> not_found, connection/read-only/
    // resource/serialization failures -> store_unavailable, data exceptions (not UTF-8, ...) ->
    // invalid_argument, anything else -> internal. Parameters are C strings (no NUL bytes).
    result<rows> exec(const char* sql, const std::vector<param>& params = {});
    // The same through a statement this connection prepared the first time it met `sql` (by
    // text): the server parses and plans it once, not on every call. For the hot, fixed
    // statements of intake, claims and settlements; past max_prepared distinct texts it falls
    // back to exec.
    result<rows> exec_prepared(const char* sql, const std::vector<param>& params);
    static constexpr std::size_t max_prepared = 64;
    // A statement whose result is not needed (BEGIN, COMMIT, ...).
    result<void> run(const char* sql, const std::vector<param>& params = {});

    bool healthy() const noexcept;        // the socket is believed to be usable
    bool in_transaction() const noexcept; // inside BEGIN (also when failed)
    // Reconnects when the connection is broken (or `force`); store_unavailable when that fails.
    result<void> ensure(bool force);
    std::string last_error() const; // server message (no URL, no parameters)
    std::string last_sqlstate() const { return sqlstate_; }
    std::uint64_t round_trips() const noexcept { return round_trips_; }

    // LISTEN support: waits up to `timeout_ms` for the socket to become readable, reads what the
    // server sent, and returns the payloads of the notifications received (possibly none).
    // store_unavailable when the connection broke.
    result<std::vector<std::string>> wait_for_notifications(int timeout_ms);

  private:
    connection(pg_conn* c) noexcept : conn_(c) {}
    result<void> configure();
    result<rows> finish(pg_result* r);

    pg_conn* conn_;
    std::unordered_map<std::string, std::string> prepared_; // SQL text -> statement name
    std::string sqlstate_;
    std::uint64_t round_trips_ = 0;
};

errc map_sqlstate(std::string_view sqlstate) noexcept;

} // namespace wopbridge::postgres
