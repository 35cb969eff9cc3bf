#pragma once
// Time zones for schedules, without touching the process-wide TZ (localtime_r under a TZ switch is
// not thread-safe) and without libstdc++'s incomplete chrono::zoned_time (g++ 12).
// Supported: "" / "UTC" / "Etc/UTC" / "GMT" / "Z", fixed offsets "+HH:MM" / "-HH:MM", and IANA
// names read from the system tz database ($TZDIR or /usr/share/zoneinfo) by our own TZif (RFC 8536)
// reader; instants past the file's last transition use its footer POSIX TZ rule.

#include "core/clock.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace wopbridge {

class time_zone {
public:
    // Loads a zone by name; on failure returns null and sets `error` (a content-free message).
    static std::shared_ptr<const time_zone> load(std::string_view name, std::string& error);
    static std::shared_ptr<const time_zone> utc();

    const std::string& name() const noexcept { return name_; }
    // Offset from UTC in seconds (local = utc + offset) at the instant `utc_seconds`.
    std::int64_t offset_at(std::int64_t utc_seconds) const;

    // Parsed POSIX TZ footer rule ("CET-1CEST,M3.5.0,M10.5.0/3"); public for tests.
    struct posix_rule {
        std::int64_t std_offset = 0; // seconds east of UTC
        std::int64_t dst_offset = 0;
        bool has_dst = false;
        struct date_rule {
            char kind = 'M';  // 'M' (month.week.day), 'J' (1..365, no Feb 29), 'N' (0..365)
            int month = 0, week = 0, day = 0;
            std::int64_t time = 7200; // seconds after local midnight (may be negative or > 24 h)
        } start, end;
    };
    static bool parse_posix_rule(std::string_view text, posix_rule& out);

private:
    std::string name_;
    std::vector<std::int64_t> transitions_;      // UTC seconds, ascending
    std::vector<std::int64_t> offsets_after_;    // offset in force from transitions_[i]
    std::int64_t initial_offset_ = 0;            // before the first transition
    bool has_rule_ = false;
    posix_rule rule_;

    std::int64_t rule_offset_at(std::int64_t utc_seconds) const;
    friend struct time_zone_loader;
};

// Civil-calendar helpers (proleptic Gregorian, days since 1970-01-01).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) noexcept;
void civil_from_days(std::int64_t z, std::int64_t& y, unsigned& m, unsigned& d) noexcept;
unsigned weekday_from_days(std::int64_t z) noexcept; // 0 = Sunday
bool is_leap_year(std::int64_t y) noexcept;
unsigned days_in_month(std::int64_t y, unsigned m) noexcept;

} // namespace wopbridge
