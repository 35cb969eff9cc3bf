#include "wopbridge/http_util.hpp"

#include <cctype>

namespace wopbridge::http {
namespace {

char lower(char c) noexcept {
    return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

bool unreserved(char c) noexcept {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

std::string_view trim(std::string_view s) noexcept {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
        s.remove_prefix(1);
    }
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) {
        s.remove_suffix(1);
    }
    return s;
}

} // namespace

std::string to_lower(std::string_view text) {
    std::string out(text);
    for (auto& c : out) {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return out;
}

std::string_view trim_whitespace(std::string_view text) noexcept {
    auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
    while (!text.empty() && space(text.front())) {
        text.remove_prefix(1);
    }
    while (!text.empty() && space(text.back())) {
        text.remove_suffix(1);
    }
    return text;
}

int hex_digit(char c) noexcept {
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

bool iequals(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) {
        return false;
    }
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (lower(a[i]) != lower(b[i])) {
            return false;
        }
    }
    return true;
}

std::optional<std::string> percent_decode(std::string_view text, bool plus_as_space) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '%') {
            if (text.size() - i < 3) {
                return std::nullopt; // truncated escape
            }
            const int hi = hex_digit(text[i + 1]);
            const int lo = hex_digit(text[i + 2]);
            if (hi < 0 || lo < 0) {
                return std::nullopt;
            }
            out += static_cast<char>((hi << 4) | lo);
            i += 2;
        } else if (c == '+' && plus_as_space) {
            out += ' ';
        } else {
            out += c;
        }
    }
    return out;
}

std::string percent_decode_lenient(std::string_view text, bool plus_as_space) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '%' && text.size() - i >= 3) {
            const int hi = hex_digit(text[i + 1]);
            const int lo = hex_digit(text[i + 2]);
            if (hi >= 0 && lo >= 0) {
                out += static_cast<char>((hi << 4) | lo);
                i += 2;
                continue;
            }
        }
        out += (c == '+' && plus_as_space) ? ' ' : c;
    }
    return out;
}

std::string percent_encode(std::string_view text, bool space_as_plus) {
    static constexpr char digits[] = "0123456789ABCDEF";
    std::string out;
    out.reserve(text.size());
    for (const char c : text) {
        if (unreserved(c)) {
            out += c;
        } else if (c == ' ' && space_as_plus) {
            out += '+';
        } else {
            const auto b = static_cast<unsigned char>(c);
            out += '%';
            out += digits[b >> 4];
            out += digits[b & 0xf];
        }
    }
    return out;
}

std::optional<param_list> parse_form_urlencoded(std::string_view body) {
    param_list out;
    while (!body.empty()) {
        const auto amp = body.find('&');
        const std::string_view part = body.substr(0, amp);
        if (!part.empty()) {
            const auto eq = part.find('=');
            auto name = percent_decode(part.substr(0, eq), true);
            auto value = percent_decode(
                eq == std::string_view::npos ? std::string_view{} : part.substr(eq + 1), true);
            if (!name || !value) {
                return std::nullopt;
            }
            out.emplace_back(std::move(*name), std::move(*value));
        }
        if (amp == std::string_view::npos) {
            break;
        }
        body.remove_prefix(amp + 1);
    }
    return out;
}

std::size_t form_field_count(std::string_view body) noexcept {
    std::size_t count = 0;
    std::size_t start = 0;
    for (std::size_t i = 0; i <= body.size(); ++i) {
        if (i == body.size() || body[i] == '&') {
            count += i > start ? 1 : 0;
            start = i + 1;
        }
    }
    return count;
}

std::optional<std::string> find_form_field(std::string_view body, std::string_view name) {
    while (!body.empty()) {
        const auto amp = body.find('&');
        const std::string_view part = body.substr(0, amp);
        const auto eq = part.find('=');
        const std::string_view raw_name = part.substr(0, eq);
        // Most names need no decoding; a decoded comparison only when an escape could match.
        const bool may_match =
            raw_name == name || raw_name.find_first_of("%+") != std::string_view::npos;
        if (!part.empty() && may_match) {
            auto decoded = percent_decode(raw_name, true);
            if (decoded && *decoded == name) {
                return percent_decode(
                    eq == std::string_view::npos ? std::string_view{} : part.substr(eq + 1), true);
            }
        }
        if (amp == std::string_view::npos) {
            break;
        }
        body.remove_prefix(amp + 1);
    }
    return std::nullopt;
}

std::string format_form_urlencoded(const param_list& params) {
    std::string out;
    for (const auto& [name, value] : params) {
        if (!out.empty()) {
            out += '&';
        }
        out += percent_encode(name, true);
        out += '=';
        out += percent_encode(value, true);
    }
    return out;
}

std::string_view query_of(std::string_view target) noexcept {
    const auto q = target.find('?');
    if (q == std::string_view::npos) {
        return {};
    }
    std::string_view query = target.substr(q + 1);
    if (const auto hash = query.find('#'); hash != std::string_view::npos) {
        query = query.substr(0, hash);
    }
    return query;
}

std::string_view path_of(std::string_view target) noexcept {
    const auto end = target.find_first_of("?#");
    return target.substr(0, end);
}

std::optional<param_list> parse_query(std::string_view target) {
    return parse_form_urlencoded(query_of(target));
}

std::optional<std::string_view>
find_header(const std::vector<std::pair<std::string, std::string>>& headers,
            std::string_view name) noexcept {
    for (const auto& [n, v] : headers) {
        if (iequals(n, name)) {
            return std::string_view(v);
        }
    }
    return std::nullopt;
}

std::optional<std::string_view> find_param(const param_list& params,
                                           std::string_view name) noexcept {
    for (const auto& [n, v] : params) {
        if (n == name) {
            return std::string_view(v);
        }
    }
    return std::nullopt;
}

std::string media_type(std::string_view content_type) {
    const auto semi = content_type.find(';');
    std::string out(trim(content_type.substr(0, semi)));
    for (char& c : out) {
        c = lower(c);
    }
    return out;
}

} // namespace wopbridge::http
