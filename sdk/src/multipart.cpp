#include "wopbridge/multipart.hpp"

#include <algorithm>
#include <cctype>

namespace wopbridge::http {
namespace {

// RFC 2231: charset'language'percent-encoded. The bytes are kept; callers treat them as UTF-8.
std::string decode_rfc2231(std::string_view v) {
    auto first = v.find('\'');
    if (first != std::string_view::npos) {
        auto second = v.find('\'', first + 1);
        if (second != std::string_view::npos) {
            v.remove_prefix(second + 1);
        }
    }
    return percent_decode_lenient(v);
}

bool is_bchar(char c) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
        return true;
    }
    return std::string_view("'()+_,-./:=? ").find(c) != std::string_view::npos;
}

// Position just past the line break at `pos` (CRLF or LF), or npos when there is none.
std::size_t past_line_break(std::string_view s, std::size_t pos) {
    if (pos < s.size() && s[pos] == '\n') {
        return pos + 1;
    }
    if (pos + 1 < s.size() && s[pos] == '\r' && s[pos + 1] == '\n') {
        return pos + 2;
    }
    return std::string_view::npos;
}

} // namespace

std::optional<std::string> header_value::param(std::string_view name) const {
    for (const auto& [k, v] : params) {
        if (k == name) {
            return v;
        }
    }
    return std::nullopt;
}

std::optional<std::string> multipart_part::header(std::string_view name) const {
    for (const auto& [k, v] : headers) {
        if (k == name) {
            return v;
        }
    }
    return std::nullopt;
}

header_value parse_header_value(std::string_view text) {
    header_value out;
    std::size_t i = 0;
    auto semi = text.find(';');
    out.value = to_lower(trim_whitespace(text.substr(0, semi)));
    if (semi == std::string_view::npos) {
        return out;
    }
    i = semi + 1;
    param_list star_params;
    while (i < text.size()) {
        while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == ';' ||
                                   text[i] == '\r' || text[i] == '\n')) {
            ++i;
        }
        auto eq = text.find('=', i);
        if (eq == std::string_view::npos) {
            break;
        }
        std::string name = to_lower(trim_whitespace(text.substr(i, eq - i)));
        i = eq + 1;
        while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) {
            ++i;
        }
        std::string value;
        if (i < text.size() && text[i] == '"') {
            ++i;
            while (i < text.size() && text[i] != '"') {
                // Browsers do not escape backslashes in filenames ("C:\x"); only \" and \\ are
                // treated as escapes.
                if (text[i] == '\\' && i + 1 < text.size() &&
                    (text[i + 1] == '"' || text[i + 1] == '\\')) {
                    ++i;
                }
                value.push_back(text[i]);
                ++i;
            }
            ++i; // closing quote
            auto next = text.find(';', i);
            i = next == std::string_view::npos ? text.size() : next + 1;
        } else {
            auto next = text.find(';', i);
            auto end = next == std::string_view::npos ? text.size() : next;
            value = std::string(trim_whitespace(text.substr(i, end - i)));
            i = next == std::string_view::npos ? text.size() : next + 1;
        }
        if (name.empty()) {
            continue;
        }
        if (name.back() == '*') {
            name.pop_back();
            star_params.emplace_back(std::move(name), decode_rfc2231(value));
        } else {
            out.params.emplace_back(std::move(name), std::move(value));
        }
    }
    // RFC 2231 values win over their plain counterparts (filename*= beats filename=).
    for (auto& [name, value] : star_params) {
        // A plain reference: clang 14 (the fuzz build) cannot capture structured bindings.
        const std::string& key = name;
        auto it = std::find_if(out.params.begin(), out.params.end(),
                               [&](const auto& p) { return p.first == key; });
        if (it != out.params.end()) {
            it->second = value;
        } else {
            out.params.emplace_back(name, value);
        }
    }
    return out;
}

std::string_view to_string(multipart_error e) noexcept {
    switch (e) {
    case multipart_error::none:
        return "none";
    case multipart_error::no_boundary:
        return "no_boundary";
    case multipart_error::malformed:
        return "malformed";
    case multipart_error::too_many_parts:
        return "too_many_parts";
    case multipart_error::part_too_large:
        return "part_too_large";
    case multipart_error::too_large:
        return "too_large";
    }
    return "unknown";
}

std::optional<std::string> boundary_of(std::string_view content_type) {
    auto hv = parse_header_value(content_type);
    if (hv.value.rfind("multipart/", 0) != 0) {
        return std::nullopt;
    }
    auto b = hv.param("boundary");
    if (!b || b->empty() || b->size() > 70 || b->back() == ' ') {
        return std::nullopt;
    }
    for (char c : *b) {
        if (!is_bchar(c)) {
            return std::nullopt;
        }
    }
    return b;
}

std::optional<param_list> parse_header_block(std::string_view block) {
    param_list out;
    std::size_t pos = 0;
    while (pos < block.size()) {
        auto nl = block.find('\n', pos);
        auto end = nl == std::string_view::npos ? block.size() : nl;
        auto line = block.substr(pos, end - pos);
        if (!line.empty() && line.back() == '\r') {
            line.remove_suffix(1);
        }
        pos = nl == std::string_view::npos ? block.size() : nl + 1;
        if (line.empty()) {
            continue;
        }
        if (line.front() == ' ' || line.front() == '\t') {
            if (out.empty()) {
                return std::nullopt;
            }
            // Unfolding removes the line break only; the whitespace stays (RFC 5322 §2.2.3).
            out.back().second.append(line);
            continue;
        }
        auto colon = line.find(':');
        if (colon == std::string_view::npos || colon == 0) {
            return std::nullopt;
        }
        auto name = line.substr(0, colon);
        for (char c : name) {
            if (c <= 32 || c >= 127) {
                return std::nullopt;
            }
        }
        out.emplace_back(to_lower(name), std::string(line.substr(colon + 1)));
    }
    for (auto& [k, v] : out) {
        v = std::string(trim_whitespace(v));
    }
    return out;
}

