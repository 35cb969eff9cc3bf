#include "core/ids.hpp"

#include <cstdint>

namespace wopbridge {

std::string id_generator::make(std::string_view prefix) {
    static constexpr char alphabet[] = "0123456789abcdefghjkmnpqrstvwxyz"; // Crockford base32
    unsigned char bytes[16];
    random_.fill(bytes, sizeof bytes);
    if (clock_ != nullptr) {
        const auto ms = static_cast<std::uint64_t>(clock_->now_ms());
        for (int i = 0; i < 6; ++i) {
            bytes[i] = static_cast<unsigned char>(ms >> (8 * (5 - i)));
        }
    }
    std::string out(prefix);
    out.push_back('_');
    // 128 bits -> 26 base32 digits (the first carries 3 bits).
    unsigned __int128 v = 0;
    for (unsigned char b : bytes) {
        v = (v << 8) | b;
    }
    char digits[26];
    for (int i = 25; i >= 0; --i) {
        digits[i] = alphabet[static_cast<unsigned>(v & 31u)];
        v >>= 5;
    }
    out.append(digits, 26);
    return out;
}

} // namespace wopbridge
