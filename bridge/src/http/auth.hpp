#pragma once
// Bearer API keys: constant-time lookup, scopes, tenant. Keys come from the config file.

#include "core/scopes.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wopbridge::http {

using wopbridge::scope_runs_create;
using wopbridge::scope_runs_read;
using wopbridge::scope_webhooks_manage;

struct api_key {
    std::string key;
    std::string tenant = "default";
    std::vector<std::string> scopes;
};

struct principal {
    std::string tenant;
    std::vector<std::string> scopes;
    bool has_scope(std::string_view scope) const;
};

class authenticator {
public:
    explicit authenticator(std::vector<api_key> keys);
    // The principal for an Authorization header value ("Bearer <key>"); nullopt when missing/unknown.
    // Every configured key is compared (digests, constant time), so timing reveals nothing about
    // which key nearly matched.
    std::optional<principal> authenticate(std::optional<std::string_view> authorization) const;

private:
    struct entry {
        std::string digest; // SHA-256 of the key
        principal who;
    };
    std::vector<entry> entries_;
};

} // namespace wopbridge::http
