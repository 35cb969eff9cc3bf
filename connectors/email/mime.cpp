#include "mime.hpp"
#include "wopbridge/http_util.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>

namespace wopbridge::email {
namespace {

void put_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

// windows-1252 0x80..0x9F; the five undefined bytes map to the C1 control of the same value.
constexpr std::array<std::uint16_t, 32> cp1252_high = {
    0x20AC, 0x0081, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160,
    0x2039, 0x0152, 0x008D, 0x017D, 0x008F, 0x0090, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022,
    0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x009D, 0x017E, 0x0178};

std::string cp1252_to_utf8(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size() + bytes.size() / 4);
    for (unsigned char c : bytes) {
        if (c >= 0x80 && c <= 0x9F) {
            put_utf8(out, cp1252_high[c - 0x80]);
        } else {
            put_utf8(out, c);
        }
    }
    return out;
}

bool valid_utf8(std::string_view s) {
    return sanitize_utf8(s) == s;
}

// A text fragment from a header written raw (8-bit): UTF-8 when it is valid UTF-8, else the
// de-facto legacy default.
std::string raw_header_text(std::string_view s) {
    return valid_utf8(s) ? std::string(s) : cp1252_to_utf8(s);
}

std::string_view header_of(const param_list& headers, std::string_view name) {
    for (const auto& [k, v] : headers) {
        if (k == name) {
            return v;
        }
    }
    return {};
}

// Lenient RFC 5322 header block: lines that are neither headers nor continuations (an mbox "From "
// line, garbage) are skipped rather than failing the message.
param_list parse_headers_lenient(std::string_view block) {
    param_list out;
    std::size_t pos = 0;
    bool last_valid = false;
    while (pos < block.size()) {
        auto nl = block.find('\n', pos);
        auto end = nl == std::string_view::npos ? block.size() : nl;
        auto line = block.substr(pos, end - pos);
        pos = nl == std::string_view::npos ? block.size() : nl + 1;
        if (!line.empty() && line.back() == '\r') {
            line.remove_suffix(1);
        }
        if (line.empty()) {
            continue;
        }
        if (line.front() == ' ' || line.front() == '\t') {
            if (last_valid) {
                out.back().second.append(line);
            }
            continue;
        }
        auto colon = line.find(':');
        last_valid = false;
        if (colon == std::string_view::npos || colon == 0) {
            continue;
        }
        auto name = line.substr(0, colon);
        if (std::any_of(name.begin(), name.end(), [](char c) { return c <= 32 || c >= 127; })) {
            continue;
        }
        out.emplace_back(http::to_lower(name), std::string(line.substr(colon + 1)));
        last_valid = true;
    }
    for (auto& [k, v] : out) {
        v = std::string(http::trim_whitespace(v));
    }
    return out;
}

// Splits an entity at its first empty line.
std::pair<std::string_view, std::string_view> split_entity(std::string_view raw) {
    std::size_t pos = 0;
    while (pos < raw.size()) {
        auto nl = raw.find('\n', pos);
        if (nl == std::string_view::npos) {
            return {raw, {}};
        }
        auto line = raw.substr(pos, nl - pos);
        if (line.empty() || line == "\r") {
            return {raw.substr(0, pos), raw.substr(nl + 1)};
        }
        pos = nl + 1;
    }
    return {raw, {}};
}

struct walker {
    const mime_limits& limits;
    parsed_message& msg;
    std::size_t parts = 0;
    bool have_text = false;

    void add_attachment(std::string filename, std::string media_type, std::string bytes) {
        if (msg.attachments.size() >= limits.max_attachments) {
            msg.truncated_structure = true;
            return;
        }
        msg.attachments.push_back({std::move(filename), std::move(media_type), std::move(bytes)});
    }

