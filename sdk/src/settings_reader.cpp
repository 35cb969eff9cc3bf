#include "wopbridge/settings_reader.hpp"

#include <charconv>
#include <unistd.h>

namespace wopbridge::settings {

using kind = json::flat_value::kind;

bool printable_char(char c) noexcept {
    return c > ' ' && c <= '~';
}

bool printable_name(std::string_view text, std::size_t max) noexcept {
    if (text.empty() || text.size() > max) {
        return false;
    }
    for (const char c : text) {
        if (!printable_char(c)) {
            return false;
        }
    }
    return true;
}

std::optional<std::int64_t> integer_in(const json::flat_value& value, std::int64_t lo,
                                       std::int64_t hi) noexcept {
    if (value.type != kind::number) {
        return std::nullopt;
    }
    std::int64_t n = 0;
    const char* end = value.text.data() + value.text.size();
    auto [p, ec] = std::from_chars(value.text.data(), end, n);
    if (ec != std::errc{} || p != end || n < lo || n > hi) {
        return std::nullopt;
    }
    return n;
}

std::string host_pid_name(std::string_view prefix, std::string_view fallback_host,
                          bool (*allowed)(char)) {
    char host[256] = {0};
    std::string_view host_name = fallback_host;
    if (::gethostname(host, sizeof host - 1) == 0 && host[0] != '\0') {
        host_name = host;
    }
    std::string name =
        std::string(prefix) + std::string(host_name) + "-" + std::to_string(::getpid());
    for (auto& c : name) {
        if (!allowed(c)) {
            c = '_';
        }
    }
    return name;
}

bool every_listed(std::string_view list, std::size_t max_bytes,
                  bool (*valid)(std::string_view item)) {
    if (list.empty() || list.size() > max_bytes) {
        return false;
    }
    std::size_t start = 0;
    for (;;) {
        auto end = list.find(',', start);
        auto item = list.substr(start, end == std::string_view::npos ? end : end - start);
        while (!item.empty() && item.front() == ' ') {
            item.remove_prefix(1);
        }
        while (!item.empty() && item.back() == ' ') {
            item.remove_suffix(1);
        }
        if (!valid(item)) {
            return false;
        }
        if (end == std::string_view::npos) {
            return true;
        }
        start = end + 1;
    }
}

reader& reader::text(std::string key, std::string& out, std::size_t max_bytes) {
    return custom(std::move(key), [&out, max_bytes](const json::flat_value& value, std::string&) {
        if (value.type != kind::string || value.text.empty() || value.text.size() > max_bytes) {
            return false;
        }
        out = value.text;
        return true;
    });
}

reader& reader::text(std::string key, std::optional<std::string>& out, std::size_t max_bytes) {
    return custom(std::move(key), [&out, max_bytes](const json::flat_value& value, std::string&) {
        if (value.type != kind::string || value.text.empty() || value.text.size() > max_bytes) {
            return false;
        }
        out = value.text;
        return true;
    });
}

reader& reader::text(std::string key, std::string& out,
                     std::function<bool(std::string_view)> valid) {
    return custom(std::move(key), [&out, valid = std::move(valid)](const json::flat_value& value,
                                                                   std::string&) {
        if (value.type != kind::string || !valid(value.text)) {
            return false;
        }
        out = value.text;
        return true;
    });
}

reader& reader::text(std::string key, std::string& out,
                     std::function<bool(std::string_view)> valid, std::string refusal) {
    return custom(std::move(key), [&out, valid = std::move(valid),
                                   refusal = message(refusal)](const json::flat_value& value,
                                                               std::string& reason) {
        if (value.type != kind::string) {
            return false;
        }
        if (!valid(value.text)) {
            reason = refusal;
            return false;
        }
        out = value.text;
        return true;
    });
}

reader& reader::boolean(std::string key, bool& out) {
    return custom(std::move(key), [&out](const json::flat_value& value, std::string&) {
        if (value.type != kind::boolean) {
            return false;
        }
        out = value.text == "true";
        return true;
    });
}

reader& reader::custom(std::string key, rule check) {
    rules_.insert_or_assign(std::move(key), std::move(check));
    return *this;
}

bool reader::read(std::string_view text, std::string& error) const {
    auto object = json::parse_flat_object(text.empty() ? "{}" : text, &error);
    if (!object) {
        error = message(error);
        return false;
    }
    for (const auto& [key, value] : *object) {
        const auto rule = rules_.find(key);
        std::string reason;
        if (rule == rules_.end() || !rule->second(value, reason)) {
            error = reason.empty() ? message("invalid or unknown key '" + key + "'") : reason;
            return false;
        }
    }
    return true;
}

std::string reader::message(std::string_view reason) const {
    return context_ + ": " + std::string(reason);
}

} // namespace wopbridge::settings
