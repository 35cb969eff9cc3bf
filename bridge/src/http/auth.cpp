#include "http/auth.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <algorithm>

namespace wopbridge::http {

namespace {

std::string digest_of(std::string_view data) {
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_Digest(data.data(), data.size(), out, &len, EVP_sha256(), nullptr);
    return std::string(reinterpret_cast<const char*>(out), len);
}

} // namespace

bool principal::has_scope(std::string_view scope) const {
    return std::find(scopes.begin(), scopes.end(), scope) != scopes.end();
}

authenticator::authenticator(std::vector<api_key> keys) {
    for (auto& k : keys) {
        if (k.key.empty()) {
            continue;
        }
        entries_.push_back({digest_of(k.key), principal{k.tenant, k.scopes}});
    }
}

std::optional<principal> authenticator::authenticate(
    std::optional<std::string_view> authorization) const {
    if (!authorization) {
        return std::nullopt;
    }
    std::string_view v = *authorization;
    constexpr std::string_view scheme = "bearer ";
    if (v.size() <= scheme.size()) {
        return std::nullopt;
    }
    for (std::size_t i = 0; i < scheme.size(); ++i) {
        char c = v[i];
        if (c >= 'A' && c <= 'Z') {
            c = static_cast<char>(c - 'A' + 'a');
        }
        if (c != scheme[i]) {
            return std::nullopt;
        }
    }
    std::string_view presented = v.substr(scheme.size());
    while (!presented.empty() && presented.front() == ' ') {
        presented.remove_prefix(1);
    }
    while (!presented.empty() && presented.back() == ' ') {
        presented.remove_suffix(1);
    }
    if (presented.empty()) {
        return std::nullopt;
    }
    const std::string d = digest_of(presented);
    const entry* found = nullptr;
    for (const auto& e : entries_) {
        // No early exit: every key costs the same.
        if (CRYPTO_memcmp(e.digest.data(), d.data(), d.size()) == 0) {
            found = &e;
        }
    }
    if (!found) {
        return std::nullopt;
    }
    return found->who;
}

} // namespace wopbridge::http
