#include "wopbridge/json_util.hpp"

#include <cstdint>

namespace wopbridge::json {
namespace {

// Length of the valid UTF-8 sequence at s[i], or 0.
std::size_t utf8_len(std::string_view s, std::size_t i) noexcept {
    const auto b0 = static_cast<unsigned char>(s[i]);
    std::size_t n = 0;
    std::uint32_t cp = 0;
    if (b0 < 0x80) {
        return 1;
    } else if ((b0 & 0xE0) == 0xC0) {
        n = 2;
        cp = b0 & 0x1F;
    } else if ((b0 & 0xF0) == 0xE0) {
        n = 3;
        cp = b0 & 0x0F;
    } else if ((b0 & 0xF8) == 0xF0) {
        n = 4;
        cp = b0 & 0x07;
    } else {
        return 0;
    }
    if (i + n > s.size()) {
        return 0;
    }
    for (std::size_t k = 1; k < n; ++k) {
        const auto b = static_cast<unsigned char>(s[i + k]);
        if ((b & 0xC0) != 0x80) {
            return 0;
        }
        cp = (cp << 6) | (b & 0x3F);
    }
    const bool overlong =
        (n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000);
    if (overlong || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
        return 0;
    }
    return n;
}

void append_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

class reader {
  public:
    explicit reader(std::string_view t) : t_(t) {}

    std::optional<flat_object> object(std::string& error) {
        flat_object out;
        ws();
        if (!eat('{')) {
            return fail(error, "expected a JSON object");
        }
        ws();
        if (eat('}')) {
            return finish(out, error);
        }
        for (;;) {
            ws();
            auto key = string(error);
            if (!key) {
                return std::nullopt;
            }
            ws();
            if (!eat(':')) {
                return fail(error, "expected ':' after a key");
            }
            ws();
            auto value = scalar(error);
            if (!value) {
                return std::nullopt;
            }
            if (!out.emplace(std::move(*key), std::move(*value)).second) {
                return fail(error, "duplicate key");
            }
            ws();
            if (eat('}')) {
                return finish(out, error);
            }
            if (!eat(',')) {
                return fail(error, "expected ',' or '}'");
            }
        }
    }

  private:
    std::optional<flat_object> finish(flat_object& out, std::string& error) {
        ws();
        if (i_ != t_.size()) {
            return fail(error, "trailing data after the object");
        }
        return std::move(out);
    }

    static std::nullopt_t fail(std::string& error, const char* why) {
        error = why;
        return std::nullopt;
    }

    void ws() {
        while (i_ < t_.size() &&
               (t_[i_] == ' ' || t_[i_] == '\t' || t_[i_] == '\n' || t_[i_] == '\r')) {
            ++i_;
        }
    }
    bool eat(char c) {
        if (i_ < t_.size() && t_[i_] == c) {
            ++i_;
            return true;
        }
        return false;
    }
    bool literal(std::string_view word) {
        if (t_.substr(i_, word.size()) == word) {
            i_ += word.size();
            return true;
        }
        return false;
    }

    std::optional<std::uint32_t> hex4() {
        if (t_.size() - i_ < 4) {
            return std::nullopt;
        }
        std::uint32_t v = 0;
        for (int k = 0; k < 4; ++k) {
            const char c = t_[i_++];
            v <<= 4;
            if (c >= '0' && c <= '9') {
                v |= static_cast<std::uint32_t>(c - '0');
            } else if (c >= 'a' && c <= 'f') {
                v |= static_cast<std::uint32_t>(c - 'a' + 10);
            } else if (c >= 'A' && c <= 'F') {
                v |= static_cast<std::uint32_t>(c - 'A' + 10);
            } else {
                return std::nullopt;
            }
        }
        return v;
    }