    void entity(const param_list& headers, std::string_view body, std::size_t depth) {
        if (++parts > limits.max_parts || depth > limits.max_depth) {
            msg.truncated_structure = true;
            return;
        }
        auto ct_text = header_of(headers, "content-type");
        auto ct = http::parse_header_value(ct_text);
        // A missing or unusable Content-Type is text/plain; us-ascii (RFC 2045 §5.2).
        if (ct.value.empty() || ct.value.find('/') == std::string::npos) {
            ct = http::parse_header_value("text/plain; charset=us-ascii");
        }
        if (ct.value.rfind("multipart/", 0) == 0) {
            auto boundary = http::boundary_of(ct_text);
            http::multipart_limits ml;
            ml.max_parts = limits.max_parts;
            ml.max_part_bytes = static_cast<std::size_t>(-1);
            ml.max_total_bytes = static_cast<std::size_t>(-1);
            ml.max_header_bytes = 64 * 1024;
            if (boundary) {
                auto split = http::parse_multipart(body, *boundary, ml, true);
                if (split.error == http::multipart_error::none) {
                    for (const auto& part : split.parts) {
                        entity(part.headers, part.body, depth + 1);
                    }
                    return;
                }
                if (split.error == http::multipart_error::too_many_parts) {
                    msg.truncated_structure = true;
                    return;
                }
            }
            // A broken multipart is shown as text rather than lost.
            leaf(headers, http::parse_header_value("text/plain"), body);
            return;
        }
        leaf(headers, ct, body);
    }

    void leaf(const param_list& headers, const http::header_value& ct, std::string_view body) {
        auto cte =
            http::to_lower(http::trim_whitespace(header_of(headers, "content-transfer-encoding")));
        std::string bytes;
        if (cte == "base64") {
            bytes = decode_base64_mime(body);
        } else if (cte == "quoted-printable") {
            bytes = decode_quoted_printable(body);
        } else {
            bytes = std::string(body);
        }
        auto disp = http::parse_header_value(header_of(headers, "content-disposition"));
        std::optional<std::string> filename = disp.param("filename");
        if (!filename) {
            filename = ct.param("name");
        }
        bool converted = true;
        std::string name_utf8 = filename ? decode_encoded_words(*filename, &converted) : "";
        bool is_text = ct.value == "text/plain" || ct.value == "text/html";
        bool inline_text =
            is_text && disp.value != "attachment" && (!filename || disp.value == "inline");
        if (!inline_text) {
            add_attachment(std::move(name_utf8), ct.value, std::move(bytes));
            return;
        }
        bool ok = true;
        auto text = to_utf8(bytes, ct.param("charset").value_or("us-ascii"), &ok);
        if (!ok) {
            msg.unconverted_charset = true;
        }
        if (ct.value == "text/html") {
            if (!msg.html) {
                msg.html = std::move(text);
            } else {
                *msg.html += "\n" + text;
            }
        } else if (!have_text) {
            msg.text = std::move(text);
            have_text = true;
        } else {
            msg.text += "\n" + text;
        }
    }
};

} // namespace

std::string decode_base64_mime(std::string_view text) {
    std::string out;
    out.reserve(text.size() * 3 / 4);
    std::uint32_t acc = 0;
    int bits = 0;
    for (char c : text) {
        int v;
        if (c >= 'A' && c <= 'Z') {
            v = c - 'A';
        } else if (c >= 'a' && c <= 'z') {
            v = c - 'a' + 26;
        } else if (c >= '0' && c <= '9') {
            v = c - '0' + 52;
        } else if (c == '+') {
            v = 62;
        } else if (c == '/') {
            v = 63;
        } else if (c == '=') {
            break;
        } else {
            continue; // line breaks, whitespace, stray bytes (RFC 2045 §6.8: ignore)
        }
        acc = (acc << 6) | static_cast<std::uint32_t>(v);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out.push_back(static_cast<char>((acc >> bits) & 0xFF));
        }
    }
    return out;
}

std::string decode_quoted_printable(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    std::size_t i = 0;
    while (i < text.size()) {
        char c = text[i];
        if (c == '=') {
            // Soft line break: '=' then optional trailing whitespace then CRLF/LF.
            std::size_t j = i + 1;
            while (j < text.size() && (text[j] == ' ' || text[j] == '\t')) {
                ++j;
            }
            if (j < text.size() && (text[j] == '\n' || (text[j] == '\r' && j + 1 < text.size() &&
                                                        text[j + 1] == '\n'))) {
                i = text[j] == '\n' ? j + 1 : j + 2;
                continue;
            }
            if (j >= text.size()) {
                i = j;
                continue;
            }
            if (i + 2 < text.size() && http::hex_digit(text[i + 1]) >= 0 &&
                http::hex_digit(text[i + 2]) >= 0) {
                out.push_back(
                    static_cast<char>(http::hex_digit(text[i + 1]) * 16 + http::hex_digit(text[i + 2])));
                i += 3;
                continue;
            }
            out.push_back('=');
            ++i;
            continue;
        }
        if (c == ' ' || c == '\t') {
            // Trailing whitespace before a hard line break is transport padding (§6.7 rule 3).
            std::size_t j = i;
            while (j < text.size() && (text[j] == ' ' || text[j] == '\t')) {
                ++j;
            }
            if (j == text.size() || text[j] == '\n' || text[j] == '\r') {
                i = j;
                continue;
            }
            out.append(text.substr(i, j - i));
            i = j;
            continue;
        }
        out.push_back(c);
        ++i;
    }
    return out;
}

