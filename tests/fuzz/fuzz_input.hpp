#pragma once
// Splits one fuzzer input into fields (separated by '\n' up to `n - 1` times; the last field takes
// the rest) so a target can fuzz several string arguments from one buffer.

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace wopbridge::fuzz {

inline std::vector<std::string_view> split_fields(const std::uint8_t* data, std::size_t size,
                                                  std::size_t n) {
    std::string_view rest(reinterpret_cast<const char*>(data), size);
    std::vector<std::string_view> out;
    while (out.size() + 1 < n) {
        auto nl = rest.find('\n');
        if (nl == std::string_view::npos) {
            break;
        }
        out.push_back(rest.substr(0, nl));
        rest.remove_prefix(nl + 1);
    }
    out.push_back(rest);
    while (out.size() < n) {
        out.emplace_back();
    }
    return out;
}

} // namespace wopbridge::fuzz