    std::optional<std::string> string(std::string& error) {
        if (!eat('"')) {
            return fail(error, "expected a string");
        }
        std::string out;
        while (i_ < t_.size()) {
            const char c = t_[i_];
            if (c == '"') {
                ++i_;
                return out;
            }
            if (static_cast<unsigned char>(c) < 0x20) {
                return fail(error, "control character in a string");
            }
            if (c != '\\') {
                const auto n = utf8_len(t_, i_);
                if (n == 0) {
                    return fail(error, "invalid UTF-8 in a string");
                }
                out.append(t_.substr(i_, n));
                i_ += n;
                continue;
            }
            ++i_;
            if (i_ >= t_.size()) {
                break;
            }
            const char e = t_[i_++];
            switch (e) {
            case '"':
            case '\\':
            case '/':
                out += e;
                break;
            case 'b':
                out += '\b';
                break;
            case 'f':
                out += '\f';
                break;
            case 'n':
                out += '\n';
                break;
            case 'r':
                out += '\r';
                break;
            case 't':
                out += '\t';
                break;
            case 'u': {
                auto cp = hex4();
                if (!cp) {
                    return fail(error, "bad \\u escape");
                }
                if (*cp >= 0xD800 && *cp <= 0xDBFF) {
                    if (!literal("\\u")) {
                        return fail(error, "unpaired surrogate");
                    }
                    auto lo = hex4();
                    if (!lo || *lo < 0xDC00 || *lo > 0xDFFF) {
                        return fail(error, "unpaired surrogate");
                    }
                    *cp = 0x10000 + ((*cp - 0xD800) << 10) + (*lo - 0xDC00);
                } else if (*cp >= 0xDC00 && *cp <= 0xDFFF) {
                    return fail(error, "unpaired surrogate");
                }
                append_utf8(out, *cp);
                break;
            }
            default:
                return fail(error, "bad escape");
            }
        }
        return fail(error, "unterminated string");
    }

    std::optional<flat_value> scalar(std::string& error) {
        if (i_ >= t_.size()) {
            return fail(error, "expected a value");
        }
        const char c = t_[i_];
        if (c == '"') {
            auto s = string(error);
            if (!s) {
                return std::nullopt;
            }
            return flat_value{flat_value::kind::string, std::move(*s)};
        }
        if (c == '{' || c == '[') {
            return fail(error, "nested objects and arrays are not supported here");
        }
        if (literal("true")) {
            return flat_value{flat_value::kind::boolean, "true"};
        }
        if (literal("false")) {
            return flat_value{flat_value::kind::boolean, "false"};
        }
        if (literal("null")) {
            return flat_value{flat_value::kind::null, "null"};
        }
        // number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
        const std::size_t start = i_;
        eat('-');
        const auto digits = [&] {
            const std::size_t from = i_;
            while (i_ < t_.size() && t_[i_] >= '0' && t_[i_] <= '9') {
                ++i_;
            }
            return i_ - from;
        };
        if (eat('0')) {
            // no leading zeros
        } else if (digits() == 0) {
            return fail(error, "expected a value");
        }
        if (eat('.') && digits() == 0) {
            return fail(error, "bad number");
        }
        if (eat('e') || eat('E')) {
            if (!eat('+')) {
                eat('-');
            }
            if (digits() == 0) {
                return fail(error, "bad number");
            }
        }
        return flat_value{flat_value::kind::number, std::string(t_.substr(start, i_ - start))};
    }

    std::string_view t_;
    std::size_t i_ = 0;
};

} // namespace

std::string quote(std::string_view text) {
    static constexpr char hex[] = "0123456789abcdef";
    std::string out;
    out.reserve(text.size() + 2);
    out += '"';
    for (std::size_t i = 0; i < text.size();) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
            ++i;
        } else if (c < 0x20) {
            switch (c) {
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            default:
                out += "\\u00";
                out += hex[c >> 4];
                out += hex[c & 0xf];
            }
            ++i;
        } else {
            const auto n = utf8_len(text, i);
            if (n == 0) {
                out += "\xEF\xBF\xBD"; // U+FFFD
                ++i;
            } else {
                out.append(text.substr(i, n));
                i += n;
            }
        }
    }
    out += '"';
    return out;
}

bool valid_utf8(std::string_view text) noexcept {
    for (std::size_t i = 0; i < text.size();) {
        const auto n = utf8_len(text, i);
        if (n == 0) {
            return false;
        }
        i += n;
    }
    return true;
}

std::string lossy_utf8(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
        const auto n = utf8_len(text, i);
        if (n == 0) {
            out += "\xEF\xBF\xBD"; // U+FFFD
            ++i;
        } else {
            out.append(text.substr(i, n));
            i += n;
        }
    }
    return out;
}

std::optional<flat_object> parse_flat_object(std::string_view text, std::string* error) {
    std::string local;
    auto out = reader(text).object(error != nullptr ? *error : local);
    return out;
}

} // namespace wopbridge::json
