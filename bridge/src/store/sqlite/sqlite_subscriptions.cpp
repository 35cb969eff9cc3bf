// SQLite store: the subscription role, and the cache of subscription rows.
#include "store/sqlite/sqlite_store_impl.hpp"

namespace wopbridge::sqlite_detail {

result<void> sqlite_store::insert_subscription(const subscription& s) {
    const subscription_forget forget{*this, s.id};
    return write_transaction([&]() REQUIRES(write_mu_) -> result<void> {
        auto st = writer_->prepare("INSERT INTO subscriptions (" WB_SUB_COLS
                                   ") VALUES (" WB_SQLITE_SUB_PARAMS ")");
        bind_subscription(st, s);
        return st.run();
    });
}

result<void> sqlite_store::upsert_config_subscription(const subscription& s) {
    const subscription_forget forget{*this, s.id};
    return write_transaction([&]() REQUIRES(write_mu_) -> result<void> {
        auto st = writer_->prepare("INSERT INTO subscriptions (" WB_SUB_COLS
                                   ") VALUES (" WB_SQLITE_SUB_PARAMS ") " WB_SUB_CONFIG_UPSERT);
        bind_subscription(st, s);
        return st.run();
    });
}

result<subscription> sqlite_store::get_subscription(const std::string& id) {
    std::uint64_t generation = 0;
    {
        wopbridge::lock_guard lock(subs_mu_);
        if (auto it = subs_cache_.find(id); it != subs_cache_.end()) {
            return it->second;
        }
        generation = subs_generation_;
    }
    auto found = read_subscription_row(id);
    if (found) {
        wopbridge::lock_guard lock(subs_mu_);
        // A write that ran while we read may have changed the row: keep nothing then.
        if (subs_generation_ == generation) {
            if (subs_cache_.size() >= max_cached_subscriptions) {
                subs_cache_.clear();
            }
            subs_cache_.emplace(id, *found);
        }
    }
    return found;
}

result<subscription> sqlite_store::read_subscription_row(const std::string& id) {
    return read_transaction([&]() REQUIRES(read_mu_) -> result<subscription> {
        auto st = reader_->prepare("SELECT " WB_SUB_COLS " FROM subscriptions WHERE id = ?1");
        st.bind(1, id);
        return read_found_row(st, read_subscription);
    });
}

result<std::vector<subscription>> sqlite_store::list_subscriptions(const std::string& tenant) {
    return read_transaction([&]() REQUIRES(read_mu_) -> result<std::vector<subscription>> {
        auto st = reader_->prepare("SELECT " WB_SUB_COLS
                                   " FROM subscriptions WHERE tenant = ?1 ORDER BY id");
        st.bind(1, tenant);
        return collect_subscriptions(st);
    });
}

result<std::vector<subscription>> sqlite_store::list_all_subscriptions() {
    return read_transaction([&]() REQUIRES(read_mu_) -> result<std::vector<subscription>> {
        auto st = reader_->prepare("SELECT " WB_SUB_COLS " FROM subscriptions ORDER BY id");
        return collect_subscriptions(st);
    });
}

result<void> sqlite_store::delete_subscription(const std::string& id) {
    const subscription_forget forget{*this, id};
    return write_transaction([&]() REQUIRES(write_mu_) -> result<void> {
        auto st = writer_->prepare("DELETE FROM subscriptions WHERE id = ?1");
        st.bind(1, id);
        WB_TRY(st.run());
        if (writer_->changes() == 0) {
            return errc::not_found;
        }
        return {};
    });
}

result<bool> sqlite_store::replace_connector_settings(const std::string& id,
                                                      const std::string& expected,
                                                      const std::string& replacement) {
    const subscription_forget forget{*this, id};
    bool replaced = false;
    auto r = write_transaction([&]() REQUIRES(write_mu_) -> result<void> {
        auto st = writer_->prepare("UPDATE subscriptions SET connector_settings_json = ?3 "
                                   "WHERE id = ?1 AND connector_settings_json = ?2");
        st.bind(1, id).bind(2, expected).bind(3, replacement);
        WB_TRY(st.run());
        replaced = writer_->changes() == 1;
        return {};
    });
    if (!r) {
        return result<bool>(boost::system::in_place_error, r.error());
    }
    return replaced;
}

result<void> sqlite_store::change_state(const state_change& change, const std::string& event_id,
                                        millis at) {
    const subscription_forget forget{*this, change.subscription_id};
    return write_transaction([&]() REQUIRES(write_mu_) -> result<void> {
        return apply_state_change(*writer_, change, event_id, at, {});
    });
}

void sqlite_store::forget_subscription(const std::string& id) {
    wopbridge::lock_guard lock(subs_mu_);
    ++subs_generation_;
    subs_cache_.erase(id);
}

result<std::vector<subscription>> sqlite_store::collect_subscriptions(statement& st) {
    return collect_rows(st, read_subscription);
}

} // namespace wopbridge::sqlite_detail
