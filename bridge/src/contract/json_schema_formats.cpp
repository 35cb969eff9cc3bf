// The `format` values the validator asserts: date-time, date, time (RFC 3339), uri, uri-reference.
#include "contract/json_schema_internal.hpp"

#include <boost/url/parse.hpp>

namespace wopbridge::schema_detail {

namespace {

bool digits(std::string_view s, std::size_t pos, std::size_t n, int& out) {
    if (pos + n > s.size()) {
        return false;
    }
    out = 0;
    for (std::size_t i = pos; i < pos + n; ++i) {
        if (s[i] < '0' || s[i] > '9') {
            return false;
        }
        out = out * 10 + (s[i] - '0');
    }
    return true;
}

bool valid_full_date(std::string_view s) {
    int y = 0;
    int m = 0;
    int d = 0;
    if (s.size() != 10 || !digits(s, 0, 4, y) || s[4] != '-' || !digits(s, 5, 2, m) ||
        s[7] != '-' || !digits(s, 8, 2, d)) {
        return false;
    }
    if (m < 1 || m > 12 || d < 1) {
        return false;
    }
    static constexpr int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int max_d = days[m - 1];
    if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0)) {
        max_d = 29;
    }
    return d <= max_d;
}

// RFC 3339 full-time: HH:MM:SS[.frac](Z|+HH:MM|-HH:MM); a leap second only at 23:59:60 UTC.
bool valid_full_time(std::string_view s) {
    int h = 0;
    int mi = 0;
    int sec = 0;
    if (s.size() < 9 || !digits(s, 0, 2, h) || s[2] != ':' || !digits(s, 3, 2, mi) || s[5] != ':' ||
        !digits(s, 6, 2, sec)) {
        return false;
    }
    std::size_t i = 8;
    if (i < s.size() && s[i] == '.') {
        ++i;
        std::size_t start = i;
        while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
            ++i;
        }
        if (i == start) {
            return false;
        }
    }
    if (i >= s.size()) {
        return false;
    }
    int off_h = 0;
    int off_m = 0;
    int sign = 0;
    if (s[i] == 'Z' || s[i] == 'z') {
        if (i + 1 != s.size()) {
            return false;
        }
    } else if (s[i] == '+' || s[i] == '-') {
        sign = s[i] == '+' ? 1 : -1;
        if (s.size() != i + 6 || !digits(s, i + 1, 2, off_h) || s[i + 3] != ':' ||
            !digits(s, i + 4, 2, off_m)) {
            return false;
        }
        if (off_h > 23 || off_m > 59) {
            return false;
        }
    } else {
        return false;
    }
    if (h > 23 || mi > 59 || sec > 60) {
        return false;
    }
    if (sec == 60) {
        int utc = (h * 60 + mi - sign * (off_h * 60 + off_m)) % (24 * 60);
        if (utc < 0) {
            utc += 24 * 60;
        }
        return utc == 23 * 60 + 59;
    }
    return true;
}

bool valid_date_time(std::string_view s) {
    if (s.size() < 20) {
        return false;
    }
    if (s[10] != 'T' && s[10] != 't') {
        return false;
    }
    return valid_full_date(s.substr(0, 10)) && valid_full_time(s.substr(11));
}

bool ascii_only(std::string_view s) {
    return std::all_of(s.begin(), s.end(),
                       [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

bool valid_uri(std::string_view s) {
    return ascii_only(s) && boost::urls::parse_uri(s).has_value();
}

bool valid_uri_reference(std::string_view s) {
    return ascii_only(s) && boost::urls::parse_uri_reference(s).has_value();
}

} // namespace

std::optional<bool> check_format(std::string_view format, std::string_view s) {
    if (format == "date-time") {
        return valid_date_time(s);
    }
    if (format == "date") {
        return valid_full_date(s);
    }
    if (format == "time") {
        return valid_full_time(s);
    }
    if (format == "uri") {
        return valid_uri(s);
    }
    if (format == "uri-reference") {
        return valid_uri_reference(s);
    }
    return std::nullopt;
}

} // namespace wopbridge::schema_detail
