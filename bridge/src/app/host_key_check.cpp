#include "app/host_key_check.hpp"

namespace wopbridge {

result<host_key_verdict> check_host_key(store& st, const secret_box& box, bool bind) {
    auto kept = st.host_key_check();
    if (!kept) {
        return kept.error();
    }
    const std::string mine = box.key_check();
    if (kept->empty()) {
        auto subs = st.list_all_subscriptions();
        if (!subs) {
            return subs.error();
        }
        for (const auto& s : *subs) {
            if (!s.sealed_secret.empty() && !box.unseal(s.sealed_secret)) {
                return host_key_verdict::differs;
            }
        }
        if (!bind) {
            return host_key_verdict::matches;
        }
        auto bound = st.bind_host_key_check(mine);
        if (!bound) {
            return bound.error();
        }
        kept = std::move(bound);
    }
    return *kept == mine ? host_key_verdict::matches : host_key_verdict::differs;
}

std::string wrong_host_key_message(const std::string& key_file) {
    return "the host key in " + key_file +
           " is not the key this store was sealed with (another node, or an earlier run, used a "
           "different one). Every node of a store must share one host key file: copy it from a "
           "node that serves this store, or restore the file that was replaced "
           "(docs/guarantees/host-key.md)";
}

} // namespace wopbridge
