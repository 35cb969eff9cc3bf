#include "contract/retry_schedule.hpp"

#include "support/fake_clock.hpp"

#include <gtest/gtest.h>

namespace wopbridge {
namespace {

class RetryScheduleTest : public ::testing::Test {
protected:
    static retry_policy policy(backoff_kind b, millis base, millis cap, bool jitter) {
        retry_policy p;
        p.backoff = b;
        p.base_delay_ms = base;
        p.max_delay_ms = cap;
        p.jitter = jitter;
        return p;
    }
    testing::seeded_random random_{42};
};

TEST_F(RetryScheduleTest, NoneIsDueAtOnce) {
    auto p = policy(backoff_kind::none, 1000, 60000, true);
    for (int n = 1; n < 5; ++n) {
        EXPECT_EQ(retry_delay(p, n, 0, &random_), 0);
    }
}

TEST_F(RetryScheduleTest, FixedIsTheBaseDelayWithoutJitter) {
    auto p = policy(backoff_kind::fixed, 1500, 60000, true);
    for (int n = 1; n < 5; ++n) {
        EXPECT_EQ(retry_delay(p, n, 0, &random_), 1500);
    }
}

TEST_F(RetryScheduleTest, FixedIsCapped) {
    EXPECT_EQ(retry_delay(policy(backoff_kind::fixed, 5000, 2000, false), 1, 0, nullptr), 2000);
}

TEST_F(RetryScheduleTest, ExponentialDoublesUpToTheCap) {
    auto p = policy(backoff_kind::exponential, 1000, 10000, false);
    EXPECT_EQ(retry_delay(p, 1, 0, nullptr), 1000);
    EXPECT_EQ(retry_delay(p, 2, 0, nullptr), 2000);
    EXPECT_EQ(retry_delay(p, 3, 0, nullptr), 4000);
    EXPECT_EQ(retry_delay(p, 4, 0, nullptr), 8000);
    EXPECT_EQ(retry_delay(p, 5, 0, nullptr), 10000);
    EXPECT_EQ(retry_delay(p, 500, 0, nullptr), 10000); // no overflow
}

TEST_F(RetryScheduleTest, ExponentialEqualJitterStaysInTheUpperHalf) {
    auto p = policy(backoff_kind::exponential, 1000, 600000, true);
    bool varied = false;
    millis first = retry_delay(p, 4, 0, &random_);
    for (int i = 0; i < 200; ++i) {
        millis d = retry_delay(p, 4, 0, &random_); // un-jittered 8000
        EXPECT_GE(d, 4000);
        EXPECT_LE(d, 8000);
        varied = varied || d != first;
    }
    EXPECT_TRUE(varied);
}

TEST_F(RetryScheduleTest, RetryAfterRaisesButNeverLowers) {
    auto p = policy(backoff_kind::exponential, 1000, 10000, false);
    EXPECT_EQ(retry_delay(p, 1, 7000, nullptr), 7000);
    EXPECT_EQ(retry_delay(p, 3, 100, nullptr), 4000);
    EXPECT_EQ(retry_delay(p, 5, 30000, nullptr), 30000); // even past the cap
    EXPECT_EQ(retry_delay(policy(backoff_kind::none, 0, 0, false), 1, 2500, nullptr), 2500);
    EXPECT_EQ(retry_delay(policy(backoff_kind::fixed, 500, 1000, false), 1, 2500, nullptr), 2500);
}

} // namespace
} // namespace wopbridge