multipart_result parse_multipart(std::string_view body, std::string_view boundary,
                                 const multipart_limits& limits, bool lenient) {
    multipart_result result;
    if (body.size() > limits.max_total_bytes) {
        result.error = multipart_error::too_large;
        return result;
    }
    if (boundary.empty()) {
        result.error = multipart_error::no_boundary;
        return result;
    }
    const std::string delim = "--" + std::string(boundary);

    // A delimiter line: at the start of the body or right after a line break, followed by "--",
    // transport padding, then a line break (or the end of the body).
    auto find_delimiter = [&](std::size_t from, std::size_t& line_start) -> std::size_t {
        std::size_t pos = from;
        while (true) {
            auto hit = body.find(delim, pos);
            if (hit == std::string_view::npos) {
                return std::string_view::npos;
            }
            bool at_line_start = hit == 0 || body[hit - 1] == '\n';
            if (at_line_start) {
                std::size_t after = hit + delim.size();
                bool ok = after == body.size() || body[after] == '\r' || body[after] == '\n' ||
                          body[after] == ' ' || body[after] == '\t' ||
                          (after + 1 < body.size() && body[after] == '-' && body[after + 1] == '-');
                if (ok) {
                    line_start = hit;
                    if (hit >= 1 && body[hit - 1] == '\n') {
                        line_start = hit - 1;
                        if (hit >= 2 && body[hit - 2] == '\r') {
                            line_start = hit - 2;
                        }
                    }
                    return hit;
                }
            }
            pos = hit + 1;
        }
    };

    std::size_t line_start = 0;
    auto hit = find_delimiter(0, line_start);
    if (hit == std::string_view::npos) {
        result.error = multipart_error::malformed;
        return result;
    }
    while (true) {
        std::size_t after = hit + delim.size();
        if (body.substr(after, 2) == "--") {
            return result; // close delimiter; the epilogue is ignored
        }
        while (after < body.size() && (body[after] == ' ' || body[after] == '\t')) {
            ++after;
        }
        auto content_start = past_line_break(body, after);
        if (content_start == std::string_view::npos) {
            if (lenient && after >= body.size()) {
                return result;
            }
            result.error = multipart_error::malformed;
            return result;
        }
        std::size_t next_line_start = 0;
        auto next = find_delimiter(content_start, next_line_start);
        std::string_view part_bytes;
        if (next == std::string_view::npos) {
            if (!lenient) {
                result.error = multipart_error::malformed;
                return result;
            }
            part_bytes = body.substr(content_start);
        } else {
            // The line break before the delimiter belongs to the delimiter.
            part_bytes = body.substr(content_start, next_line_start - content_start);
            if (next_line_start < content_start) {
                part_bytes = {};
            }
        }
        if (result.parts.size() >= limits.max_parts) {
            result.error = multipart_error::too_many_parts;
            return result;
        }
        // Headers end at the first empty line; a part that starts with a line break has none.
        std::size_t header_end = std::string_view::npos;
        std::size_t body_start = 0;
        if (auto lb = past_line_break(part_bytes, 0); lb != std::string_view::npos) {
            header_end = 0;
            body_start = lb;
        } else {
            auto crlf = part_bytes.find("\r\n\r\n");
            auto lflf = part_bytes.find("\n\n");
            if (crlf != std::string_view::npos && (lflf == std::string_view::npos || crlf < lflf)) {
                header_end = crlf;
                body_start = crlf + 4;
            } else if (lflf != std::string_view::npos) {
                header_end = lflf;
                body_start = lflf + 2;
            }
        }
        if (header_end == std::string_view::npos) {
            if (!lenient) {
                result.error = multipart_error::malformed;
                return result;
            }
            header_end = part_bytes.size();
            body_start = part_bytes.size();
        }
        if (header_end > limits.max_header_bytes) {
            result.error = multipart_error::malformed;
            return result;
        }
        auto headers = parse_header_block(part_bytes.substr(0, header_end));
        if (!headers) {
            result.error = multipart_error::malformed;
            return result;
        }
        auto content = part_bytes.substr(body_start);
        if (content.size() > limits.max_part_bytes) {
            result.error = multipart_error::part_too_large;
            return result;
        }
        result.parts.push_back(multipart_part{std::move(*headers), std::string(content)});
        if (next == std::string_view::npos) {
            return result;
        }
        hit = next;
    }
}

std::optional<form_part_info> form_part_info_of(const multipart_part& part) {
    auto cd = part.header("content-disposition");
    if (!cd) {
        return std::nullopt;
    }
    auto hv = parse_header_value(*cd);
    if (hv.value != "form-data") {
        return std::nullopt;
    }
    auto name = hv.param("name");
    if (!name) {
        return std::nullopt;
    }
    form_part_info info;
    info.name = *name;
    info.filename = hv.param("filename");
    if (auto ct = part.header("content-type")) {
        info.media_type = parse_header_value(*ct).value;
    }
    return info;
}

} // namespace wopbridge::http
