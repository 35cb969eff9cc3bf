#pragma once
// A store is bound to one host key: signatures, sealed secrets and dedup keys are host-keyed, so a
// node (or a restart) with another key would answer 401 to correctly signed requests and start a
// second run for an event already taken. The store keeps the key's check value; this compares.

#include "core/error.hpp"
#include "core/secret_box.hpp"
#include "store/store.hpp"

#include <string>

namespace wopbridge {

enum class host_key_verdict { matches, differs };

// Whether `box` is the key `st` was sealed with. A store bound to no key yet (new, or from before
// key checks) matches when every secret it sealed opens with `box`; with `bind` it is then bound to
// this key (the first binder wins across nodes; the others compare against the winner).
result<host_key_verdict> check_host_key(store& st, const secret_box& box, bool bind);

// The refusal for `differs`, naming the file and the fix.
std::string wrong_host_key_message(const std::string& key_file);

} // namespace wopbridge
