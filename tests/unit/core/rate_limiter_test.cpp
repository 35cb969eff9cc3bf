// Token buckets on the fake clock: burst, refill, Retry-After, per-key isolation and the key bound.
#include "core/rate_limiter.hpp"

#include "support/fake_clock.hpp"

#include <gtest/gtest.h>

#include <string>

namespace wopbridge {
namespace {

class RateLimiterTest : public ::testing::Test {
  protected:
    testing::fake_clock clock_;
};

TEST_F(RateLimiterTest, AdmitsTheBurstThenRefusesWithTheSecondsUntilATokenRefills) {
    rate_limiter rl(clock_);
    const rate_limit limit{0.5, 3}; // one token every 2 s
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(rl.take("sub", limit), 0) << i;
    }
    EXPECT_EQ(rl.take("sub", limit), 2);
    clock_.advance(1000);
    EXPECT_EQ(rl.take("sub", limit), 1);
    clock_.advance(1000);
    EXPECT_EQ(rl.take("sub", limit), 0);
    EXPECT_EQ(rl.take("sub", limit), 2);
}

// A budget charged after the fact: peek() takes nothing, and what several requests that passed
// together cost is owed (down to -burst) before the bucket admits again.
TEST_F(RateLimiterTest, PeekTakesNothingAndChargesAfterTheFactAreOwed) {
    rate_limiter rl(clock_);
    const rate_limit limit{1, 2};
    EXPECT_EQ(rl.peek("a", limit), 0); // a fresh bucket is full
    EXPECT_EQ(rl.peek("a", limit), 0);
    for (int i = 0; i < 5; ++i) {
        rl.charge("a", limit); // five answered while two tokens were there: owed, to -burst
    }
    EXPECT_EQ(rl.peek("a", limit), 3); // from -2 back to 1 token: 3 s of refill
    clock_.advance(2000);
    EXPECT_EQ(rl.peek("a", limit), 1);
    clock_.advance(1000);
    EXPECT_EQ(rl.peek("a", limit), 0);
    for (int i = 0; i < 10; ++i) {
        rl.charge("b", limit);
    }
    EXPECT_EQ(rl.peek("b", limit), 3); // the debt stops at -burst
    EXPECT_EQ(rl.peek("b", rate_limit{}), 0); // off: never refused
}

TEST_F(RateLimiterTest, RefillsNoFurtherThanTheBurst) {
    rate_limiter rl(clock_);
    const rate_limit limit{10, 2};
    clock_.advance(3600 * 1000);
    EXPECT_EQ(rl.take("a", limit), 0);
    EXPECT_EQ(rl.take("a", limit), 0);
    EXPECT_EQ(rl.take("a", limit), 1); // 100 ms to the next token, rounded up to whole seconds
    clock_.advance(100);
    EXPECT_EQ(rl.take("a", limit), 0);
}

TEST_F(RateLimiterTest, KeysDoNotShareABucket) {
    rate_limiter rl(clock_);
    const rate_limit limit{1, 1};
    EXPECT_EQ(rl.take("a", limit), 0);
    EXPECT_GT(rl.take("a", limit), 0);
    EXPECT_EQ(rl.take("b", limit), 0);
}

TEST_F(RateLimiterTest, AZeroRateIsUnlimited) {
    rate_limiter rl(clock_);
    for (int i = 0; i < 1000; ++i) {
        ASSERT_EQ(rl.take("a", rate_limit{}), 0);
    }
    EXPECT_EQ(rl.size(), 0u);
}

TEST_F(RateLimiterTest, TheKeyTableStaysBounded) {
    rate_limiter rl(clock_, 64);
    const rate_limit limit{1, 5};
    for (int i = 0; i < 10000; ++i) {
        rl.take("10.0.0." + std::to_string(i), limit);
        ASSERT_LE(rl.size(), 64u);
    }
    // A key that is still limited is kept while full buckets are dropped.
    rate_limiter kept(clock_, 4);
    const rate_limit one{0.001, 1};
    EXPECT_EQ(kept.take("hot", one), 0);
    clock_.advance(1);
    for (int i = 0; i < 3; ++i) {
        kept.take("k" + std::to_string(i), rate_limit{1000, 1});
    }
    clock_.advance(10);
    kept.take("new", one);
    EXPECT_GT(kept.take("hot", one), 0);
}

} // namespace
} // namespace wopbridge
