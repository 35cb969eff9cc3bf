#pragma once
// Schedule expressions (dialect documented in docs/guarantees/schedules.md):
//   - 5-field cron: minute hour day-of-month month day-of-week, with `*`, lists `a,b`, ranges `a-b`,
//     steps `*/n` and `a-b/n` (and `a/n` = `a-max/n`), names JAN-DEC and SUN-SAT (case-insensitive),
//     0 and 7 both Sunday. When both day-of-month and day-of-week are restricted (neither starts with
//     `*`), a day matches if EITHER matches (the Vixie/POSIX rule); otherwise both must.
//   - macros @yearly @annually @monthly @weekly @daily @midnight @hourly;
//   - `@every <duration>` (h/m/s/ms units, e.g. 30s, 5m, 1h30m; minimum 1s): ticks at the multiples of
//     the interval since the Unix epoch, so every node and every restart computes the same ticks.
// Cron fields are evaluated in the expression's time zone (UTC by default): a local time skipped by
// a DST gap fires at the transition instant; a local time repeated by a DST fold fires once (first).

#include "core/clock.hpp"
#include "core/error.hpp"
#include "schedule/time_zone.hpp"

#include <boost/system/result.hpp>

#include <bitset>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace wopbridge {

// A parse error with a precise, content-free message ("minute field: 61 is out of range 0-59").
struct cron_error {
    std::string message;
};

[[noreturn]] void throw_exception_from_error(const cron_error& e, const boost::source_location& loc);

class cron_expr;
using cron_result = boost::system::result<cron_expr, cron_error>;

class cron_expr {
public:
    // `time_zone` empty = UTC; see time_zone.hpp for the accepted names.
    static cron_result parse(std::string_view expr, std::string_view time_zone = {});

    // First tick strictly after `t`; nullopt when none exists within ~10 years.
    std::optional<millis> next_after(millis t) const;

    const std::string& text() const noexcept { return text_; }
    bool is_interval() const noexcept { return interval_ms_ > 0; }
    millis interval_ms() const noexcept { return interval_ms_; }
    const time_zone& zone() const noexcept { return *zone_; }

private:
    std::string text_;
    millis interval_ms_ = 0; // @every
    std::bitset<60> minutes_;
    std::bitset<24> hours_;
    std::bitset<32> days_of_month_; // 1..31
    std::bitset<13> months_;        // 1..12
    std::bitset<7> days_of_week_;   // 0..6, 0 = Sunday
    bool dom_restricted_ = false;
    bool dow_restricted_ = false;
    std::shared_ptr<const time_zone> zone_;

    bool day_matches(std::int64_t y, unsigned m, unsigned d, unsigned wd) const;
    std::optional<std::int64_t> next_local_minute(std::int64_t local_minute) const;
    std::optional<std::int64_t> to_utc_seconds(std::int64_t local_seconds) const;
};

// Durations in config and @every: a sequence of <integer><unit>, units h, m, s, ms
// (e.g. "1h30m", "500ms", "24h"); also "d" for days. Returns false on anything else.
bool parse_duration(std::string_view text, millis& out);

} // namespace wopbridge
