// Signature helpers on OpenSSL. Every comparison of a secret-derived value goes through
// constant_time_equal; every parser refuses rather than guesses.
#include "wopbridge/signatures.hpp"
#include "wopbridge/http_util.hpp"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <algorithm>
#include <array>
#include <limits>
#include <memory>

namespace wopbridge::sig {
namespace {

// HMAC() (EVP_Q_mac underneath) fetches the algorithm and the digest from OpenSSL 3's provider
// registry on every call, which costs more than the MAC of a short message. One prototype context
// per digest, made once (thread-safe static), is duplicated per call instead.
//
// Freed by its static's destructor: the SDK is linked into every connector module, and a module's
// statics die at dlclose while libcrypto stays loaded, so a never-freed prototype would leak per
// load. The destructor is registered after make_prototype returns, i.e. after OpenSSL registered its
// own atexit cleanup during the fetch, so at exit it runs first (reverse order of registration).
using mac_ctx_ptr = std::unique_ptr<EVP_MAC_CTX, decltype(&EVP_MAC_CTX_free)>;

mac_ctx_ptr make_prototype(const char* digest) {
    mac_ctx_ptr none(nullptr, &EVP_MAC_CTX_free);
    EVP_MAC* mac = EVP_MAC_fetch(nullptr, OSSL_MAC_NAME_HMAC, nullptr);
    if (mac == nullptr) {
        return none;
    }
    mac_ctx_ptr ctx(EVP_MAC_CTX_new(mac), &EVP_MAC_CTX_free);
    EVP_MAC_free(mac); // the context keeps its own reference
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, const_cast<char*>(digest), 0),
        OSSL_PARAM_construct_end()};
    if (ctx == nullptr || EVP_MAC_CTX_set_params(ctx.get(), params) != 1) {
        return none;
    }
    return ctx;
}

const EVP_MAC_CTX* sha256_prototype() {
    static const mac_ctx_ptr proto = make_prototype("SHA256");
    return proto.get();
}

const EVP_MAC_CTX* sha1_prototype() {
    static const mac_ctx_ptr proto = make_prototype("SHA1");
    return proto.get();
}

std::string hmac(const EVP_MAC_CTX* proto, std::string_view key, std::string_view message) {
    if (proto == nullptr) {
        return {};
    }
    std::unique_ptr<EVP_MAC_CTX, decltype(&EVP_MAC_CTX_free)> ctx(EVP_MAC_CTX_dup(proto),
                                                                  &EVP_MAC_CTX_free);
    // A NULL key would mean "keep the previous key"; an empty key must be a non-NULL pointer.
    static const unsigned char empty = 0;
    const auto* key_ptr =
        key.empty() ? &empty : reinterpret_cast<const unsigned char*>(key.data());
    std::array<unsigned char, EVP_MAX_MD_SIZE> out{};
    std::size_t len = 0;
    if (ctx == nullptr || EVP_MAC_init(ctx.get(), key_ptr, key.size(), nullptr) != 1 ||
        EVP_MAC_update(ctx.get(), reinterpret_cast<const unsigned char*>(message.data()),
                       message.size()) != 1 ||
        EVP_MAC_final(ctx.get(), out.data(), &len, out.size()) != 1) {
        return {};
    }
    return std::string(reinterpret_cast<const char*>(out.data()), len);
}

constexpr std::string_view b64_alphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr std::string_view b64url_alphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

