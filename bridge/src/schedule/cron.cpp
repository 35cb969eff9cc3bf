#include "schedule/cron.hpp"

#include <boost/throw_exception.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <initializer_list>
#include <stdexcept>
#include <vector>

namespace wopbridge {

void throw_exception_from_error(const cron_error& e, const boost::source_location& loc) {
    boost::throw_exception(std::invalid_argument(e.message), loc);
}

namespace {

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
    std::int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

std::string lower(std::string_view s) {
    std::string out(s);
    for (auto& ch : out) {
        ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    }
    return out;
}

struct field_spec {
    const char* name;
    int min;
    int max;       // the largest value accepted in the text (7 for day-of-week)
    int norm_max;  // the largest value after normalization (6 for day-of-week)
    const char* const* names; // index = value - names_base
    int names_count;
    int names_base;
};

constexpr const char* month_names[] = {"jan", "feb", "mar", "apr", "may", "jun",
                                       "jul", "aug", "sep", "oct", "nov", "dec"};
constexpr const char* dow_names[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};

constexpr field_spec fields[5] = {
    {"minute", 0, 59, 59, nullptr, 0, 0},
    {"hour", 0, 23, 23, nullptr, 0, 0},
    {"day-of-month", 1, 31, 31, nullptr, 0, 0},
    {"month", 1, 12, 12, month_names, 12, 1},
    {"day-of-week", 0, 7, 6, dow_names, 7, 0},
};

bool parse_value(std::string_view tok, const field_spec& f, int& out, std::string& err) {
    if (tok.empty()) {
        err = std::string(f.name) + " field: empty value";
        return false;
    }
    if (std::isdigit(static_cast<unsigned char>(tok[0]))) {
        int v = 0;
        for (char ch : tok) {
            if (!std::isdigit(static_cast<unsigned char>(ch)) || v > 1000) {
                err = std::string(f.name) + " field: '" + std::string(tok) + "' is not a number";
                return false;
            }
            v = v * 10 + (ch - '0');
        }
        if (v < f.min || v > f.max) {
            err = std::string(f.name) + " field: " + std::to_string(v) + " is out of range " +
                  std::to_string(f.min) + "-" + std::to_string(f.max);
            return false;
        }
        out = v;
        return true;
    }
    if (f.names != nullptr) {
        std::string l = lower(tok);
        for (int i = 0; i < f.names_count; ++i) {
            if (l == f.names[i]) {
                out = i + f.names_base;
                return true;
            }
        }
    }
    err = std::string(f.name) + " field: '" + std::string(tok) + "' is not a valid value";
    return false;
}

// Parses one field into `bits` (indexed by normalized value). Returns "" or an error message.
std::string parse_field(std::string_view text, const field_spec& f, std::vector<bool>& bits) {
    bits.assign(static_cast<std::size_t>(f.norm_max + 1), false);
    if (text.empty()) {
        return std::string(f.name) + " field: empty";
    }
    std::size_t pos = 0;
    while (true) {
        std::size_t comma = text.find(',', pos);
        std::string_view item = text.substr(pos, comma == std::string_view::npos ? text.npos : comma - pos);
        if (item.empty()) {
            return std::string(f.name) + " field: empty list element in '" + std::string(text) + "'";
        }
        int step = 1;
        std::size_t slash = item.find('/');
        std::string_view base = item.substr(0, slash);
        std::string err;
        if (slash != std::string_view::npos) {
            std::string_view st = item.substr(slash + 1);
            if (st.empty() || st.size() > 3 ||
                !std::all_of(st.begin(), st.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
                return std::string(f.name) + " field: step '" + std::string(st) + "' is not a number";
            }
            step = std::stoi(std::string(st));
            if (step < 1 || step > f.max) {
                return std::string(f.name) + " field: step " + std::to_string(step) +
                       " is out of range 1-" + std::to_string(f.max);
            }
        }
        int lo = 0, hi = 0;
        if (base == "*") {
            lo = f.min;
            hi = f.norm_max;
        } else {
            std::size_t dash = base.find('-');
            if (!parse_value(base.substr(0, dash), f, lo, err)) {
                return err;
            }
            if (dash != std::string_view::npos) {
                if (!parse_value(base.substr(dash + 1), f, hi, err)) {
                    return err;
                }
                if (hi < lo) {
                    return std::string(f.name) + " field: range " + std::string(base) +
                           " runs backwards";
                }
            } else {
                hi = slash != std::string_view::npos ? f.norm_max : lo;
                if (hi < lo) { // "7/2" in day-of-week
                    hi = lo;
                }
            }
        }
        for (int v = lo; v <= hi; v += step) {
            bits[static_cast<std::size_t>(v > f.norm_max ? v - 7 : v)] = true; // 7 = Sunday
        }
        if (comma == std::string_view::npos) {
            break;
        }
        pos = comma + 1;
    }
    return {};
}

std::vector<std::string_view> split_ws(std::string_view s) {
    std::vector<std::string_view> out;
    std::size_t i = 0;
    while (i < s.size()) {
        while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) {
            ++i;
        }
        std::size_t start = i;
        while (i < s.size() && !std::isspace(static_cast<unsigned char>(s[i]))) {
            ++i;
        }
        if (i > start) {
            out.push_back(s.substr(start, i - start));
        }
    }
    return out;
}

constexpr std::int64_t search_days = 366 * 11; // longest gap: Feb 29 across a skipped leap year (8 y)

} // namespace

bool parse_duration(std::string_view text, millis& out) {
    if (text.empty()) {
        return false;
    }
    millis total = 0;
    std::size_t i = 0;
    while (i < text.size()) {
        std::size_t start = i;
        millis v = 0;
        while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
            v = v * 10 + (text[i] - '0');
            if (v > 1'000'000'000'000LL) {
                return false;
            }
            ++i;
        }
        if (i == start || i >= text.size()) {
            return false;
        }
        millis unit = 0;
        if (text.compare(i, 2, "ms") == 0) {
            unit = 1;
            i += 2;
        } else if (text[i] == 's') {
            unit = 1000;
            ++i;
        } else if (text[i] == 'm') {
            unit = 60 * 1000;
            ++i;
        } else if (text[i] == 'h') {
            unit = 3600 * 1000;
            ++i;
        } else if (text[i] == 'd') {
            unit = 24LL * 3600 * 1000;
            ++i;
        } else {
            return false;
        }
        // Checked before multiplying: v * unit itself can overflow (found by cron_fuzz).
        constexpr millis longest = 100LL * 365 * 24 * 3600 * 1000;
        if (v > (longest - total) / unit) {
            return false;
        }
        total += v * unit;
    }
    out = total;
    return true;
}

