#include "wopbridge/refusal_backoff.hpp"

#include <gtest/gtest.h>

namespace wopbridge {
namespace {

using std::chrono::milliseconds;

class SdkRefusalBackoffTest : public ::testing::Test {
  protected:
    const refusal_backoff::clock::time_point t0 = refusal_backoff::clock::now();
};

TEST_F(SdkRefusalBackoffTest, TheFirstRefusalStartsARoundOfTheBaseDelay) {
    refusal_backoff b(milliseconds(1000));
    EXPECT_FALSE(b.paused(t0));
    const auto r = b.refused(t0, 0);
    EXPECT_TRUE(r.fresh);
    EXPECT_EQ(r.delay, milliseconds(1000));
    EXPECT_TRUE(b.paused(t0 + milliseconds(999)));
    EXPECT_FALSE(b.paused(t0 + milliseconds(1000)));
    EXPECT_EQ(b.paused_until(), t0 + milliseconds(1000));
}

TEST_F(SdkRefusalBackoffTest, LaterRefusalsOfARoundGetWhatIsLeftOfIt) {
    refusal_backoff b(milliseconds(1000));
    ASSERT_TRUE(b.refused(t0, 0).fresh);
    const auto later = b.refused(t0 + milliseconds(300), 0);
    EXPECT_FALSE(later.fresh);
    EXPECT_EQ(later.delay, milliseconds(700));
    // Not a new round: the round's end and the next delay stay as they were.
    EXPECT_EQ(b.paused_until(), t0 + milliseconds(1000));
    const auto next = b.refused(t0 + milliseconds(1000), 0);
    EXPECT_TRUE(next.fresh);
    EXPECT_EQ(next.delay, milliseconds(2000));
}

TEST_F(SdkRefusalBackoffTest, EachRoundDoublesUpToThirtySeconds) {
    refusal_backoff b(milliseconds(1000));
    std::vector<long> delays;
    for (int i = 0; i < 8; ++i) {
        delays.push_back(b.next_delay(0).count());
    }
    EXPECT_EQ(delays, (std::vector<long>{1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000}));
}

TEST_F(SdkRefusalBackoffTest, ABaseAboveTheCapIsTheCap) {
    refusal_backoff b(milliseconds(60000));
    EXPECT_EQ(b.next_delay(0), milliseconds(60000));
    EXPECT_EQ(b.next_delay(0), milliseconds(60000));
}

TEST_F(SdkRefusalBackoffTest, RetryAfterLengthensARoundButNeverShortensIt) {
    refusal_backoff b(milliseconds(1000));
    EXPECT_EQ(b.refused(t0, 5).delay, milliseconds(5000));
    // The doubling goes on from the own delay, not from Retry-After.
    EXPECT_EQ(b.next_delay(1), milliseconds(2000));
    EXPECT_EQ(b.next_delay(0), milliseconds(4000));
}

TEST_F(SdkRefusalBackoffTest, ACommittedOutcomeStartsTheNextRoundFromTheBase) {
    refusal_backoff b(milliseconds(100));
    b.next_delay(0);
    b.next_delay(0);
    b.reset();
    EXPECT_EQ(b.base(), milliseconds(100));
    EXPECT_EQ(b.next_delay(0), milliseconds(100));
}

TEST_F(SdkRefusalBackoffTest, NotTakenNamesTheStatus) {
    EXPECT_EQ(not_taken_reason(status::invalid),
              "not taken, status " + std::to_string(static_cast<int>(status::invalid)));
    EXPECT_NE(not_taken_reason(status::invalid), not_taken_reason(status::internal));
}

} // namespace
} // namespace wopbridge