std::string encode64(std::string_view raw, std::string_view alphabet, bool pad) {
    std::string out;
    out.reserve((raw.size() + 2) / 3 * 4);
    std::size_t i = 0;
    auto byte = [&](std::size_t k) { return static_cast<unsigned char>(raw[k]); };
    for (; i + 3 <= raw.size(); i += 3) {
        const unsigned v = (byte(i) << 16) | (byte(i + 1) << 8) | byte(i + 2);
        out += alphabet[(v >> 18) & 63];
        out += alphabet[(v >> 12) & 63];
        out += alphabet[(v >> 6) & 63];
        out += alphabet[v & 63];
    }
    const std::size_t rest = raw.size() - i;
    if (rest == 1) {
        const unsigned v = byte(i) << 16;
        out += alphabet[(v >> 18) & 63];
        out += alphabet[(v >> 12) & 63];
        if (pad) {
            out += "==";
        }
    } else if (rest == 2) {
        const unsigned v = (byte(i) << 16) | (byte(i + 1) << 8);
        out += alphabet[(v >> 18) & 63];
        out += alphabet[(v >> 12) & 63];
        out += alphabet[(v >> 6) & 63];
        if (pad) {
            out += '=';
        }
    }
    return out;
}

int b64_value(char c) noexcept {
    if (c >= 'A' && c <= 'Z') {
        return c - 'A';
    }
    if (c >= 'a' && c <= 'z') {
        return c - 'a' + 26;
    }
    if (c >= '0' && c <= '9') {
        return c - '0' + 52;
    }
    if (c == '+') {
        return 62;
    }
    if (c == '/') {
        return 63;
    }
    return -1;
}

std::string ascii_lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) {
        if (c >= 'A' && c <= 'Z') {
            c = static_cast<char>(c - 'A' + 'a');
        }
    }
    return out;
}

bool starts_with(std::string_view s, std::string_view prefix) noexcept {
    return s.substr(0, prefix.size()) == prefix;
}

// The key of a "whsec_<base64>" secret: 24..64 bytes, else nullopt.
std::optional<std::string> whsec_key(std::string_view secret) {
    constexpr std::string_view prefix = "whsec_";
    if (!starts_with(secret, prefix)) {
        return std::nullopt;
    }
    auto key = base64_decode(secret.substr(prefix.size()));
    if (!key || key->size() < 24 || key->size() > 64) {
        return std::nullopt;
    }
    return key;
}

std::string standard_webhooks_mac(std::string_view key, std::string_view id, std::string_view ts,
                                  std::string_view body) {
    std::string signed_content;
    signed_content.reserve(id.size() + ts.size() + body.size() + 2);
    signed_content.append(id).append(".").append(ts).append(".").append(body);
    return base64_encode(hmac_sha256(key, signed_content));
}

// The value of one query parameter (first occurrence, not percent-decoded), or nullopt.
std::optional<std::string_view> query_param(std::string_view url, std::string_view name) {
    const auto q = url.find('?');
    if (q == std::string_view::npos) {
        return std::nullopt;
    }
    std::string_view query = url.substr(q + 1);
    if (const auto hash = query.find('#'); hash != std::string_view::npos) {
        query = query.substr(0, hash);
    }
    while (!query.empty()) {
        const auto amp = query.find('&');
        const std::string_view part = query.substr(0, amp);
        const auto eq = part.find('=');
        if (part.substr(0, eq) == name) {
            return eq == std::string_view::npos ? std::string_view{} : part.substr(eq + 1);
        }
        if (amp == std::string_view::npos) {
            break;
        }
        query.remove_prefix(amp + 1);
    }
    return std::nullopt;
}

bool any_nonempty(const std::vector<std::string>& secrets) noexcept {
    return std::any_of(secrets.begin(), secrets.end(), [](const auto& s) { return !s.empty(); });
}

} // namespace

std::string hmac_sha256(std::string_view key, std::string_view message) {
    return hmac(sha256_prototype(), key, message);
}

std::string hmac_sha1(std::string_view key, std::string_view message) {
    return hmac(sha1_prototype(), key, message);
}

std::string sha256(std::string_view data) {
    std::array<unsigned char, EVP_MAX_MD_SIZE> out{};
    unsigned int len = 0;
    if (EVP_Digest(data.data(), data.size(), out.data(), &len, EVP_sha256(), nullptr) != 1) {
        return {};
    }
    return std::string(reinterpret_cast<const char*>(out.data()), len);
}

