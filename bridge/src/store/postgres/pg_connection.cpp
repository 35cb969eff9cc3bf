#include "store/postgres/pg_connection.hpp"

#include <libpq-fe.h>

#include <cerrno>
#include <cstdlib>

#include <poll.h>

namespace wopbridge::postgres {
namespace {

void append_array_item(std::string& out, std::string_view item) {
    out.push_back('"');
    for (char c : item) {
        if (c == '"' || c == '\\') {
            out.push_back('\\');
        }
        out.push_back(c);
    }
    out.push_back('"');
}

} // namespace

param text_array(const std::vector<std::string>& items) {
    std::string out = "{";
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (i > 0) {
            out.push_back(',');
        }
        append_array_item(out, items[i]);
    }
    out.push_back('}');
    return out;
}

param int_array(const std::vector<std::int64_t>& items) {
    std::string out = "{";
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (i > 0) {
            out.push_back(',');
        }
        out += std::to_string(items[i]);
    }
    out.push_back('}');
    return out;
}

errc map_sqlstate(std::string_view s) noexcept {
    if (s == "23505") {
        return errc::already_exists;
    }
    if (s == "23503") {
        return errc::not_found;
    }
    if (s.size() != 5) {
        return errc::store_unavailable; // no SQLSTATE: the connection failed
    }
    const std::string_view cls = s.substr(0, 2);
    // 08 connection, 53 resources (disk full), 57 operator intervention (shutdown), 58 system I/O,
    // 40 serialization/deadlock, 25006 read-only transaction, 55P03 lock not available.
    if (cls == "08" || cls == "53" || cls == "57" || cls == "58" || cls == "40" || s == "25006" ||
        s == "55P03" || cls == "XX") {
        return errc::store_unavailable;
    }
    // 22: data exceptions, e.g. a byte sequence that is not UTF-8 in a TEXT parameter.
    if (cls == "22") {
        return errc::invalid_argument;
    }
    return errc::internal;
}

rows& rows::operator=(rows&& o) noexcept {
    if (this != &o) {
        if (r_ != nullptr) {
            PQclear(r_);
        }
        r_ = o.r_;
        o.r_ = nullptr;
    }
    return *this;
}

rows::~rows() {
    if (r_ != nullptr) {
        PQclear(r_);
    }
}

int rows::size() const noexcept {
    return r_ == nullptr ? 0 : PQntuples(r_);
}

std::int64_t rows::affected() const noexcept {
    if (r_ == nullptr) {
        return 0;
    }
    const char* n = PQcmdTuples(r_);
    return (n == nullptr || *n == '\0') ? 0 : std::strtoll(n, nullptr, 10);
}

bool rows::is_null(int row, int col) const noexcept {
    return PQgetisnull(r_, row, col) != 0;
}

std::string rows::text(int row, int col) const {
    return std::string(PQgetvalue(r_, row, col),
                       static_cast<std::size_t>(PQgetlength(r_, row, col)));
}

std::vector<std::string> rows::texts(int col) const {
    std::vector<std::string> out;
    out.reserve(static_cast<std::size_t>(size()));
    for (int i = 0; i < size(); ++i) {
        out.push_back(text(i, col));
    }
    return out;
}

std::int64_t rows::int64(int row, int col) const noexcept {
    return std::strtoll(PQgetvalue(r_, row, col), nullptr, 10);
}

result<std::unique_ptr<connection>, error_info> connection::open(const std::string& url,
                                                                 int connect_timeout_s) {
    // connect_timeout comes first so that a value in the URL wins; the URL expands in place.
    const std::string timeout = std::to_string(connect_timeout_s > 0 ? connect_timeout_s : 5);
    const char* keys[] = {"connect_timeout", "dbname", "application_name", nullptr};
    const char* values[] = {timeout.c_str(), url.c_str(), "wopbridge", nullptr};
    PGconn* c = PQconnectdbParams(keys, values, 1);
    if (c == nullptr) {
        return error_info{errc::store_unavailable,
                          "out of memory creating a PostgreSQL connection"};
    }
    std::unique_ptr<connection> conn(new connection(c));
    // Server NOTICEs (e.g. "already exists, skipping") are not ours to print on stderr.
    PQsetNoticeProcessor(
        c, [](void*, const char*) {}, nullptr);
    if (PQstatus(c) != CONNECTION_OK) {
        return error_info{errc::store_unavailable,
                          "cannot connect to PostgreSQL: " + conn->last_error()};
    }
    if (auto r = conn->configure(); !r) {
        return error_info{errc::store_unavailable,
                          "cannot configure the PostgreSQL session: " + conn->last_error()};
    }
    return conn;
}

