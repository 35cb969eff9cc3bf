// The delivery engine's sleep after a claim that did not fill its batch (delivery/claim_wait.hpp).
#include "delivery/claim_wait.hpp"

#include <gtest/gtest.h>

namespace wopbridge {
namespace {

constexpr millis t0 = 1'800'000'000'000;

TEST(ClaimWaitTest, NothingDueSleepsTheIdleWait) {
    EXPECT_EQ(claim_wait_ms(t0, t0, std::nullopt), claim_idle_wait_ms);
}

// An intake committed in the same group commit as the claim, due after the claim's `now`: the
// engine claims again at once instead of sleeping the floor (at 20 req/s that floor was the p99
// of ingest -> run.started).
TEST(ClaimWaitTest, WorkThatBecameDueDuringTheClaimIsClaimedAtOnce) {
    EXPECT_EQ(claim_wait_ms(t0, t0 + 2, t0 + 1), 0);
    EXPECT_EQ(claim_wait_ms(t0, t0 + 1, t0 + 1), 0);
}

TEST(ClaimWaitTest, FutureWorkIsWaitedForExactly) {
    EXPECT_EQ(claim_wait_ms(t0, t0, t0 + 7), 7);
    EXPECT_EQ(claim_wait_ms(t0, t0 + 2, t0 + 7), 5);
    EXPECT_EQ(claim_wait_ms(t0, t0, t0 + 60'000), claim_idle_wait_ms);
}

// Due when the claim ran and still not claimed: paused, probing or at maxConcurrency. Polling
// for it faster than the floor would only spin.
TEST(ClaimWaitTest, WorkDueButNotClaimedWaitsTheFloor) {
    EXPECT_EQ(claim_wait_ms(t0, t0, t0), claim_busy_floor_ms);
    EXPECT_EQ(claim_wait_ms(t0 + 5, t0 + 6, t0 - 100), claim_busy_floor_ms);
}

} // namespace
} // namespace wopbridge
