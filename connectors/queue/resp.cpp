#include "queue/resp.hpp"

#include <algorithm>
#include <charconv>

namespace wopbridge::queue {

std::string_view resp_value::error_code() const noexcept {
    if (type != kind::error) {
        return {};
    }
    const std::string_view t(text);
    return t.substr(0, t.find(' '));
}

void append_command(std::string& out, const std::vector<std::string>& args) {
    out += '*';
    out += std::to_string(args.size());
    out += "\r\n";
    for (const auto& a : args) {
        out += '$';
        out += std::to_string(a.size());
        out += "\r\n";
        out += a;
        out += "\r\n";
    }
}

std::string encode_command(const std::vector<std::string>& args) {
    std::string out;
    append_command(out, args);
    return out;
}

void resp_parser::feed(std::string_view bytes) {
    // Compact once the consumed prefix dominates, so a long-lived connection does not grow.
    if (pos_ > 0 && pos_ >= buf_.size() / 2) {
        buf_.erase(0, pos_);
        wanted_ = wanted_ > pos_ ? wanted_ - pos_ : 0;
        pos_ = 0;
    }
    buf_.append(bytes);
}

void resp_parser::reset() {
    buf_.clear();
    pos_ = 0;
    wanted_ = 0;
}

resp_parser::state resp_parser::next(resp_value& out, std::string& error) {
    if (pos_ >= buf_.size() || buf_.size() < wanted_) {
        return state::incomplete;
    }
    std::size_t pos = pos_;
    resp_value v;
    switch (parse(pos, 0, v, error)) {
    case step::done:
        pos_ = pos;
        wanted_ = 0;
        out = std::move(v);
        return state::value;
    case step::more:
        return state::incomplete;
    case step::bad:
        break;
    }
    return state::error;
}

resp_parser::step resp_parser::read_line(std::size_t& pos, std::string_view& line) {
    const auto end = buf_.find("\r\n", pos);
    if (end == std::string::npos) {
        // A header line longer than any length or simple string we accept is garbage.
        if (buf_.size() - pos > 64 * 1024) {
            return step::bad;
        }
        return step::more;
    }
    line = std::string_view(buf_).substr(pos, end - pos);
    pos = end + 2;
    return step::done;
}

namespace {

bool parse_int(std::string_view s, std::int64_t& out) {
    if (s.empty()) {
        return false;
    }
    const char* first = s.data();
    const char* last = s.data() + s.size();
    auto [p, ec] = std::from_chars(first, last, out);
    return ec == std::errc{} && p == last;
}

} // namespace

resp_parser::step resp_parser::parse(std::size_t& pos, int depth, resp_value& out,
                                     std::string& error) {
    if (depth > limits_.max_depth) {
        error = "reply nested too deeply";
        return step::bad;
    }
    if (pos >= buf_.size()) {
        return step::more;
    }
    const char type = buf_[pos];
    std::size_t p = pos + 1;
    std::string_view line;
    const step s = read_line(p, line);
    if (s == step::bad) {
        error = "reply line too long";
        return s;
    }
    if (s == step::more) {
        return s;
    }
    switch (type) {
    case '+':
        out.type = resp_value::kind::simple;
        out.text.assign(line);
        break;
    case '-':
        out.type = resp_value::kind::error;
        out.text.assign(line);
        break;
    case ':':
        out.type = resp_value::kind::integer;
        if (!parse_int(line, out.integer)) {
            error = "malformed integer reply";
            return step::bad;
        }
        break;
    case '$': {
        std::int64_t n = 0;
        if (!parse_int(line, n) || n < -1) {
            error = "malformed bulk length";
            return step::bad;
        }
        if (n == -1) {
            out.type = resp_value::kind::null;
            break;
        }
        if (static_cast<std::uint64_t>(n) > limits_.max_bulk_bytes) {
            error = "bulk string exceeds the size limit";
            return step::bad;
        }
        const std::size_t need = p + static_cast<std::size_t>(n) + 2;
        if (buf_.size() < need) {
            wanted_ = need;
            return step::more;
        }
        if (buf_[need - 2] != '\r' || buf_[need - 1] != '\n') {
            error = "bulk string not terminated by CRLF";
            return step::bad;
        }
        out.type = resp_value::kind::bulk;
        out.text.assign(buf_, p, static_cast<std::size_t>(n));
        p = need;
        break;
    }
    case '*': {
        std::int64_t n = 0;
        if (!parse_int(line, n) || n < -1) {
            error = "malformed array length";
            return step::bad;
        }
        if (n == -1) {
            out.type = resp_value::kind::null;
            break;
        }
        if (static_cast<std::uint64_t>(n) > limits_.max_array_elements) {
            error = "array exceeds the element limit";
            return step::bad;
        }
        out.type = resp_value::kind::array;
        // Every element takes at least 3 bytes: do not reserve what cannot have arrived.
        out.elements.reserve(
            std::min<std::size_t>(static_cast<std::size_t>(n), (buf_.size() - p) / 3 + 1));
        for (std::int64_t i = 0; i < n; ++i) {
            resp_value element;
            const step e = parse(p, depth + 1, element, error);
            if (e != step::done) {
                return e;
            }
            out.elements.push_back(std::move(element));
        }
        break;
    }
    default:
        error = "unknown reply type byte";
        return step::bad;
    }
    pos = p;
    return step::done;
}

} // namespace wopbridge::queue
