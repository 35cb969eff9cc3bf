#include "support/browser.hpp"

#include <gtest/gtest.h>

namespace wopbridge::testing {

class BrowserSmokeTest : public ::testing::Test {};

// Guards the tooling the form and dashboard tests stand on: a failure here is the setup, not them.
TEST_F(BrowserSmokeTest, HeadlessChromiumRendersAPage) {
    if (auto why = browser_unavailable_reason(); !why.empty()) {
        GTEST_SKIP() << why;
    }
    browser_run run = run_browser_script("smoke.mjs", "{}");
    ASSERT_EQ(run.exit_code, 0) << run.stdout_text;
    EXPECT_NE(run.last_line.find("\"ok\":true"), std::string::npos) << run.stdout_text;
    EXPECT_NE(run.last_line.find("\"title\":\"wopbridge\""), std::string::npos) << run.stdout_text;
}

} // namespace wopbridge::testing