cron_result cron_expr::parse(std::string_view expr_in, std::string_view tz) {
    cron_expr e;
    std::string err;
    e.zone_ = time_zone::load(tz, err);
    if (!e.zone_) {
        return cron_error{err};
    }
    auto parts = split_ws(expr_in);
    if (parts.empty()) {
        return cron_error{"empty schedule expression"};
    }
    e.text_.clear();
    for (auto p : parts) {
        e.text_ += (e.text_.empty() ? "" : " ") + std::string(p);
    }
    std::string_view expr = e.text_;
    if (expr.front() == '@') {
        std::string head = lower(parts[0]);
        if (head == "@every") {
            if (parts.size() != 2) {
                return cron_error{"@every expects one duration, e.g. '@every 5m'"};
            }
            millis d = 0;
            if (!parse_duration(parts[1], d)) {
                return cron_error{"@every: '" + std::string(parts[1]) +
                                  "' is not a duration (use e.g. 30s, 5m, 1h30m)"};
            }
            if (d < 1000) {
                return cron_error{"@every: the interval must be at least 1s"};
            }
            e.interval_ms_ = d;
            return e;
        }
        if (parts.size() != 1) {
            return cron_error{"'" + head + "' takes no arguments"};
        }
        static const std::array<std::pair<const char*, const char*>, 7> macros = {{
            {"@yearly", "0 0 1 1 *"},
            {"@annually", "0 0 1 1 *"},
            {"@monthly", "0 0 1 * *"},
            {"@weekly", "0 0 * * 0"},
            {"@daily", "0 0 * * *"},
            {"@midnight", "0 0 * * *"},
            {"@hourly", "0 * * * *"},
        }};
        for (const auto& [name, body] : macros) {
            if (head == name) {
                auto r = parse(body, tz);
                if (r) {
                    r->text_ = head;
                }
                return r;
            }
        }
        return cron_error{"unknown macro '" + std::string(parts[0]) +
                          "' (expected @yearly, @monthly, @weekly, @daily, @hourly or @every)"};
    }
    if (parts.size() != 5) {
        return cron_error{"expected 5 fields (minute hour day-of-month month day-of-week), got " +
                          std::to_string(parts.size())};
    }
    std::vector<bool> bits;
    for (int i = 0; i < 5; ++i) {
        std::string msg = parse_field(parts[static_cast<std::size_t>(i)], fields[i], bits);
        if (!msg.empty()) {
            return cron_error{msg};
        }
        for (std::size_t v = 0; v < bits.size(); ++v) {
            if (!bits[v]) {
                continue;
            }
            switch (i) {
            case 0: e.minutes_.set(v); break;
            case 1: e.hours_.set(v); break;
            case 2: e.days_of_month_.set(v); break;
            case 3: e.months_.set(v); break;
            default: e.days_of_week_.set(v); break;
            }
        }
    }
    e.dom_restricted_ = parts[2].front() != '*';
    e.dow_restricted_ = parts[4].front() != '*';
    if (e.dom_restricted_ && !e.dow_restricted_) {
        static constexpr unsigned max_days[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
        bool possible = false;
        for (unsigned m = 1; m <= 12 && !possible; ++m) {
            for (unsigned d = 1; d <= max_days[m - 1] && e.months_.test(m); ++d) {
                if (e.days_of_month_.test(d)) {
                    possible = true;
                    break;
                }
            }
        }
        if (!possible) {
            return cron_error{"day-of-month and month never coincide (e.g. 30 FEB): the schedule "
                              "would never fire"};
        }
    }
    return e;
}

bool cron_expr::day_matches(std::int64_t y, unsigned m, unsigned d, unsigned wd) const {
    bool dom = days_of_month_.test(d);
    bool dow = days_of_week_.test(wd);
    if (dom_restricted_ && dow_restricted_) {
        return dom || dow;
    }
    return dom && dow;
}

std::optional<std::int64_t> cron_expr::next_local_minute(std::int64_t local_minute) const {
    std::int64_t day = floor_div(local_minute, 1440);
    int minute_of_day = static_cast<int>(local_minute - day * 1440);
    for (std::int64_t n = 0; n < search_days; ++n) {
        std::int64_t y = 0;
        unsigned m = 0, d = 0;
        civil_from_days(day, y, m, d);
        if (!months_.test(m)) {
            day = days_from_civil(m == 12 ? y + 1 : y, m == 12 ? 1 : m + 1, 1);
            minute_of_day = 0;
            continue;
        }
        if (day_matches(y, m, d, weekday_from_days(day))) {
            for (int h = minute_of_day / 60; h < 24; ++h) {
                if (!hours_.test(static_cast<std::size_t>(h))) {
                    continue;
                }
                int first = h == minute_of_day / 60 ? minute_of_day % 60 : 0;
                for (int mi = first; mi < 60; ++mi) {
                    if (minutes_.test(static_cast<std::size_t>(mi))) {
                        return day * 1440 + h * 60 + mi;
                    }
                }
            }
        }
        ++day;
        minute_of_day = 0;
    }
    return std::nullopt;
}

std::optional<std::int64_t> cron_expr::to_utc_seconds(std::int64_t ls) const {
    const time_zone& z = *zone_;
    std::int64_t offs[3] = {z.offset_at(ls - 86400), z.offset_at(ls), z.offset_at(ls + 86400)};
    std::optional<std::int64_t> best;
    for (std::int64_t o : offs) {
        std::int64_t u = ls - o;
        if (z.offset_at(u) == o && (!best || u < *best)) {
            best = u; // the earliest instant: a folded local time fires once, at its first occurrence
        }
    }
    if (best) {
        return best;
    }
    // A DST gap: the local time does not exist; fire at the transition instant.
    std::int64_t omax = *std::max_element(offs, offs + 3);
    std::int64_t omin = *std::min_element(offs, offs + 3);
    std::int64_t lo = ls - omax;
    std::int64_t hi = ls - omin;
    std::int64_t off_lo = z.offset_at(lo);
    if (z.offset_at(hi) == off_lo) {
        return ls - z.offset_at(ls);
    }
    while (hi - lo > 1) {
        std::int64_t mid = lo + (hi - lo) / 2;
        if (z.offset_at(mid) == off_lo) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return hi;
}

std::optional<millis> cron_expr::next_after(millis t) const {
    if (interval_ms_ > 0) {
        return (floor_div(t, interval_ms_) + 1) * interval_ms_;
    }
    std::int64_t ts = floor_div(t, 1000);
    std::int64_t local_minute = floor_div(ts + zone_->offset_at(ts), 60) + 1;
    for (int guard = 0; guard < 2000; ++guard) {
        auto lm = next_local_minute(local_minute);
        if (!lm) {
            return std::nullopt;
        }
        auto u = to_utc_seconds(*lm * 60);
        if (u && *u * 1000 > t) {
            return *u * 1000;
        }
        local_minute = *lm + 1;
    }
    return std::nullopt;
}

} // namespace wopbridge