std::string to_hex(std::string_view raw) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(raw.size() * 2);
    for (const char ch : raw) {
        const auto b = static_cast<unsigned char>(ch);
        out += digits[b >> 4];
        out += digits[b & 0xf];
    }
    return out;
}

std::optional<std::string> from_hex(std::string_view hex) {
    if (hex.size() % 2 != 0) {
        return std::nullopt;
    }
    std::string out;
    out.reserve(hex.size() / 2);
    for (std::size_t i = 0; i < hex.size(); i += 2) {
        const int hi = http::hex_digit(hex[i]);
        const int lo = http::hex_digit(hex[i + 1]);
        if (hi < 0 || lo < 0) {
            return std::nullopt;
        }
        out += static_cast<char>((hi << 4) | lo);
    }
    return out;
}

std::string base64_encode(std::string_view raw) {
    return encode64(raw, b64_alphabet, true);
}

std::string base64url_encode(std::string_view raw) {
    return encode64(raw, b64url_alphabet, false);
}

std::optional<std::string> base64_decode(std::string_view text) {
    // Strict: length a multiple of 4, only the standard alphabet, '=' only as the final one or two
    // characters, and zero bits in the unused tail (one canonical text per byte string).
    if (text.size() % 4 != 0) {
        return std::nullopt;
    }
    std::size_t pad = 0;
    if (!text.empty() && text.back() == '=') {
        pad = (text.size() >= 2 && text[text.size() - 2] == '=') ? 2 : 1;
    }
    const std::size_t data_chars = text.size() - pad;
    std::string out;
    out.reserve(text.size() / 4 * 3);
    unsigned acc = 0;
    int bits = 0;
    for (std::size_t i = 0; i < data_chars; ++i) {
        const int v = b64_value(text[i]);
        if (v < 0) {
            return std::nullopt;
        }
        acc = (acc << 6) | static_cast<unsigned>(v);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out += static_cast<char>((acc >> bits) & 0xff);
        }
    }
    if ((acc & ((1u << bits) - 1)) != 0) {
        return std::nullopt;
    }
    return out;
}

bool ed25519_verify(std::string_view public_key, std::string_view signature,
                    std::string_view message) noexcept {
    if (public_key.size() != 32 || signature.size() != 64) {
        return false;
    }
    std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(
        EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr,
                                    reinterpret_cast<const unsigned char*>(public_key.data()), 32),
        &EVP_PKEY_free);
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
    if (!key || !ctx || EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, key.get()) != 1) {
        return false;
    }
    return EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()),
                            signature.size(),
                            reinterpret_cast<const unsigned char*>(message.data()),
                            message.size()) == 1;
}

bool constant_time_equal(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) {
        return false;
    }
    if (a.empty()) {
        return true;
    }
    return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

bool within_window(std::int64_t now_s, std::int64_t ts_s, std::int64_t tolerance_s) noexcept {
    if (tolerance_s < 0) {
        return false;
    }
    // 128-bit difference: no overflow for any pair of int64 values.
    const __int128 diff = static_cast<__int128>(now_s) - static_cast<__int128>(ts_s);
    const __int128 tol = tolerance_s;
    return diff <= tol && diff >= -tol;
}

std::optional<std::int64_t> parse_unix_seconds(std::string_view text) noexcept {
    if (text.empty() || text.size() > 19) {
        return std::nullopt;
    }
    std::int64_t value = 0;
    for (const char c : text) {
        if (c < '0' || c > '9') {
            return std::nullopt;
        }
        const int d = c - '0';
        if (value > (std::numeric_limits<std::int64_t>::max() - d) / 10) {
            return std::nullopt;
        }
        value = value * 10 + d;
    }
    return value;
}

