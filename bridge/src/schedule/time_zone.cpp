#include "schedule/time_zone.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <unordered_map>

namespace wopbridge {

std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) noexcept {
    y -= m <= 2;
    const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
    const auto yoe = static_cast<unsigned>(y - era * 400);
    const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

void civil_from_days(std::int64_t z, std::int64_t& y, unsigned& m, unsigned& d) noexcept {
    z += 719468;
    const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    const auto doe = static_cast<unsigned>(z - era * 146097);
    const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const unsigned mp = (5 * doy + 2) / 153;
    d = doy - (153 * mp + 2) / 5 + 1;
    m = mp < 10 ? mp + 3 : mp - 9;
    y = static_cast<std::int64_t>(yoe) + era * 400 + (m <= 2);
}

unsigned weekday_from_days(std::int64_t z) noexcept {
    return static_cast<unsigned>(z >= -4 ? (z + 4) % 7 : (z + 5) % 7 + 6);
}

bool is_leap_year(std::int64_t y) noexcept {
    return y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
}

unsigned days_in_month(std::int64_t y, unsigned m) noexcept {
    static constexpr unsigned days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && is_leap_year(y) ? 29 : days[m - 1];
}

namespace {

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
    std::int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

// ---- POSIX TZ strings ----------------------------------------------------------------------------

struct posix_cursor {
    std::string_view s;
    std::size_t i = 0;
    bool done() const { return i >= s.size(); }
    char peek() const { return done() ? '\0' : s[i]; }
};

bool parse_tz_name(posix_cursor& c) {
    if (c.peek() == '<') {
        auto close = c.s.find('>', c.i);
        if (close == std::string_view::npos || close - c.i < 4) {
            return false;
        }
        c.i = close + 1;
        return true;
    }
    std::size_t start = c.i;
    while (!c.done() && ((c.peek() >= 'A' && c.peek() <= 'Z') || (c.peek() >= 'a' && c.peek() <= 'z'))) {
        ++c.i;
    }
    return c.i - start >= 3;
}

bool parse_number(posix_cursor& c, int& out, int max_digits = 3) {
    int v = 0;
    int n = 0;
    while (!c.done() && c.peek() >= '0' && c.peek() <= '9' && n < max_digits) {
        v = v * 10 + (c.peek() - '0');
        ++c.i;
        ++n;
    }
    out = v;
    return n > 0;
}

// [+|-]hh[:mm[:ss]] -> seconds
bool parse_hms(posix_cursor& c, std::int64_t& out) {
    int sign = 1;
    if (c.peek() == '+' || c.peek() == '-') {
        sign = c.peek() == '-' ? -1 : 1;
        ++c.i;
    }
    int h = 0, m = 0, sec = 0;
    if (!parse_number(c, h)) {
        return false;
    }
    if (c.peek() == ':') {
        ++c.i;
        if (!parse_number(c, m, 2)) {
            return false;
        }
        if (c.peek() == ':') {
            ++c.i;
            if (!parse_number(c, sec, 2)) {
                return false;
            }
        }
    }
    out = sign * (static_cast<std::int64_t>(h) * 3600 + m * 60 + sec);
    return true;
}

bool parse_date_rule(posix_cursor& c, time_zone::posix_rule::date_rule& r) {
    if (c.peek() == 'M') {
        ++c.i;
        r.kind = 'M';
        if (!parse_number(c, r.month, 2) || c.peek() != '.') {
            return false;
        }
        ++c.i;
        if (!parse_number(c, r.week, 1) || c.peek() != '.') {
            return false;
        }
        ++c.i;
        if (!parse_number(c, r.day, 1)) {
            return false;
        }
        if (r.month < 1 || r.month > 12 || r.week < 1 || r.week > 5 || r.day > 6) {
            return false;
        }
    } else if (c.peek() == 'J') {
        ++c.i;
        r.kind = 'J';
        if (!parse_number(c, r.day) || r.day < 1 || r.day > 365) {
            return false;
        }
    } else {
        r.kind = 'N';
        if (!parse_number(c, r.day) || r.day > 365) {
            return false;
        }
    }
    r.time = 7200;
    if (c.peek() == '/') {
        ++c.i;
        if (!parse_hms(c, r.time)) {
            return false;
        }
    }
    return true;
}

// Local (wall-clock, in the offset in force before it) seconds since epoch of a rule date in `year`.
std::int64_t rule_local_seconds(const time_zone::posix_rule::date_rule& r, std::int64_t year) {
    std::int64_t day = 0;
    if (r.kind == 'M') {
        std::int64_t first = days_from_civil(year, static_cast<unsigned>(r.month), 1);
        unsigned wd = weekday_from_days(first);
        int delta = (r.day - static_cast<int>(wd) + 7) % 7;
        std::int64_t d = first + delta + (r.week - 1) * 7;
        std::int64_t last = first + days_in_month(year, static_cast<unsigned>(r.month)) - 1;
        while (d > last) {
            d -= 7;
        }
        day = d;
    } else if (r.kind == 'J') {
        // 1..365, February 29 never counted.
        day = days_from_civil(year, 1, 1) + r.day - 1;
        if (is_leap_year(year) && r.day >= 60) {
            day += 1;
        }
    } else {
        day = days_from_civil(year, 1, 1) + r.day;
    }
    return day * 86400 + r.time;
}

std::uint32_t be32(const unsigned char* p) {
    return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
}

std::int64_t be64(const unsigned char* p) {
    return static_cast<std::int64_t>((std::uint64_t{be32(p)} << 32) | be32(p + 4));
}

bool valid_zone_name(std::string_view n) {
    if (n.empty() || n.front() == '/' || n.find("..") != std::string_view::npos || n.size() > 255) {
        return false;
    }
    return std::all_of(n.begin(), n.end(), [](char ch) {
        return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
               ch == '/' || ch == '_' || ch == '-' || ch == '+';
    });
}

// "+HH:MM" / "-HH:MM" / "+HH"
bool parse_fixed_offset(std::string_view n, std::int64_t& out) {
    if (n.size() < 3 || (n[0] != '+' && n[0] != '-')) {
        return false;
    }
    auto dig = [](char ch) { return ch >= '0' && ch <= '9'; };
    if (!dig(n[1]) || !dig(n[2])) {
        return false;
    }
    int h = (n[1] - '0') * 10 + (n[2] - '0');
    int m = 0;
    if (n.size() == 6 && n[3] == ':' && dig(n[4]) && dig(n[5])) {
        m = (n[4] - '0') * 10 + (n[5] - '0');
    } else if (n.size() != 3) {
        return false;
    }
    if (h > 14 || m > 59) {
        return false;
    }
    out = (n[0] == '-' ? -1 : 1) * (h * 3600 + m * 60);
    return true;
}

} // namespace

bool time_zone::parse_posix_rule(std::string_view text, posix_rule& out) {
    posix_cursor c{text};
    posix_rule r;
    if (!parse_tz_name(c)) {
        return false;
    }
    std::int64_t std_west = 0;
    if (!parse_hms(c, std_west)) {
        return false;
    }
    r.std_offset = -std_west;
    if (c.done()) {
        out = r;
        return true;
    }
    if (!parse_tz_name(c)) {
        return false;
    }
    r.has_dst = true;
    r.dst_offset = r.std_offset + 3600;
    if (c.peek() != ',' && !c.done()) {
        std::int64_t dst_west = 0;
        if (!parse_hms(c, dst_west)) {
            return false;
        }
        r.dst_offset = -dst_west;
    }
    if (c.peek() != ',') {
        // No rule: POSIX leaves it implementation-defined; zic always writes one.
        return false;
    }
    ++c.i;
    if (!parse_date_rule(c, r.start) || c.peek() != ',') {
        return false;
    }
    ++c.i;
    if (!parse_date_rule(c, r.end) || !c.done()) {
        return false;
    }
    out = r;
    return true;
}

std::int64_t time_zone::rule_offset_at(std::int64_t u) const {
    if (!rule_.has_dst) {
        return rule_.std_offset;
    }
    std::int64_t y = 0;
    unsigned m = 0, d = 0;
    civil_from_days(floor_div(u + rule_.std_offset, 86400), y, m, d);
    // DST starts at a local standard time and ends at a local daylight time.
    std::int64_t start = rule_local_seconds(rule_.start, y) - rule_.std_offset;
    std::int64_t end = rule_local_seconds(rule_.end, y) - rule_.dst_offset;
    bool dst = start < end ? (u >= start && u < end) : !(u >= end && u < start);
    return dst ? rule_.dst_offset : rule_.std_offset;
}

std::int64_t time_zone::offset_at(std::int64_t u) const {
    if (transitions_.empty() || u >= transitions_.back()) {
        if (has_rule_) {
            return rule_offset_at(u);
        }
        return transitions_.empty() ? initial_offset_ : offsets_after_.back();
    }
    auto it = std::upper_bound(transitions_.begin(), transitions_.end(), u);
    if (it == transitions_.begin()) {
        return initial_offset_;
    }
    return offsets_after_[static_cast<std::size_t>(it - transitions_.begin() - 1)];
}

struct time_zone_loader {
    static std::shared_ptr<time_zone> from_tzif(const std::string& name, const std::string& bytes,
                                                std::string& error) {
        auto z = std::make_shared<time_zone>();
        z->name_ = name;
        const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
        std::size_t n = bytes.size();
        auto bad = [&] {
            error = "time zone '" + name + "': not a valid TZif file";
            return nullptr;
        };
        if (n < 44 || bytes.compare(0, 4, "TZif") != 0) {
            return bad();
        }
        auto counts = [&](std::size_t at, std::uint32_t c[6]) {
            for (int i = 0; i < 6; ++i) {
                c[i] = be32(p + at + 20 + 4 * i);
            }
        };
        std::uint32_t c1[6];
        counts(0, c1);
        // isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt
        auto block_size = [](const std::uint32_t c[6], std::size_t tsize) {
            return c[3] * tsize + c[3] + c[4] * 6 + c[5] + c[2] * (tsize + 4) + c[1] + c[0];
        };
        std::size_t at = 44;
        std::size_t tsize = 4;
        std::uint32_t c[6];
        std::copy(c1, c1 + 6, c);
        char version = bytes[4];
        if (version >= '2') {
            std::size_t v2 = 44 + block_size(c1, 4);
            if (v2 + 44 > n || bytes.compare(v2, 4, "TZif") != 0) {
                return bad();
            }
            counts(v2, c);
            at = v2 + 44;
            tsize = 8;
        }
        if (c[4] == 0 || at + block_size(c, tsize) > n) {
            return bad();
        }
        const unsigned char* times = p + at;
        const unsigned char* idx = times + c[3] * tsize;
        const unsigned char* types = idx + c[3];
        std::vector<std::int64_t> utoff(c[4]);
        for (std::uint32_t i = 0; i < c[4]; ++i) {
            utoff[i] = static_cast<std::int32_t>(be32(types + 6 * i));
        }
        z->initial_offset_ = utoff[0];
        for (std::uint32_t i = 0; i < c[3]; ++i) {
            std::int64_t t = tsize == 8 ? be64(times + 8 * i) : static_cast<std::int32_t>(be32(times + 4 * i));
            if (idx[i] >= c[4]) {
                return bad();
            }
            z->transitions_.push_back(t);
            z->offsets_after_.push_back(utoff[idx[i]]);
        }
        if (!std::is_sorted(z->transitions_.begin(), z->transitions_.end())) {
            return bad();
        }
        if (version >= '2') {
            std::size_t footer = at + block_size(c, tsize);
            if (footer < n && bytes[footer] == '\n') {
                auto end = bytes.find('\n', footer + 1);
                if (end != std::string::npos && end > footer + 1) {
                    std::string_view rule(bytes.data() + footer + 1, end - footer - 1);
                    if (time_zone::parse_posix_rule(rule, z->rule_)) {
                        z->has_rule_ = true;
                    }
                }
            }
        }
        return z;
    }
};

std::shared_ptr<const time_zone> time_zone::utc() {
    static const auto z = [] {
        auto t = std::make_shared<time_zone>();
        t->name_ = "UTC";
        return t;
    }();
    return z;
}

std::shared_ptr<const time_zone> time_zone::load(std::string_view name, std::string& error) {
    if (name.empty() || name == "UTC" || name == "Etc/UTC" || name == "GMT" || name == "Etc/GMT" ||
        name == "Z") {
        return utc();
    }
    std::int64_t fixed = 0;
    if (parse_fixed_offset(name, fixed)) {
        auto z = std::make_shared<time_zone>();
        z->name_ = std::string(name);
        z->initial_offset_ = fixed;
        return z;
    }
    if (!valid_zone_name(name)) {
        error = "invalid time zone name '" + std::string(name) +
                "' (expected UTC, +HH:MM, or an IANA name such as Europe/Berlin)";
        return nullptr;
    }
    // Zones are immutable once loaded; cache them (the tz database does not change under us in a
    // way a restart would not pick up).
    static std::mutex mu;
    static std::unordered_map<std::string, std::shared_ptr<const time_zone>> cache;
    std::lock_guard lock(mu);
    auto found = cache.find(std::string(name));
    if (found != cache.end()) {
        return found->second;
    }
    const char* dir = std::getenv("TZDIR");
    std::string path = std::string(dir && *dir ? dir : "/usr/share/zoneinfo") + "/" + std::string(name);
    // Only regular files: a region directory ("Europe") opens fine but its read throws
    // std::ios_base::failure out of the streambuf (found by tests/fuzz/cron_fuzz), and a FIFO
    // would block.
    std::error_code ec;
    std::ifstream in;
    if (std::filesystem::is_regular_file(path, ec)) {
        in.open(path, std::ios::binary);
    }
    if (!in.is_open()) {
        error = "unknown time zone '" + std::string(name) + "' (not in the system tz database)";
        return nullptr;
    }
    std::string bytes;
    try {
        bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    } catch (const std::ios_base::failure&) {
        error = "unknown time zone '" + std::string(name) + "' (unreadable tz database entry)";
        return nullptr;
    }
    auto z = time_zone_loader::from_tzif(std::string(name), bytes, error);
    if (!z) {
        return nullptr;
    }
    cache.emplace(std::string(name), z);
    return z;
}

} // namespace wopbridge
