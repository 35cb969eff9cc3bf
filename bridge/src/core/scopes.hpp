#pragma once
// The API key scopes the HTTP API checks (http/router.cpp names one per route). Here rather than in
// http/ so the config loader can refuse a scope no route checks: a typo such as `runs:reed` would
// otherwise load fine and only show up as 403s.

#include <array>
#include <string_view>

namespace wopbridge {

inline constexpr std::string_view scope_runs_create = "runs:create";
inline constexpr std::string_view scope_runs_read = "runs:read";
inline constexpr std::string_view scope_webhooks_manage = "webhooks:manage";

inline constexpr std::array<std::string_view, 3> known_scopes{scope_runs_create, scope_runs_read,
                                                              scope_webhooks_manage};

constexpr bool is_known_scope(std::string_view s) noexcept {
    for (auto k : known_scopes) {
        if (k == s) {
            return true;
        }
    }
    return false;
}

} // namespace wopbridge
