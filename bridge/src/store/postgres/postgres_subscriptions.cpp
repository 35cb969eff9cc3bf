// PostgreSQL store: the subscription role, and the subscription cache with its change listener.
#include "store/postgres/postgres_store_impl.hpp"

namespace wopbridge::postgres_detail {

result<void> postgres_store::insert_subscription(const subscription& s) {
    const subscription_forget forget{*this, s.id};
    return write([&](connection& c) -> result<void> {
        return c.run("INSERT INTO subscriptions (" WB_SUB_COLS ") VALUES (" WB_PG_SUB_PARAMS ")",
                     subscription_params(s));
    });
}

result<void> postgres_store::upsert_config_subscription(const subscription& s) {
    const subscription_forget forget{*this, s.id};
    return write([&](connection& c) -> result<void> {
        return c.run("INSERT INTO subscriptions (" WB_SUB_COLS ") VALUES (" WB_PG_SUB_PARAMS
                     ") " WB_SUB_CONFIG_UPSERT,
                     subscription_params(s));
    });
}

result<subscription> postgres_store::get_subscription(const std::string& id) {
    std::uint64_t generation = 0;
    const auto now = std::chrono::steady_clock::now();
    {
        wopbridge::lock_guard lock(subs_mu_);
        if (subs_listening_) {
            if (auto it = subs_cache_.find(id);
                it != subs_cache_.end() && now - it->second.read_at < cache_ttl) {
                return it->second.value;
            }
        }
        generation = subs_generation_;
    }
    auto found = read_subscription_row(id);
    if (found) {
        wopbridge::lock_guard lock(subs_mu_);
        if (subs_listening_ && subs_generation_ == generation) {
            if (subs_cache_.size() >= max_cached_subscriptions) {
                subs_cache_.clear();
            }
            subs_cache_[id] = cached_subscription{*found, now};
        }
    }
    return found;
}

result<subscription> postgres_store::read_subscription_row(const std::string& id) {
    return read([&](connection& c) -> result<subscription> {
        auto r = c.exec_prepared("SELECT " WB_SUB_COLS " FROM subscriptions WHERE id = $1", {p(id)});
        if (!r) {
            return r.error();
        }
        if (r->empty()) {
            return errc::not_found;
        }
        return read_subscription(*r, 0);
    });
}

result<std::vector<subscription>> postgres_store::list_subscriptions(const std::string& tenant) {
    return read([&](connection& c) -> result<std::vector<subscription>> {
        auto r = c.exec("SELECT " WB_SUB_COLS " FROM subscriptions WHERE tenant = $1 ORDER BY id",
                        {p(tenant)});
        if (!r) {
            return r.error();
        }
        return collect_subscriptions(*r);
    });
}

result<std::vector<subscription>> postgres_store::list_all_subscriptions() {
    return read([&](connection& c) -> result<std::vector<subscription>> {
        auto r = c.exec("SELECT " WB_SUB_COLS " FROM subscriptions ORDER BY id", {});
        if (!r) {
            return r.error();
        }
        return collect_subscriptions(*r);
    });
}

result<void> postgres_store::delete_subscription(const std::string& id) {
    const subscription_forget forget{*this, id};
    return write([&](connection& c) -> result<void> {
        auto r = c.exec("DELETE FROM subscriptions WHERE id = $1", {p(id)});
        if (!r) {
            return r.error();
        }
        if (r->affected() == 0) {
            return errc::not_found;
        }
        return {};
    });
}

result<bool> postgres_store::replace_connector_settings(const std::string& id,
                                                        const std::string& expected,
                                                        const std::string& replacement) {
    const subscription_forget forget{*this, id};
    bool replaced = false;
    auto r = write([&](connection& c) -> result<void> {
        auto q = c.exec("UPDATE subscriptions SET connector_settings_json = $3 "
                        "WHERE id = $1 AND connector_settings_json = $2",
                        {p(id), p(expected), p(replacement)});
        if (!q) {
            return q.error();
        }
        replaced = q->affected() == 1;
        return {};
    });
    if (!r) {
        return result<bool>(boost::system::in_place_error, r.error());
    }
    return replaced;
}

result<void> postgres_store::change_state(const state_change& change, const std::string& event_id,
                                          millis at) {
    const subscription_forget forget{*this, change.subscription_id};
    return write([&](connection& c) -> result<void> {
        return apply_state_change(c, change, event_id, at, {});
    });
}

void postgres_store::forget_subscription(const std::string& id) {
    wopbridge::lock_guard lock(subs_mu_);
    ++subs_generation_;
    subs_cache_.erase(id);
}

void postgres_store::set_listening(bool on) {
    wopbridge::lock_guard lock(subs_mu_);
    ++subs_generation_;
    subs_cache_.clear();
    subs_listening_ = on;
}

void postgres_store::listener_loop() {
    bool listening = false;
    for (;;) {
        {
            wopbridge::unique_lock lock(listener_mu_);
            if (listener_stopping_) {
                return;
            }
            if (!listening) {
                // Reconnect (and LISTEN again) at most once a second after a failure.
                lock.wait_for(listener_cv_, std::chrono::seconds(1),
                              [&]() REQUIRES(listener_mu_) { return listener_stopping_; });
                if (listener_stopping_) {
                    return;
                }
            }
        }
        if (!listening) {
            if (listener_->ensure(!listener_->healthy()) &&
                listener_->run("LISTEN wopbridge_subscriptions")) {
                listening = true;
                set_listening(true); // empty: anything cached before may have been missed
            }
            continue;
        }
        auto ids = listener_->wait_for_notifications(250);
        if (!ids) {
            listening = false;
            set_listening(false); // notifications may be lost from here on: cache nothing
            continue;
        }
        for (const auto& id : *ids) {
            forget_subscription(id);
        }
    }
}

result<std::vector<subscription>> postgres_store::collect_subscriptions(const rows& r) {
    return postgres::collect_rows(r, codec::read_subscription<postgres::row_ref>);
}

} // namespace wopbridge::postgres_detail
