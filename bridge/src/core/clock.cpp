#include "core/clock.hpp"

#include <openssl/rand.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <stdexcept>

namespace wopbridge {

millis system_clock_source::now_ms() const {
    using namespace std::chrono;
    return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

void system_random_source::fill(unsigned char* out, std::size_t n) {
    if (n == 0) {
        return;
    }
    // RAND_bytes only fails when the OS entropy source is broken: nothing sensible can continue.
    if (RAND_bytes(out, static_cast<int>(n)) != 1) {
        std::fprintf(stderr, "wopbridge: RAND_bytes failed; refusing to mint predictable ids\n");
        std::abort();
    }
}

std::string format_iso8601(millis t) {
    std::time_t secs = static_cast<std::time_t>(t >= 0 ? t / 1000 : (t - 999) / 1000);
    int ms = static_cast<int>(t - static_cast<millis>(secs) * 1000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char buf[96]; // room for any int fields, so the compiler can prove no truncation
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                  tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
    return buf;
}

namespace {
bool digits(std::string_view s, std::size_t pos, std::size_t n, int& out) {
    if (pos + n > s.size()) {
        return false;
    }
    int v = 0;
    for (std::size_t i = 0; i < n; ++i) {
        char c = s[pos + i];
        if (c < '0' || c > '9') {
            return false;
        }
        v = v * 10 + (c - '0');
    }
    out = v;
    return true;
}
} // namespace

bool parse_iso8601(std::string_view s, millis& out) {
    int y, mo, d, h, mi, se;
    if (!digits(s, 0, 4, y) || s.size() < 20 || s[4] != '-' || !digits(s, 5, 2, mo) || s[7] != '-' ||
        !digits(s, 8, 2, d) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') || !digits(s, 11, 2, h) ||
        s[13] != ':' || !digits(s, 14, 2, mi) || s[16] != ':' || !digits(s, 17, 2, se)) {
        return false;
    }
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60) {
        return false;
    }
    std::size_t pos = 19;
    int frac_ms = 0;
    if (pos < s.size() && s[pos] == '.') {
        ++pos;
        int scale = 100;
        std::size_t start = pos;
        while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
            frac_ms += (s[pos] - '0') * scale;
            scale /= 10;
            ++pos;
        }
        if (pos == start) {
            return false;
        }
    }
    int offset_min = 0;
    if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
        ++pos;
    } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
        int oh, om;
        if (!digits(s, pos + 1, 2, oh) || pos + 3 >= s.size() || s[pos + 3] != ':' ||
            !digits(s, pos + 4, 2, om)) {
            return false;
        }
        offset_min = (oh * 60 + om) * (s[pos] == '+' ? 1 : -1);
        pos += 6;
    } else {
        return false;
    }
    if (pos != s.size()) {
        return false;
    }
    // days from civil (Howard Hinnant's algorithm)
    int yy = y - (mo <= 2 ? 1 : 0);
    int era = (yy >= 0 ? yy : yy - 399) / 400;
    unsigned yoe = static_cast<unsigned>(yy - era * 400);
    unsigned doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    long long days = static_cast<long long>(era) * 146097 + static_cast<long long>(doe) - 719468;
    long long secs = days * 86400 + h * 3600 + mi * 60 + se - offset_min * 60LL;
    out = secs * 1000 + frac_ms;
    return true;
}

} // namespace wopbridge
