#include "http/chunked_check.hpp"

#include <wopbridge/http_util.hpp>

#include <cctype>

namespace wopbridge::http {
namespace {

constexpr std::size_t max_trailer_line = 8192;

bool is_tchar(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
           std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

} // namespace

bool chunked_check::end_trailer_line() {
    const auto colon = line_.find(':');
    if (colon == 0 || colon == std::string::npos) {
        return false;
    }
    const std::string_view name(line_.data(), colon);
    for (char c : name) {
        if (!is_tchar(c)) {
            return false;
        }
    }
    return !iequals(name, "content-length") && !iequals(name, "transfer-encoding");
}

chunked_check::verdict chunked_check::feed(std::string_view bytes) {
    std::size_t i = 0;
    auto refuse = [this] { return verdict_ = verdict::malformed; };
    while (verdict_ == verdict::more && i < bytes.size()) {
        const char c = bytes[i];
        switch (at_) {
        case at::size:
            if (hex_digit(c) >= 0) {
                if (++digits_ > 16) {
                    return refuse();
                }
                remaining_ = remaining_ * 16 + static_cast<unsigned>(hex_digit(c));
            } else if (digits_ > 0 && c == ';') {
                at_ = at::extension;
            } else if (digits_ > 0 && (c == ' ' || c == '\t')) {
                at_ = at::size_ws; // BWS before an extension
            } else if (digits_ > 0 && c == '\r') {
                at_ = at::size_lf;
            } else {
                return refuse(); // "0x0", " 0", "-1", an empty size, a bare LF
            }
            break;
        case at::size_ws:
            if (c == ';') {
                at_ = at::extension;
            } else if (c != ' ' && c != '\t') {
                return refuse();
            }
            break;
        case at::extension:
            if (c == '"') {
                at_ = at::quoted;
            } else if (c == '\r') {
                at_ = at::size_lf;
            } else if (c == '\n' || (static_cast<unsigned char>(c) < 0x20 && c != '\t') ||
                       c == 0x7f) {
                return refuse();
            }
            break;
        case at::quoted:
        case at::quoted_escape:
            if (c == '\r' || c == '\n' || (static_cast<unsigned char>(c) < 0x20 && c != '\t') ||
                c == 0x7f) {
                return refuse(); // a line break cannot be quoted
            }
            at_ = at_ == at::quoted_escape ? at::quoted
                  : c == '\\'              ? at::quoted_escape
                  : c == '"'               ? at::extension
                                           : at::quoted;
            break;
        case at::size_lf:
            if (c != '\n') {
                return refuse();
            }
            at_ = remaining_ == 0 ? at::trailer_line : at::data; // size 0: the last chunk
            line_.clear();
            break;
        case at::data: {
            const auto n = static_cast<std::size_t>(
                std::min<unsigned long long>(remaining_, bytes.size() - i));
            remaining_ -= n;
            i += n;
            if (remaining_ == 0) {
                at_ = at::data_cr;
            }
            continue;
        }
        case at::data_cr:
            if (c != '\r') {
                return refuse(); // chunk data longer than its size, or a bare LF
            }
            at_ = at::data_lf;
            break;
        case at::data_lf:
            if (c != '\n') {
                return refuse();
            }
            at_ = at::size;
            digits_ = 0;
            break;
        case at::trailer_line:
            if (c == '\r') {
                at_ = at::trailer_lf;
            } else if (c == '\n' || line_.size() >= max_trailer_line) {
                return refuse();
            } else {
                line_.push_back(c);
            }
            break;
        case at::trailer_lf:
            if (c != '\n') {
                return refuse();
            }
            if (line_.empty()) {
                at_ = at::done;
                return verdict_ = verdict::complete;
            }
            if (!end_trailer_line()) {
                return refuse();
            }
            line_.clear();
            at_ = at::trailer_line;
            break;
        case at::done:
            return verdict_;
        }
        ++i;
    }
    return verdict_;
}

} // namespace wopbridge::http
