#pragma once
// The store's role for the host-key binding and the wrapped data keys (see store.hpp for the
// transaction and threading rules).

#include "core/error.hpp"

#include <map>
#include <string>
#include <string_view>

namespace wopbridge {

// store_meta rows that hold the data key wrapped under one host key: this prefix + the key check.
inline constexpr std::string_view data_key_wrap_prefix = "data_key_wrap:";

class key_store {
public:
    virtual ~key_store() = default;

    // The host keys a store opens with. A key is known by its check value (an HMAC of a fixed
    // label: it reveals nothing of the key); each allowed key keeps the store's data key wrapped
    // under it. bind_host_key_check binds a new store: the first check bound is kept, with its
    // wrap in the same transaction, and every later bind answers the kept one (two nodes starting
    // at once: one wins, the other compares). host_key_check reads it ("" = not bound). A store
    // bound before data keys existed has the check and no wraps.
    virtual result<std::string> bind_host_key_check(const std::string& check,
                                                    const std::string& wrapped_data_key) = 0;
    virtual result<std::string> host_key_check() = 0;
    // Whether anything sealed or keyed with a data key is stored (subscriptions, dedup rows,
    // outbound webhooks): an unbound store holding such rows is from before data keys.
    virtual result<bool> has_keyed_rows() = 0;
    // Wrapped data key by key check.
    virtual result<std::map<std::string, std::string>> data_key_wraps() = 0;
    // Allows one more key (rotation's first step, or a store bound before data keys): kept as is
    // when that key already has a wrap.
    virtual result<void> add_data_key_wrap(const std::string& check, const std::string& wrapped) = 0;
    // Rotation's last step: every wrap but `keep_check`'s is dropped and the binding names it, in
    // one transaction. Returns the wraps dropped; not_found when `keep_check` has none.
    virtual result<int> retire_data_key_wraps(const std::string& keep_check) = 0;
};

} // namespace wopbridge
