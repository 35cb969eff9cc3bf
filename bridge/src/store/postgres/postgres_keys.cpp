// PostgreSQL store: the host-key binding and the wrapped data keys.
#include "store/postgres/postgres_store_impl.hpp"

namespace wopbridge::postgres_detail {

result<std::string> postgres_store::bind_host_key_check(const std::string& check,
                                                        const std::string& wrapped_data_key) {
    return write([&](connection& c) -> result<std::string> {
        // Two nodes binding at once: the primary key lets one insert win, its wrap is written
        // by the same statement, and both read the winner. (The loser's statement snapshot can
        // predate the winner's commit: it may read "", and its caller reads again.)
        auto r =
            c.exec("WITH ins AS (INSERT INTO store_meta (name, value) "
                   "VALUES ('host_key_check', $1) ON CONFLICT (name) DO NOTHING "
                   "RETURNING value), "
                   "wrap AS (INSERT INTO store_meta (name, value) "
                   "SELECT $2, $3 WHERE EXISTS (SELECT 1 FROM ins) "
                   "ON CONFLICT (name) DO NOTHING) "
                   "SELECT value FROM ins UNION ALL "
                   "SELECT value FROM store_meta WHERE name = 'host_key_check'",
                   {p(check), p(std::string(data_key_wrap_prefix) + check), p(wrapped_data_key)});
        if (!r) {
            return r.error();
        }
        return r->empty() ? std::string() : r->text(0, 0);
    });
}

result<bool> postgres_store::has_keyed_rows() {
    return read([&](connection& c) -> result<bool> {
        auto r = c.exec("SELECT EXISTS (SELECT 1 FROM subscriptions) OR "
                        "EXISTS (SELECT 1 FROM dedup) OR "
                        "EXISTS (SELECT 1 FROM outbound_webhooks)",
                        {});
        if (!r) {
            return result<bool>(boost::system::in_place_error, r.error());
        }
        return r->text(0, 0) == "t";
    });
}

result<std::map<std::string, std::string>> postgres_store::data_key_wraps() {
    return read([&](connection& c) -> result<std::map<std::string, std::string>> {
        auto r = c.exec("SELECT name, value FROM store_meta WHERE starts_with(name, $1)",
                        {p(data_key_wrap_prefix)});
        if (!r) {
            return r.error();
        }
        std::map<std::string, std::string> out;
        for (int i = 0; i < r->size(); ++i) {
            out.emplace(r->text(i, 0).substr(data_key_wrap_prefix.size()), r->text(i, 1));
        }
        return out;
    });
}

result<void> postgres_store::add_data_key_wrap(const std::string& check,
                                               const std::string& wrapped) {
    return write([&](connection& c) -> result<void> {
        auto r = c.exec("INSERT INTO store_meta (name, value) VALUES ($1, $2) "
                        "ON CONFLICT (name) DO NOTHING",
                        {p(std::string(data_key_wrap_prefix) + check), p(wrapped)});
        if (!r) {
            return r.error();
        }
        return {};
    });
}

result<int> postgres_store::retire_data_key_wraps(const std::string& keep_check) {
    const std::string keep = std::string(data_key_wrap_prefix) + keep_check;
    return transaction([&](connection& c) -> result<int> {
        // The kept wrap is locked first: a concurrent retire of that very key waits.
        auto has = c.exec("SELECT 1 FROM store_meta WHERE name = $1 FOR UPDATE", {p(keep)});
        if (!has) {
            return has.error();
        }
        if (has->empty()) {
            return make_error_code(errc::not_found);
        }
        auto drop = c.exec("WITH d AS (DELETE FROM store_meta WHERE starts_with(name, $1) "
                           "AND name <> $2 RETURNING 1) SELECT COUNT(*) FROM d",
                           {p(data_key_wrap_prefix), p(keep)});
        if (!drop) {
            return drop.error();
        }
        auto bind = c.exec("INSERT INTO store_meta (name, value) VALUES ('host_key_check', $1) "
                           "ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value",
                           {p(keep_check)});
        if (!bind) {
            return bind.error();
        }
        return static_cast<int>(drop->int64(0, 0));
    });
}

result<std::string> postgres_store::host_key_check() {
    return read([&](connection& c) -> result<std::string> {
        auto r = c.exec("SELECT value FROM store_meta WHERE name = 'host_key_check'", {});
        if (!r) {
            return r.error();
        }
        return r->empty() ? std::string() : r->text(0, 0);
    });
}

} // namespace wopbridge::postgres_detail
