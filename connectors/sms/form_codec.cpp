#include "sms/form_codec.hpp"

namespace wopbridge::sms {
namespace {

int hex_digit(char c) {
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

} // namespace

std::optional<std::string> form_decode(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '+') {
            out.push_back(' ');
        } else if (c == '%') {
            if (i + 2 >= text.size()) {
                return std::nullopt;
            }
            const int hi = hex_digit(text[i + 1]);
            const int lo = hex_digit(text[i + 2]);
            if (hi < 0 || lo < 0) {
                return std::nullopt;
            }
            out.push_back(static_cast<char>(hi * 16 + lo));
            i += 2;
        } else {
            out.push_back(c);
        }
    }
    return out;
}

std::optional<form_fields> parse_form(std::string_view body) {
    form_fields fields;
    while (!body.empty()) {
        const auto amp = body.find('&');
        const std::string_view part = body.substr(0, amp);
        if (!part.empty()) {
            const auto eq = part.find('=');
            auto name = form_decode(part.substr(0, eq));
            auto value = form_decode(eq == std::string_view::npos ? std::string_view{}
                                                                  : part.substr(eq + 1));
            if (!name || !value) {
                return std::nullopt;
            }
            fields.emplace_back(std::move(*name), std::move(*value));
        }
        if (amp == std::string_view::npos) {
            break;
        }
        body.remove_prefix(amp + 1);
    }
    return fields;
}

std::optional<std::string_view> form_value(const form_fields& fields, std::string_view name) {
    for (const auto& [n, v] : fields) {
        if (n == name) {
            return std::string_view(v);
        }
    }
    return std::nullopt;
}

} // namespace wopbridge::sms
