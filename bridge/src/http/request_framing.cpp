#include "http/request_framing.hpp"

#include <cctype>
#include <limits>

namespace wopbridge::http {
namespace {

bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) {
        return false;
    }
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (std::tolower(static_cast<unsigned char>(a[i])) !=
            std::tolower(static_cast<unsigned char>(b[i]))) {
            return false;
        }
    }
    return true;
}

std::string_view trim_ows(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
        s.remove_prefix(1);
    }
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) {
        s.remove_suffix(1);
    }
    return s;
}

// 1*DIGIT and nothing else: no sign, no list ("5, 5"), no overflow.
bool parse_length(std::string_view s, std::uint64_t& out) {
    if (s.empty()) {
        return false;
    }
    std::uint64_t v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') {
            return false;
        }
        auto d = static_cast<std::uint64_t>(c - '0');
        if (v > (std::numeric_limits<std::uint64_t>::max() - d) / 10) {
            return false;
        }
        v = v * 10 + d;
    }
    out = v;
    return true;
}

} // namespace

result<request_framing> framing_of(std::span<const header_view> fields) {
    int lengths = 0;
    int encodings = 0;
    std::string_view length_value;
    std::string_view encoding_value;
    for (const auto& [name, value] : fields) {
        if (iequals(name, "content-length")) {
            ++lengths;
            length_value = value;
        } else if (iequals(name, "transfer-encoding")) {
            ++encodings;
            encoding_value = value;
        }
    }
    const auto refused = make_error_code(errc::invalid_argument);
    request_framing f;
    if (encodings > 0) {
        // Both headers, several codings or a coding we do not decode: a front proxy may frame it
        // another way (RFC 9112 §6.3 says such a message must be treated as an error and closed).
        if (encodings > 1 || lengths > 0 || !iequals(trim_ows(encoding_value), "chunked")) {
            return refused;
        }
        f.kind = body_framing::chunked;
        return f;
    }
    if (lengths > 0) {
        // Duplicates are refused even when equal: intermediaries disagree on which one wins.
        if (lengths > 1 || !parse_length(trim_ows(length_value), f.content_length)) {
            return refused;
        }
        f.kind = body_framing::content_length;
    }
    return f;
}

} // namespace wopbridge::http
