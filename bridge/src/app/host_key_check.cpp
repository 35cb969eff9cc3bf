#include "app/host_key_check.hpp"

namespace wopbridge {
namespace {

host_key_unlock differs() { return {}; }

host_key_unlock matches(secret_box data_key) {
    return {host_key_verdict::matches, std::move(data_key)};
}

// The data key wrapped under `host_key`, once the store has a wrap for it.
result<host_key_unlock> open_wrap(store& st, const secret_box& host_key) {
    auto wraps = st.data_key_wraps();
    if (!wraps) {
        return wraps.error();
    }
    auto it = wraps->find(host_key.key_check());
    if (it == wraps->end()) {
        return differs();
    }
    auto data_key = host_key.unwrap(it->second);
    if (!data_key) {
        return differs(); // a wrap that does not open (tampered): the key is not usable here
    }
    return matches(std::move(*data_key));
}

// Every secret a store from before key checks sealed opens with the key that sealed it.
result<bool> opens_every_sealed_secret(store& st, const secret_box& host_key) {
    auto subs = st.list_all_subscriptions();
    if (!subs) {
        return result<bool>(boost::system::in_place_error, subs.error());
    }
    for (const auto& s : *subs) {
        if (!s.sealed_secret.empty() && !host_key.unseal(s.sealed_secret)) {
            return false;
        }
    }
    return true;
}

} // namespace

result<host_key_unlock> unlock_data_key(store& st, const secret_box& host_key,
                                        random_source& random, bool bind) {
    // One read decides: nodes starting together on a new store bind it while this runs, so a
    // second read could see a wrap the first did not (and take this very key for a stranger).
    auto wraps = st.data_key_wraps();
    if (!wraps) {
        return wraps.error();
    }
    const std::string mine = host_key.key_check();
    if (auto it = wraps->find(mine); it != wraps->end()) {
        auto data_key = host_key.unwrap(it->second);
        if (!data_key) {
            return differs(); // a wrap that does not open (tampered): the key is not usable here
        }
        return matches(std::move(*data_key));
    }
    if (!wraps->empty()) {
        return differs(); // bound, and this key is not among those allowed
    }
    auto bound = st.host_key_check();
    if (!bound) {
        return bound.error();
    }
    if (!bound->empty()) {
        if (*bound != mine) {
            return differs();
        }
        // Bound before data keys: everything was sealed with the host key itself.
        if (!bind) {
            return matches(host_key);
        }
        if (auto added = st.add_data_key_wrap(mine, host_key.wrap(host_key, random)); !added) {
            return added.error();
        }
        return open_wrap(st, host_key);
    }

    auto opens = opens_every_sealed_secret(st, host_key);
    if (!opens) {
        return opens.error();
    }
    if (!*opens) {
        // Either a store from before key checks sealed with another key, or a node with this very
        // key bound the store and sealed its config since the read above: then its wrap is there.
        return open_wrap(st, host_key);
    }
    auto keyed = st.has_keyed_rows();
    if (!keyed) {
        return keyed.error();
    }
    secret_box data_key = *keyed ? host_key : secret_box::generate(random);
    if (!bind) {
        return matches(std::move(data_key)); // check-config: compared, never used to seal
    }
    auto winner = st.bind_host_key_check(mine, host_key.wrap(data_key, random));
    if (winner && winner->empty()) {
        winner = st.host_key_check(); // lost a race whose commit our statement could not see
    }
    if (!winner) {
        return winner.error();
    }
    if (*winner != mine) {
        return differs();
    }
    // This key won, or another node with the same key did: use the winner's data key.
    auto opened = open_wrap(st, host_key);
    if (opened && opened->verdict == host_key_verdict::differs) {
        // The winner was a binder from before data keys (no wrap): as above.
        if (auto added = st.add_data_key_wrap(mine, host_key.wrap(host_key, random)); !added) {
            return added.error();
        }
        return open_wrap(st, host_key);
    }
    return opened;
}

std::string wrong_host_key_message(const std::string& key_file) {
    return "the host key in " + key_file +
           " is not a key this store opens with (another node, or an earlier run, used a "
           "different one). Every node of a store must use a key the store knows: copy the key "
           "file from a node that serves this store, restore the file that was replaced, or add "
           "this key with `wopbridge host-key add` from a node that has a known key "
           "(docs/guarantees/host-key.md)";
}

} // namespace wopbridge
