// Inputs found by tests/fuzz/cron_fuzz that once crashed the schedule parsers.
#include "schedule/cron.hpp"
#include "schedule/time_zone.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

namespace wopbridge {
namespace {

class ScheduleRegressionTest : public ::testing::Test {
protected:
    void SetUp() override {
        if (const char* old = std::getenv("TZDIR")) {
            saved_tzdir_ = old;
        }
        // A tz database whose "Region" entry is a directory, like /usr/share/zoneinfo/Europe.
        std::filesystem::create_directories(dir_.path() / "FuzzRegion" / "City");
        ::setenv("TZDIR", dir_.path().c_str(), 1);
    }
    void TearDown() override {
        if (saved_tzdir_) {
            ::setenv("TZDIR", saved_tzdir_->c_str(), 1);
        } else {
            ::unsetenv("TZDIR");
        }
    }

    wopbridge::testing::temp_dir dir_;
    std::optional<std::string> saved_tzdir_;
};

// cron_fuzz crash-6a8107c5: a zone name naming a directory of the tz database ("Europe") made
// the TZif read throw std::ios_base::failure out of time_zone::load (std::terminate).
TEST_F(ScheduleRegressionTest, ZoneNameNamingADirectoryIsAnError) {
    std::string error;
    EXPECT_EQ(time_zone::load("FuzzRegion", error), nullptr);
    EXPECT_NE(error.find("unknown time zone"), std::string::npos) << error;
    auto r = cron_expr::parse("0 9 * * MON-FRI", "FuzzRegion");
    EXPECT_FALSE(r.has_value());
}

} // namespace
} // namespace wopbridge