std::string_view to_string(verdict v) noexcept {
    switch (v) {
    case verdict::valid:
        return "valid";
    case verdict::missing_header:
        return "missing_header";
    case verdict::malformed:
        return "malformed";
    case verdict::stale_timestamp:
        return "stale_timestamp";
    case verdict::mismatch:
        return "mismatch";
    case verdict::bad_secret:
        return "bad_secret";
    }
    return "unknown";
}

bool valid_webhook_id(std::string_view id) noexcept {
    if (id.size() < 16 || id.size() > 128) {
        return false;
    }
    return std::all_of(id.begin(), id.end(), [](char c) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
               c == '_' || c == '-';
    });
}

verdict verify_standard_webhooks(const std::vector<std::string>& secrets,
                                 std::string_view webhook_id, std::string_view webhook_timestamp,
                                 std::string_view webhook_signature, std::string_view body,
                                 std::int64_t now_s, std::int64_t tolerance_s) {
    if (webhook_id.empty() || webhook_timestamp.empty() || webhook_signature.empty()) {
        return verdict::missing_header;
    }
    std::vector<std::string> keys;
    for (const auto& s : secrets) {
        if (auto key = whsec_key(s)) {
            keys.push_back(std::move(*key));
        }
    }
    if (keys.empty()) {
        return verdict::bad_secret;
    }
    if (!valid_webhook_id(webhook_id)) {
        return verdict::malformed;
    }
    const auto ts = parse_unix_seconds(webhook_timestamp);
    if (!ts) {
        return verdict::malformed;
    }
    // Collect the v1 entries; other versions (e.g. v1a) are skipped, not failed.
    std::vector<std::string_view> candidates;
    std::string_view rest = webhook_signature;
    while (!rest.empty()) {
        const auto space = rest.find(' ');
        const std::string_view entry = rest.substr(0, space);
        if (!entry.empty()) {
            const auto comma = entry.find(',');
            if (comma == std::string_view::npos || comma == 0) {
                return verdict::malformed;
            }
            if (entry.substr(0, comma) == "v1") {
                candidates.push_back(entry.substr(comma + 1));
            }
        }
        if (space == std::string_view::npos) {
            break;
        }
        rest.remove_prefix(space + 1);
    }
    if (candidates.empty()) {
        return verdict::malformed;
    }
    if (!within_window(now_s, *ts, tolerance_s)) {
        return verdict::stale_timestamp;
    }
    bool matched = false;
    for (const auto& key : keys) {
        const std::string expected =
            standard_webhooks_mac(key, webhook_id, webhook_timestamp, body);
        for (const auto candidate : candidates) {
            // No early exit: time does not reveal which entry matched.
            matched |= constant_time_equal(expected, candidate);
        }
    }
    return matched ? verdict::valid : verdict::mismatch;
}

std::optional<std::string> sign_standard_webhooks(std::string_view secret,
                                                  std::string_view webhook_id,
                                                  std::int64_t timestamp_s, std::string_view body) {
    const auto key = whsec_key(secret);
    if (!key) {
        return std::nullopt;
    }
    return "v1," + standard_webhooks_mac(*key, webhook_id, std::to_string(timestamp_s), body);
}

std::string sign_slack_v0(std::string_view signing_secret, std::string_view timestamp,
                          std::string_view body) {
    std::string base;
    base.reserve(timestamp.size() + body.size() + 4);
    base.append("v0:").append(timestamp).append(":").append(body);
    return "v0=" + to_hex(hmac_sha256(signing_secret, base));
}

