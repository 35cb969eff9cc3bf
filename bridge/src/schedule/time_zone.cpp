#include "schedule/time_zone.hpp"

#include <cctz/time_zone.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
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

std::int64_t time_zone::offset_at(std::int64_t utc_seconds) const {
    if (!zone_) {
        return fixed_offset_;
    }
    const auto at = std::chrono::system_clock::time_point(std::chrono::seconds(utc_seconds));
    return zone_->lookup(at).offset;
}

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
        z->fixed_offset_ = fixed;
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
    // cctz reads $TZDIR (else /usr/share/zoneinfo) itself. Only regular files are handed to it: a
    // region directory ("Europe") is no zone, and a FIFO would block its read.
    const char* dir = std::getenv("TZDIR");
    const std::string path =
        std::string(dir && *dir ? dir : "/usr/share/zoneinfo") + "/" + std::string(name);
    std::error_code ec;
    cctz::time_zone loaded;
    if (!std::filesystem::is_regular_file(path, ec) ||
        !cctz::load_time_zone(std::string(name), &loaded)) {
        error = "unknown time zone '" + std::string(name) + "' (not in the system tz database)";
        return nullptr;
    }
    auto z = std::make_shared<time_zone>();
    z->name_ = std::string(name);
    z->zone_ = std::make_shared<const cctz::time_zone>(loaded);
    cache.emplace(std::string(name), z);
    return z;
}

} // namespace wopbridge