std::string sanitize_utf8(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    std::size_t i = 0;
    auto bad = [&] {
        out += "\xEF\xBF\xBD";
        ++i;
    };
    while (i < s.size()) {
        auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x80) {
            out.push_back(static_cast<char>(c));
            ++i;
            continue;
        }
        std::size_t len;
        std::uint32_t cp;
        if (c >= 0xC2 && c <= 0xDF) {
            len = 2;
            cp = c & 0x1F;
        } else if (c >= 0xE0 && c <= 0xEF) {
            len = 3;
            cp = c & 0x0F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4;
            cp = c & 0x07;
        } else {
            bad();
            continue;
        }
        if (i + len > s.size()) {
            bad();
            continue;
        }
        bool ok = true;
        for (std::size_t k = 1; k < len; ++k) {
            auto cc = static_cast<unsigned char>(s[i + k]);
            if ((cc & 0xC0) != 0x80) {
                ok = false;
                break;
            }
            cp = (cp << 6) | (cc & 0x3F);
        }
        // Overlongs, surrogates and > U+10FFFF are invalid.
        if (!ok || (len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
            (cp >= 0xD800 && cp <= 0xDFFF)) {
            bad();
            continue;
        }
        out.append(s.substr(i, len));
        i += len;
    }
    return out;
}

std::string to_utf8(std::string_view bytes, std::string_view charset, bool* converted) {
    auto cs = http::to_lower(http::trim_whitespace(charset));
    if (cs.size() >= 2 && cs.front() == '"' && cs.back() == '"') {
        cs = cs.substr(1, cs.size() - 2);
    }
    if (converted != nullptr) {
        *converted = true;
    }
    if (cs.empty() || cs == "utf-8" || cs == "utf8" || cs == "us-ascii" || cs == "ascii" ||
        cs == "ansi_x3.4-1968") {
        auto out = sanitize_utf8(bytes);
        if (converted != nullptr && out != bytes) {
            *converted = false; // bytes became U+FFFD: the caller keeps the original
        }
        return out;
    }
    if (cs == "iso-8859-1" || cs == "iso8859-1" || cs == "iso_8859-1" || cs == "latin1" ||
        cs == "latin-1" || cs == "l1" || cs == "windows-1252" || cs == "cp1252" ||
        cs == "x-cp1252") {
        return cp1252_to_utf8(bytes);
    }
    if (converted != nullptr) {
        *converted = false;
    }
    return sanitize_utf8(bytes);
}