verdict verify_slack_v0(const std::vector<std::string>& signing_secrets, std::string_view timestamp,
                        std::string_view signature, std::string_view body, std::int64_t now_s,
                        std::int64_t tolerance_s) {
    if (timestamp.empty() || signature.empty()) {
        return verdict::missing_header;
    }
    if (!any_nonempty(signing_secrets)) {
        return verdict::bad_secret;
    }
    const auto ts = parse_unix_seconds(timestamp);
    if (!ts || !starts_with(signature, "v0=") || signature.size() != 3 + 64 ||
        !from_hex(signature.substr(3))) {
        return verdict::malformed;
    }
    if (!within_window(now_s, *ts, tolerance_s)) {
        return verdict::stale_timestamp;
    }
    const std::string given = ascii_lower(signature);
    bool matched = false;
    for (const auto& secret : signing_secrets) {
        if (!secret.empty()) {
            matched |= constant_time_equal(sign_slack_v0(secret, timestamp, body), given);
        }
    }
    return matched ? verdict::valid : verdict::mismatch;
}

std::string sign_twilio(std::string_view auth_token, std::string_view url,
                        std::vector<std::pair<std::string, std::string>> params) {
    // Sorted by name; repeated names by value, so the order the form arrived in does not matter.
    std::sort(params.begin(), params.end());
    std::string data(url);
    for (const auto& [name, value] : params) {
        data.append(name).append(value);
    }
    return base64_encode(hmac_sha1(auth_token, data));
}

verdict verify_twilio(const std::vector<std::string>& auth_tokens, std::string_view url,
                      const std::vector<std::pair<std::string, std::string>>& params,
                      std::string_view signature) {
    if (signature.empty()) {
        return verdict::missing_header;
    }
    if (!any_nonempty(auth_tokens)) {
        return verdict::bad_secret;
    }
    const auto raw = base64_decode(signature);
    if (!raw || raw->size() != 20) {
        return verdict::malformed;
    }
    bool matched = false;
    for (const auto& token : auth_tokens) {
        if (!token.empty()) {
            matched |= constant_time_equal(sign_twilio(token, url, params), signature);
        }
    }
    return matched ? verdict::valid : verdict::mismatch;
}

verdict verify_twilio_json(const std::vector<std::string>& auth_tokens, std::string_view url,
                           std::string_view body, std::string_view signature) {
    if (signature.empty()) {
        return verdict::missing_header;
    }
    if (!any_nonempty(auth_tokens)) {
        return verdict::bad_secret;
    }
    const auto body_hash = query_param(url, "bodySHA256");
    if (!body_hash || body_hash->size() != 64 || !from_hex(*body_hash)) {
        return verdict::malformed;
    }
    const verdict url_verdict = verify_twilio(auth_tokens, url, {}, signature);
    const bool body_ok = constant_time_equal(to_hex(sha256(body)), ascii_lower(*body_hash));
    if (url_verdict != verdict::valid) {
        return url_verdict;
    }
    return body_ok ? verdict::valid : verdict::mismatch;
}

std::string sign_openwop_v1(std::string_view secret, std::int64_t timestamp_s,
                            std::string_view body) {
    std::string base = std::to_string(timestamp_s);
    base.append(".").append(body);
    return "sha256=" + to_hex(hmac_sha256(secret, base));
}

verdict verify_openwop_v1(std::string_view secret, std::string_view timestamp,
                          std::string_view signature, std::string_view body, std::int64_t now_s,
                          std::int64_t tolerance_s) {
    if (timestamp.empty() || signature.empty()) {
        return verdict::missing_header;
    }
    if (secret.empty()) {
        return verdict::bad_secret;
    }
    const auto ts = parse_unix_seconds(timestamp);
    if (!ts || !starts_with(signature, "sha256=") || signature.size() != 7 + 64 ||
        !from_hex(signature.substr(7))) {
        return verdict::malformed;
    }
    if (!within_window(now_s, *ts, tolerance_s)) {
        return verdict::stale_timestamp;
    }
    // Sign the timestamp text as received: "0123" and "123" are different signed strings.
    std::string base(timestamp);
    base.append(".").append(body);
    const std::string expected = "sha256=" + to_hex(hmac_sha256(secret, base));
    return constant_time_equal(expected, ascii_lower(signature)) ? verdict::valid
                                                                 : verdict::mismatch;
}

} // namespace wopbridge::sig
