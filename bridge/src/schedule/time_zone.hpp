#pragma once
// Time zones for schedules, without touching the process-wide TZ (localtime_r under a TZ switch is
// not thread-safe) and without libstdc++'s incomplete chrono::zoned_time (g++ 12).
// Supported: "" / "UTC" / "Etc/UTC" / "GMT" / "Z", fixed offsets "+HH:MM" / "-HH:MM", and IANA
// names from the system tz database ($TZDIR or /usr/share/zoneinfo), read and interpreted by
// Google's cctz (Debian libcctz-dev), including the footer rule past a file's last transition.

#include "core/clock.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace cctz {
class time_zone;
}

namespace wopbridge {

class time_zone {
public:
    // Loads a zone by name; on failure returns null and sets `error` (a content-free message).
    static std::shared_ptr<const time_zone> load(std::string_view name, std::string& error);
    static std::shared_ptr<const time_zone> utc();

    const std::string& name() const noexcept { return name_; }
    // Offset from UTC in seconds (local = utc + offset) at the instant `utc_seconds`.
    std::int64_t offset_at(std::int64_t utc_seconds) const;

private:
    std::string name_;
    std::shared_ptr<const cctz::time_zone> zone_; // null: UTC or a fixed offset
    std::int64_t fixed_offset_ = 0;
};

// Civil-calendar helpers (proleptic Gregorian, days since 1970-01-01).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) noexcept;
void civil_from_days(std::int64_t z, std::int64_t& y, unsigned& m, unsigned& d) noexcept;
unsigned weekday_from_days(std::int64_t z) noexcept; // 0 = Sunday
bool is_leap_year(std::int64_t y) noexcept;
unsigned days_in_month(std::int64_t y, unsigned m) noexcept;

} // namespace wopbridge
