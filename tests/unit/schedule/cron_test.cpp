#include "schedule/cron.hpp"

#include <gtest/gtest.h>

namespace wopbridge {
namespace {

millis utc(std::int64_t y, unsigned mo, unsigned d, int h = 0, int mi = 0, int s = 0) {
    return (days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s) * 1000LL;
}

class CronTest : public ::testing::Test {
protected:
    static cron_expr parse_ok(std::string_view text, std::string_view tz = {}) {
        auto r = cron_expr::parse(text, tz);
        EXPECT_TRUE(r.has_value()) << text << ": " << (r ? "" : r.error().message);
        return r ? *r : *cron_expr::parse("* * * * *");
    }
    static std::string parse_error(std::string_view text, std::string_view tz = {}) {
        auto r = cron_expr::parse(text, tz);
        EXPECT_FALSE(r.has_value()) << text;
        return r ? std::string() : r.error().message;
    }
    static millis next(std::string_view text, millis t, std::string_view tz = {}) {
        auto n = parse_ok(text, tz).next_after(t);
        EXPECT_TRUE(n.has_value()) << text;
        return n.value_or(-1);
    }
};

TEST_F(CronTest, ParsesFieldsListsRangesStepsAndNames) {
    EXPECT_EQ(next("*/15 * * * *", utc(2026, 1, 1, 10, 7)), utc(2026, 1, 1, 10, 15));
    EXPECT_EQ(next("5,35 9-17 * * *", utc(2026, 1, 1, 9, 35)), utc(2026, 1, 1, 10, 5));
    EXPECT_EQ(next("0 0 * JAN-MAR/2 *", utc(2026, 1, 31, 12)), utc(2026, 3, 1));
    EXPECT_EQ(next("0 12 * * mon-fri", utc(2026, 1, 2, 13)), utc(2026, 1, 5, 12)); // Fri -> Mon
    EXPECT_EQ(next("30 2 * * 7", utc(2026, 1, 1)), utc(2026, 1, 4, 2, 30));       // 7 = Sunday
    EXPECT_EQ(next("30 2 * * 0", utc(2026, 1, 1)), utc(2026, 1, 4, 2, 30));
    EXPECT_EQ(next("10/20 * * * *", utc(2026, 1, 1, 0, 31)), utc(2026, 1, 1, 0, 50));
}

TEST_F(CronTest, NextAfterIsStrictlyAfter) {
    EXPECT_EQ(next("0 2 * * *", utc(2026, 1, 1, 2)), utc(2026, 1, 2, 2));
    EXPECT_EQ(next("0 2 * * *", utc(2026, 1, 1, 2) - 1), utc(2026, 1, 1, 2));
    EXPECT_EQ(next("* * * * *", utc(2026, 1, 1, 2, 0, 30)), utc(2026, 1, 1, 2, 1));
}

TEST_F(CronTest, CrossesMonthAndYearEnds) {
    EXPECT_EQ(next("0 0 1 * *", utc(2026, 1, 31, 23, 59)), utc(2026, 2, 1));
    EXPECT_EQ(next("59 23 31 12 *", utc(2026, 6, 1)), utc(2026, 12, 31, 23, 59));
    EXPECT_EQ(next("0 0 1 1 *", utc(2026, 12, 31, 23, 59, 59)), utc(2027, 1, 1));
    EXPECT_EQ(next("0 0 31 * *", utc(2026, 4, 1)), utc(2026, 5, 31)); // April has no 31st
}

TEST_F(CronTest, HandlesLeapYears) {
    EXPECT_EQ(next("0 0 29 2 *", utc(2026, 1, 1)), utc(2028, 2, 29));
    EXPECT_EQ(next("0 0 29 2 *", utc(2096, 3, 1)), utc(2104, 2, 29)); // 2100 is not a leap year
    EXPECT_EQ(next("0 0 29 2 *", utc(2000, 1, 1)), utc(2000, 2, 29)); // 2000 is
}

TEST_F(CronTest, DayOfMonthOrDayOfWeekWhenBothRestricted) {
    // 2026-01-01 is a Thursday. "1st or a Monday": Mon Jan 5 after Jan 1.
    EXPECT_EQ(next("0 0 1 * 1", utc(2026, 1, 1, 1)), utc(2026, 1, 5));
    EXPECT_EQ(next("0 0 1 * 1", utc(2026, 1, 26, 1)), utc(2026, 2, 1)); // the 1st before next Mon
    // A star in one field means AND: "*/1 day-of-month" counts as unrestricted.
    EXPECT_EQ(next("0 0 * * 1", utc(2026, 1, 1, 1)), utc(2026, 1, 5));
    EXPECT_EQ(next("0 0 13 * *", utc(2026, 1, 1)), utc(2026, 1, 13));
}

TEST_F(CronTest, MacrosExpand) {
    EXPECT_EQ(next("@hourly", utc(2026, 1, 1, 10, 1)), utc(2026, 1, 1, 11));
    EXPECT_EQ(next("@daily", utc(2026, 1, 1, 10)), utc(2026, 1, 2));
    EXPECT_EQ(next("@weekly", utc(2026, 1, 1)), utc(2026, 1, 4));
    EXPECT_EQ(next("@monthly", utc(2026, 1, 1)), utc(2026, 2, 1));
    EXPECT_EQ(next("@yearly", utc(2026, 1, 1)), utc(2027, 1, 1));
}

TEST_F(CronTest, EveryIntervalsAreEpochAligned) {
    EXPECT_EQ(next("@every 5m", utc(2026, 1, 1, 10, 7, 30)), utc(2026, 1, 1, 10, 10));
    EXPECT_EQ(next("@every 30s", utc(2026, 1, 1, 10, 0, 30)), utc(2026, 1, 1, 10, 1));
    EXPECT_EQ(parse_ok("@every 1h30m").interval_ms(), 90 * 60 * 1000);
    EXPECT_EQ(parse_ok("@every 1s").interval_ms(), 1000);
}

TEST_F(CronTest, RejectsInvalidExpressionsWithPreciseMessages) {
    EXPECT_EQ(parse_error("61 * * * *"), "minute field: 61 is out of range 0-59");
    EXPECT_EQ(parse_error("* 24 * * *"), "hour field: 24 is out of range 0-23");
    EXPECT_EQ(parse_error("* * 0 * *"), "day-of-month field: 0 is out of range 1-31");
    EXPECT_EQ(parse_error("* * * 13 *"), "month field: 13 is out of range 1-12");
    EXPECT_EQ(parse_error("* * * * 8"), "day-of-week field: 8 is out of range 0-7");
    EXPECT_EQ(parse_error("* * * FOO *"), "month field: 'FOO' is not a valid value");
    EXPECT_EQ(parse_error("* * *"), "expected 5 fields (minute hour day-of-month month "
                                    "day-of-week), got 3");
    EXPECT_EQ(parse_error("5-1 * * * *"), "minute field: range 5-1 runs backwards");
    EXPECT_EQ(parse_error("*/0 * * * *"), "minute field: step 0 is out of range 1-59");
    EXPECT_EQ(parse_error("1,,2 * * * *"), "minute field: empty list element in '1,,2'");
    EXPECT_NE(parse_error("0 0 30 2 *").find("never"), std::string::npos);
    EXPECT_EQ(parse_error("@every 500ms"), "@every: the interval must be at least 1s");
    // A component whose product overflows 64 bits is refused, not wrapped (cron_fuzz found it).
    EXPECT_EQ(parse_error("@every 90s888808888088d"),
              "@every: '90s888808888088d' is not a duration (use e.g. 30s, 5m, 1h30m)");
    EXPECT_EQ(parse_error("@every soon"),
              "@every: 'soon' is not a duration (use e.g. 30s, 5m, 1h30m)");
    EXPECT_NE(parse_error("@fortnightly").find("unknown macro"), std::string::npos);
    EXPECT_EQ(parse_error(""), "empty schedule expression");
    EXPECT_NE(parse_error("0 2 * * *", "Mars/Olympus").find("unknown time zone"),
              std::string::npos);
    EXPECT_NE(parse_error("0 2 * * *", "../etc/passwd").find("invalid time zone"),
              std::string::npos);
}

TEST_F(CronTest, ParsesDurations) {
    millis d = 0;
    ASSERT_TRUE(parse_duration("10m", d));
    EXPECT_EQ(d, 600000);
    ASSERT_TRUE(parse_duration("500ms", d));
    EXPECT_EQ(d, 500);
    ASSERT_TRUE(parse_duration("1h30m", d));
    EXPECT_EQ(d, 5400000);
    ASSERT_TRUE(parse_duration("24h", d));
    EXPECT_EQ(d, 86400000);
    EXPECT_FALSE(parse_duration("10", d));
    EXPECT_FALSE(parse_duration("m", d));
    EXPECT_FALSE(parse_duration("10x", d));
    EXPECT_FALSE(parse_duration("", d));
}

TEST_F(CronTest, FixedOffsetZone) {
    // 02:00 at +02:00 is 00:00 UTC.
    EXPECT_EQ(next("0 2 * * *", utc(2026, 1, 1, 1), "+02:00"), utc(2026, 1, 2, 0));
    EXPECT_EQ(next("0 2 * * *", utc(2026, 1, 1, 1), "-05:30"), utc(2026, 1, 1, 7, 30));
}

TEST_F(CronTest, IanaZoneFollowsDaylightSavingTime) {
    std::string err;
    if (!time_zone::load("Europe/Berlin", err)) {
        GTEST_SKIP() << "no system tz database: " << err;
    }
    // Winter: CET (+1); summer: CEST (+2).
    EXPECT_EQ(next("0 2 * * *", utc(2026, 1, 10), "Europe/Berlin"), utc(2026, 1, 10, 1));
    EXPECT_EQ(next("0 2 * * *", utc(2026, 7, 9, 12), "Europe/Berlin"), utc(2026, 7, 10, 0));
    // 2026-03-29 02:30 local does not exist (02:00 -> 03:00): fires at the transition, 01:00 UTC.
    EXPECT_EQ(next("30 2 * * *", utc(2026, 3, 28, 12), "Europe/Berlin"), utc(2026, 3, 29, 1));
    // 2026-10-25 02:30 local happens twice: fires once, at the first (CEST, 00:30 UTC).
    auto e = parse_ok("30 2 * * *", "Europe/Berlin");
    EXPECT_EQ(e.next_after(utc(2026, 10, 24, 12)), utc(2026, 10, 25, 0, 30));
    EXPECT_EQ(e.next_after(utc(2026, 10, 25, 0, 30)), utc(2026, 10, 26, 1, 30));
    // Past 2037 the file's footer rule applies.
    EXPECT_EQ(next("0 2 * * *", utc(2040, 7, 9, 12), "Europe/Berlin"), utc(2040, 7, 10, 0));
    EXPECT_EQ(next("0 2 * * *", utc(2040, 12, 10), "Europe/Berlin"), utc(2040, 12, 10, 1));
}

TEST_F(CronTest, FooterRulesAndUnknownZones) {
    std::string err;
    if (!time_zone::load("America/New_York", err)) {
        GTEST_SKIP() << "no system tz database: " << err;
    }
    // 2100 is past every transition in the file: its footer rule (EST5EDT,M3.2.0,M11.1.0) decides.
    auto ny = time_zone::load("America/New_York", err);
    EXPECT_EQ(ny->offset_at(utc(2100, 1, 15) / 1000), -5 * 3600);
    EXPECT_EQ(ny->offset_at(utc(2100, 7, 15) / 1000), -4 * 3600);
    EXPECT_EQ(time_zone::load("Asia/Tehran", err)->offset_at(utc(2100, 1, 15) / 1000), 3 * 3600 + 1800);
    // A region directory and a name the database lacks are refused, with the name.
    for (const char* name : {"Europe", "Mars/Olympus_Mons"}) {
        err.clear();
        EXPECT_FALSE(time_zone::load(name, err)) << name;
        EXPECT_NE(err.find(name), std::string::npos) << err;
    }
    EXPECT_FALSE(time_zone::load("../etc/passwd", err));
}

} // namespace
} // namespace wopbridge