std::string decode_encoded_words(std::string_view value, bool* converted) {
    std::string out;
    if (converted != nullptr) {
        *converted = true;
    }
    std::size_t pos = 0;
    bool last_was_word = false;
    std::string pending_ws;
    while (pos < value.size()) {
        auto start = value.find("=?", pos);
        // Text up to the next encoded-word candidate.
        auto literal =
            value.substr(pos, start == std::string_view::npos ? value.npos : start - pos);
        bool decoded = false;
        std::size_t word_end = 0;
        std::string word_text;
        if (start != std::string_view::npos) {
            auto q1 = value.find('?', start + 2);
            auto q2 = q1 == std::string_view::npos ? q1 : value.find('?', q1 + 1);
            auto end = q2 == std::string_view::npos ? q2 : value.find("?=", q2 + 1);
            if (end != std::string_view::npos && q2 == q1 + 2) {
                auto charset = value.substr(start + 2, q1 - start - 2);
                if (auto star = charset.find('*'); star != std::string_view::npos) {
                    charset = charset.substr(0, star); // RFC 2231 language suffix
                }
                char enc =
                    static_cast<char>(std::toupper(static_cast<unsigned char>(value[q1 + 1])));
                auto payload = value.substr(q2 + 1, end - q2 - 1);
                if (payload.find(' ') == std::string_view::npos && (enc == 'B' || enc == 'Q')) {
                    std::string bytes;
                    if (enc == 'B') {
                        bytes = decode_base64_mime(payload);
                    } else {
                        for (std::size_t i = 0; i < payload.size(); ++i) {
                            if (payload[i] == '_') {
                                bytes.push_back(' ');
                            } else if (payload[i] == '=' && i + 2 < payload.size() &&
                                       http::hex_digit(payload[i + 1]) >= 0 &&
                                       http::hex_digit(payload[i + 2]) >= 0) {
                                bytes.push_back(static_cast<char>(http::hex_digit(payload[i + 1]) * 16 +
                                                                  http::hex_digit(payload[i + 2])));
                                i += 2;
                            } else {
                                bytes.push_back(payload[i]);
                            }
                        }
                    }
                    bool ok = true;
                    word_text = to_utf8(bytes, charset, &ok);
                    if (!ok && converted != nullptr) {
                        *converted = false;
                    }
                    decoded = true;
                    word_end = end + 2;
                }
            }
        }
        bool literal_is_ws = !literal.empty() && http::trim_whitespace(literal).empty();
        if (decoded) {
            // Whitespace between two encoded-words is not part of the text (RFC 2047 §6.2).
            if (!(last_was_word && literal_is_ws)) {
                out += raw_header_text(literal);
            }
            out += word_text;
            last_was_word = true;
            pos = word_end;
        } else if (start == std::string_view::npos) {
            out += raw_header_text(literal);
            break;
        } else {
            out += raw_header_text(value.substr(pos, start + 2 - pos));
            last_was_word = false;
            pos = start + 2;
        }
        if (!decoded) {
            continue;
        }
    }
    return out;
}

std::vector<std::string> split_address_list(std::string_view value) {
    std::vector<std::string> out;
    std::string current;
    bool quoted = false;
    int angle = 0;
    int comment = 0;
    auto flush = [&] {
        auto t = http::trim_whitespace(current);
        if (!t.empty()) {
            out.push_back(decode_encoded_words(t));
        }
        current.clear();
    };
    for (std::size_t i = 0; i < value.size(); ++i) {
        char c = value[i];
        if (quoted) {
            if (c == '\\' && i + 1 < value.size()) {
                current.push_back(c);
                current.push_back(value[++i]);
                continue;
            }
            if (c == '"') {
                quoted = false;
            }
        } else if (c == '"') {
            quoted = true;
        } else if (c == '(') {
            ++comment;
        } else if (c == ')' && comment > 0) {
            --comment;
        } else if (c == '<') {
            ++angle;
        } else if (c == '>' && angle > 0) {
            --angle;
        } else if ((c == ',' || c == ';') && angle == 0 && comment == 0) {
            flush();
            continue;
        }
        current.push_back(c);
    }
    flush();
    return out;
}

std::string address_of(std::string_view mailbox) {
    auto open = mailbox.rfind('<');
    if (open != std::string_view::npos) {
        auto close = mailbox.find('>', open);
        if (close != std::string_view::npos) {
            return std::string(http::trim_whitespace(mailbox.substr(open + 1, close - open - 1)));
        }
    }
    return std::string(http::trim_whitespace(mailbox));
}

std::optional<std::string> parsed_message::header(std::string_view name) const {
    for (const auto& [k, v] : headers) {
        if (k == name) {
            return v;
        }
    }
    return std::nullopt;
}

std::optional<parsed_message> parse_message(std::string_view raw, const mime_limits& limits) {
    auto [head, body] = split_entity(raw);
    parsed_message msg;
    msg.headers = parse_headers_lenient(head);
    if (msg.headers.empty() && !head.empty()) {
        return std::nullopt;
    }
    bool ok = true;
    msg.subject = decode_encoded_words(header_of(msg.headers, "subject"), &ok);
    msg.from = decode_encoded_words(header_of(msg.headers, "from"));
    for (auto name : {"to", "cc"}) {
        for (auto& m : split_address_list(header_of(msg.headers, name))) {
            msg.to.push_back(std::move(m));
        }
    }
    msg.message_id = std::string(http::trim_whitespace(header_of(msg.headers, "message-id")));
    if (!ok) {
        msg.unconverted_charset = true;
    }
    walker w{limits, msg};
    w.entity(msg.headers, body, 0);
    return msg;
}

} // namespace wopbridge::email
