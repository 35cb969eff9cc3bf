// SQLite store: the host-key binding and the wrapped data keys.
#include "store/sqlite/sqlite_store_impl.hpp"

namespace wopbridge::sqlite_detail {

result<std::string> sqlite_store::bind_host_key_check(const std::string& check,
                                                      const std::string& wrapped_data_key) {
    return write_transaction([&]() REQUIRES(write_mu_) -> result<std::string> {
        auto ins =
            writer_->prepare("INSERT INTO store_meta (name, value) VALUES ('host_key_check', ?1) "
                             "ON CONFLICT (name) DO NOTHING");
        ins.bind(1, check);
        WB_TRY(ins.run());
        if (writer_->changes() > 0) {
            auto wrap = writer_->prepare("INSERT INTO store_meta (name, value) VALUES (?1, ?2) "
                                         "ON CONFLICT (name) DO NOTHING");
            wrap.bind(1, std::string(data_key_wrap_prefix) + check);
            wrap.bind(2, wrapped_data_key);
            WB_TRY(wrap.run());
        }
        auto st = writer_->prepare("SELECT value FROM store_meta WHERE name = 'host_key_check'");
        auto row = st.step();
        if (!row) {
            return row.error();
        }
        return *row ? st.text(0) : std::string();
    });
}

result<bool> sqlite_store::has_keyed_rows() {
    auto any = read_transaction([&]() REQUIRES(read_mu_) -> result<std::int64_t> {
        auto st = reader_->prepare("SELECT EXISTS (SELECT 1 FROM subscriptions) OR "
                                   "EXISTS (SELECT 1 FROM deliveries WHERE dedup_expires_at IS NOT NULL) OR "
                                   "EXISTS (SELECT 1 FROM outbound_webhooks)");
        auto row = st.step();
        if (!row) {
            return row.error();
        }
        return *row ? st.int64(0) : 0;
    });
    if (!any) {
        return result<bool>(boost::system::in_place_error, any.error());
    }
    return *any != 0;
}

result<std::map<std::string, std::string>> sqlite_store::data_key_wraps() {
    return read_transaction([&]() REQUIRES(read_mu_) -> result<std::map<std::string, std::string>> {
        auto st =
            reader_->prepare("SELECT name, value FROM store_meta WHERE substr(name, 1, ?1) = ?2");
        st.bind(1, static_cast<std::int64_t>(data_key_wrap_prefix.size()));
        st.bind(2, std::string(data_key_wrap_prefix));
        std::map<std::string, std::string> out;
        WB_TRY(each_row(st, [&](const statement& row) {
            out.emplace(row.text(0).substr(data_key_wrap_prefix.size()), row.text(1));
        }));
        return out;
    });
}

result<void> sqlite_store::add_data_key_wrap(const std::string& check, const std::string& wrapped) {
    return write_transaction([&]() REQUIRES(write_mu_) -> result<void> {
        auto ins = writer_->prepare("INSERT INTO store_meta (name, value) VALUES (?1, ?2) "
                                    "ON CONFLICT (name) DO NOTHING");
        ins.bind(1, std::string(data_key_wrap_prefix) + check);
        ins.bind(2, wrapped);
        WB_TRY(ins.run());
        return {};
    });
}

result<int> sqlite_store::retire_data_key_wraps(const std::string& keep_check) {
    return write_transaction([&]() REQUIRES(write_mu_) -> result<int> {
        const std::string keep = std::string(data_key_wrap_prefix) + keep_check;
        auto has = writer_->prepare("SELECT 1 FROM store_meta WHERE name = ?1");
        has.bind(1, keep);
        auto row = has.step();
        if (!row) {
            return row.error();
        }
        if (!*row) {
            return make_error_code(errc::not_found);
        }
        auto drop = writer_->prepare(
            "DELETE FROM store_meta WHERE substr(name, 1, ?1) = ?2 AND name <> ?3");
        drop.bind(1, static_cast<std::int64_t>(data_key_wrap_prefix.size()));
        drop.bind(2, std::string(data_key_wrap_prefix));
        drop.bind(3, keep);
        WB_TRY(drop.run());
        const auto dropped = static_cast<int>(writer_->changes());
        auto bind = writer_->prepare(
            "INSERT OR REPLACE INTO store_meta (name, value) VALUES ('host_key_check', ?1)");
        bind.bind(1, keep_check);
        WB_TRY(bind.run());
        return dropped;
    });
}

result<std::string> sqlite_store::host_key_check() {
    return read_transaction([&]() REQUIRES(read_mu_) -> result<std::string> {
        auto st = reader_->prepare("SELECT value FROM store_meta WHERE name = 'host_key_check'");
        auto row = st.step();
        if (!row) {
            return row.error();
        }
        return *row ? st.text(0) : std::string();
    });
}

} // namespace wopbridge::sqlite_detail