connection::~connection() {
    PQfinish(conn_);
}

result<void> connection::configure() {
    // A commit returns only once its WAL is flushed (whatever the server default says), and
    // statements see rows committed by other nodes as soon as they start.
    return run("SET synchronous_commit = on; "
               "SET default_transaction_isolation = 'read committed'; SET TIME ZONE 'UTC'");
}

result<rows> connection::exec(const char* sql, const std::vector<param>& params) {
    std::vector<const char*> values;
    values.reserve(params.size());
    for (const auto& v : params) {
        values.push_back(v ? v->c_str() : nullptr);
    }
    ++round_trips_;
    sqlstate_.clear();
    return finish(params.empty() ? PQexec(conn_, sql)
                                 : PQexecParams(conn_, sql, static_cast<int>(values.size()),
                                                nullptr, values.data(), nullptr, nullptr, 0));
}

result<rows> connection::exec_prepared(const char* sql, const std::vector<param>& params) {
    auto it = prepared_.find(sql);
    if (it == prepared_.end()) {
        if (prepared_.size() >= max_prepared) {
            return exec(sql, params);
        }
        std::string name = "wb" + std::to_string(prepared_.size());
        ++round_trips_;
        sqlstate_.clear();
        // Parameter types are left to the server, as with exec.
        auto made = finish(PQprepare(conn_, name.c_str(), sql, static_cast<int>(params.size()),
                                     nullptr));
        if (!made) {
            return made.error();
        }
        it = prepared_.emplace(sql, std::move(name)).first;
    }
    std::vector<const char*> values;
    values.reserve(params.size());
    for (const auto& v : params) {
        values.push_back(v ? v->c_str() : nullptr);
    }
    ++round_trips_;
    sqlstate_.clear();
    return finish(PQexecPrepared(conn_, it->second.c_str(), static_cast<int>(values.size()),
                                 values.data(), nullptr, nullptr, 0));
}

result<rows> connection::finish(PGresult* r) {
    rows out(r);
    const auto status = r == nullptr ? PGRES_FATAL_ERROR : PQresultStatus(r);
    if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) {
        return out;
    }
    const char* state = r == nullptr ? nullptr : PQresultErrorField(r, PG_DIAG_SQLSTATE);
    sqlstate_ = state == nullptr ? "" : state;
    if (PQstatus(conn_) != CONNECTION_OK) {
        return errc::store_unavailable;
    }
    return map_sqlstate(sqlstate_);
}

result<void> connection::run(const char* sql, const std::vector<param>& params) {
    auto r = exec(sql, params);
    if (!r) {
        return r.error();
    }
    return {};
}

bool connection::healthy() const noexcept {
    return PQstatus(conn_) == CONNECTION_OK;
}

bool connection::in_transaction() const noexcept {
    const auto s = PQtransactionStatus(conn_);
    return s == PQTRANS_INTRANS || s == PQTRANS_INERROR || s == PQTRANS_ACTIVE;
}

result<void> connection::ensure(bool force) {
    if (!force && healthy()) {
        return {};
    }
    PQreset(conn_);
    prepared_.clear(); // a new session has none of them
    if (!healthy()) {
        return errc::store_unavailable;
    }
    return configure();
}

result<std::vector<std::string>> connection::wait_for_notifications(int timeout_ms) {
    std::vector<std::string> out;
    const int fd = PQsocket(conn_);
    if (fd < 0 || !healthy()) {
        return errc::store_unavailable;
    }
    pollfd pfd{fd, POLLIN, 0};
    const int ready = ::poll(&pfd, 1, timeout_ms);
    if (ready < 0 && errno != EINTR) {
        return errc::store_unavailable;
    }
    if (ready > 0) {
        if (PQconsumeInput(conn_) == 0 || !healthy()) {
            return errc::store_unavailable;
        }
    }
    while (PGnotify* n = PQnotifies(conn_)) {
        out.emplace_back(n->extra != nullptr ? n->extra : "");
        PQfreemem(n);
    }
    return out;
}

std::string connection::last_error() const {
    std::string msg = PQerrorMessage(conn_);
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) {
        msg.pop_back();
    }
    return msg;
}

} // namespace wopbridge::postgres
