#include "support/provider_signing.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

namespace wopbridge::testing {
namespace {

std::string hex(const unsigned char* p, std::size_t n) {
    static const char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(2 * n);
    for (std::size_t i = 0; i < n; ++i) {
        out += digits[p[i] >> 4];
        out += digits[p[i] & 0xf];
    }
    return out;
}

void hmac(const EVP_MD* md, std::string_view key, std::string_view data, unsigned& len,
          unsigned char* out) {
    HMAC(md, key.data(), static_cast<int>(key.size()),
         reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &len);
}

} // namespace

std::string slack_signature(std::string_view secret, std::int64_t timestamp_s,
                            std::string_view body) {
    const std::string base = "v0:" + std::to_string(timestamp_s) + ":" + std::string(body);
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    hmac(EVP_sha256(), secret, base, len, mac);
    return "v0=" + hex(mac, len);
}

std::string twilio_signature(std::string_view auth_token, std::string_view url,
                             const std::multimap<std::string, std::string>& params) {
    std::string data(url);
    for (const auto& [name, value] : params) { // a multimap iterates sorted by name
        data += name;
        data += value;
    }
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    hmac(EVP_sha1(), auth_token, data, len, mac);
    std::string out(4 * ((len + 2) / 3), '\0');
    int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), mac,
                            static_cast<int>(len));
    out.resize(static_cast<std::size_t>(n));
    return out;
}

std::string hmac_sha256_hex(std::string_view key, std::string_view data) {
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    hmac(EVP_sha256(), key, data, len, mac);
    return hex(mac, len);
}

std::string sha256_hex(std::string_view bytes) {
    unsigned char d[SHA256_DIGEST_LENGTH];
    SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), d);
    return hex(d, sizeof d);
}

std::string form_encode(const std::multimap<std::string, std::string>& params) {
    auto enc = [](const std::string& s) {
        static const char digits[] = "0123456789ABCDEF";
        std::string out;
        for (unsigned char c : s) {
            if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '-' || c == '_' || c == '.' || c == '~') {
                out += static_cast<char>(c);
            } else {
                out += '%';
                out += digits[c >> 4];
                out += digits[c & 0xf];
            }
        }
        return out;
    };
    std::string out;
    for (const auto& [name, value] : params) {
        if (!out.empty()) {
            out += '&';
        }
        out += enc(name) + "=" + enc(value);
    }
    return out;
}

} // namespace wopbridge::testing
