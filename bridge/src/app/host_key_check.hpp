#pragma once
// A store is opened by host keys it knows. Secrets are sealed, and dedup keys and fingerprints
// keyed, with the store's data key; each host key allowed to open the store keeps that data key
// wrapped under it. A node (or a restart) with a key the store does not know would answer 401 to
// correctly signed requests and start a second run for an event already taken, so it is refused;
// rotating the host key only adds and later retires a wrap (docs/guarantees/host-key.md).

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/secret_box.hpp"
#include "store/store.hpp"

#include <optional>
#include <string>

namespace wopbridge {

enum class host_key_verdict { matches, differs };

struct host_key_unlock {
    host_key_verdict verdict = host_key_verdict::differs;
    std::optional<secret_box> data_key; // set when the verdict is matches
};

// Opens `st`'s data key with `host_key`. A store not bound yet matches when every secret it sealed
// opens with `host_key`; with `bind` it is then bound to it (the first binder wins across nodes).
// A new store gets a random data key; a store with rows from before data keys keeps the host key
// itself as its data key, so nothing sealed or deduplicated changes.
result<host_key_unlock> unlock_data_key(store& st, const secret_box& host_key,
                                        random_source& random, bool bind);

// The refusal for `differs`, naming the file and the fix.
std::string wrong_host_key_message(const std::string& key_file);

} // namespace wopbridge
