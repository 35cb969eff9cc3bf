#pragma once
// A 32-byte key and what it protects. A store's *data key* seals signing secrets with AES-256-GCM
// (so a copy of the database alone does not reveal them) and keys secret fingerprints and dedup
// keys; the *host key* (the hostKeyFile) only wraps the data key, so the host key can be rotated
// without touching a sealed column or a dedup row (docs/guarantees/host-key.md).

#include "core/clock.hpp"
#include "core/error.hpp"

#include <memory>
#include <string>
#include <string_view>

namespace wopbridge {

class secret_box {
public:
    static constexpr std::size_t key_size = 32;

    // Loads the 32-byte host key from `key_file`, creating it (mode 0600, random bytes) when absent.
    // Refuses (invalid_argument) a file that is group/world accessible or not exactly 32 bytes.
    // An empty path gives an ephemeral in-memory key (tests; sealed secrets do not survive a restart).
    static result<secret_box> open(const std::string& key_file, random_source& random);
    // A box over a given key (must be key_size bytes).
    static result<secret_box> from_key(std::string key);
    // Why `open` would refuse `key_file` (or could not create it), as an operator-facing sentence
    // that names the fix; "" when it is usable. `exists` tells whether the file is there already.
    static std::string inspect_key_file(const std::string& key_file, bool& exists);
    // Reads an existing key file (never creates one): check-config and key checks.
    static result<secret_box> load(const std::string& key_file);
    // A box over fresh random bytes: a new store's data key.
    static secret_box generate(random_source& random);

    // `data_key` sealed under this key (a host key wraps its store's data key), and back.
    std::string wrap(const secret_box& data_key, random_source& random) const;
    result<secret_box> unwrap(std::string_view wrapped) const;

    // "v1:" + base64(nonce[12] + ciphertext + tag[16]).
    std::string seal(std::string_view plaintext, random_source& random) const;
    // invalid_argument for malformed text or a failed authentication (wrong key, tampering).
    result<std::string> unseal(std::string_view sealed) const;

    // First 16 hex chars of HMAC-SHA256(host_key, secret): host-keyed and truncated (<= 32 chars).
    std::string fingerprint(std::string_view secret) const;
    // "dk_" + first 32 hex chars of HMAC-SHA256(host_key, subscription_id + "\n" + provider_event_id).
    std::string dedup_key(std::string_view subscription_id, std::string_view provider_event_id) const;
    // "hk1:" + first 32 hex chars of HMAC-SHA256(host_key, a fixed label): what a store keeps to
    // recognise the key it was sealed with; it reveals nothing of the key.
    std::string key_check() const;

    // Call once, before any key is loaded (serve): keys then live in OpenSSL's secure heap, pages
    // excluded from core dumps (MADV_DONTDUMP), locked in memory where the limit allows, and
    // zeroed when freed; OpenSSL keeps its own key schedules there too. Without it (the CLI,
    // tests) keys are on the ordinary heap, still zeroed when freed.
    static bool use_secure_heap();

    struct key_bytes; // one key in secure memory, shared by copies of the box

private:
    explicit secret_box(std::string_view key);
    static secret_box take_key(std::string& key); // the caller's plain copy is wiped
    std::string_view key() const;
    std::string hmac_hex(std::string_view message) const;

    std::shared_ptr<const key_bytes> key_;
};

} // namespace wopbridge
