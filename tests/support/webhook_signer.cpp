#include "support/webhook_signer.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

namespace wopbridge::testing {

namespace {

std::string b64_encode(const unsigned char* data, std::size_t n) {
    std::string out(4 * ((n + 2) / 3), '\0');
    int len = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), data,
                              static_cast<int>(n));
    out.resize(static_cast<std::size_t>(len));
    return out;
}

bool b64_decode(std::string_view text, std::string& out) {
    if (text.empty() || text.size() % 4 != 0) {
        return false;
    }
    out.assign(3 * text.size() / 4, '\0');
    int len = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                              reinterpret_cast<const unsigned char*>(text.data()),
                              static_cast<int>(text.size()));
    if (len < 0) {
        return false;
    }
    std::size_t pad = 0;
    if (text.back() == '=') {
        ++pad;
        if (text[text.size() - 2] == '=') {
            ++pad;
        }
    }
    out.resize(static_cast<std::size_t>(len) - pad);
    return true;
}

} // namespace

std::string sign_standard_webhook(std::string_view secret, std::string_view webhook_id,
                                  std::int64_t timestamp_s, std::string_view body) {
    constexpr std::string_view prefix = "whsec_";
    if (secret.substr(0, prefix.size()) != prefix) {
        return {};
    }
    std::string key;
    if (!b64_decode(secret.substr(prefix.size()), key)) {
        return {};
    }
    std::string message = std::string(webhook_id) + "." + std::to_string(timestamp_s) + "." +
                          std::string(body);
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int mac_len = 0;
    HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
         reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac, &mac_len);
    return "v1," + b64_encode(mac, mac_len);
}

std::vector<std::pair<std::string, std::string>> standard_webhook_headers(
    std::string_view secret, std::string_view webhook_id, std::int64_t timestamp_s,
    std::string_view body) {
    return {{"webhook-id", std::string(webhook_id)},
            {"webhook-timestamp", std::to_string(timestamp_s)},
            {"webhook-signature", sign_standard_webhook(secret, webhook_id, timestamp_s, body)}};
}

std::string fresh_webhook_id() {
    unsigned char raw[12];
    RAND_bytes(raw, sizeof raw);
    static const char* hex = "0123456789abcdef";
    std::string out = "msg_";
    for (unsigned char c : raw) {
        out.push_back(hex[c >> 4]);
        out.push_back(hex[c & 15]);
    }
    return out;
}

} // namespace wopbridge::testing
