#include "contract/types.hpp"

#include <gtest/gtest.h>

namespace wopbridge {
namespace {

class TypesTest : public ::testing::Test {};

TEST_F(TypesTest, WireNamesRoundTrip) {
    for (auto s : {sub_state::active, sub_state::paused, sub_state::failed, sub_state::dead_lettered}) {
        EXPECT_EQ(parse_sub_state(to_string(s)), s);
    }
    for (auto k : {source_kind::webhook, source_kind::schedule, source_kind::queue, source_kind::email,
                   source_kind::form}) {
        EXPECT_EQ(parse_source_kind(to_string(k)), k);
    }
    for (auto b : {backoff_kind::none, backoff_kind::fixed, backoff_kind::exponential}) {
        EXPECT_EQ(parse_backoff_kind(to_string(b)), b);
    }
    for (auto m : {verification_mode::required, verification_mode::best_effort, verification_mode::none}) {
        EXPECT_EQ(parse_verification_mode(to_string(m)), m);
    }
}

TEST_F(TypesTest, ContractSpellingsAreKebabOrSnakeWhereTheContractSaysSo) {
    EXPECT_EQ(to_string(sub_state::dead_lettered), "dead-lettered");
    EXPECT_EQ(to_string(attempt_outcome::dead_lettered), "dead-lettered");
    EXPECT_EQ(to_string(verification_mode::best_effort), "best-effort");
    EXPECT_EQ(to_string(state_reason::retry_exhausted), "retry-exhausted");
    EXPECT_EQ(to_string(state_reason::none), "");
    EXPECT_EQ(to_string(dead_letter_reason::retries_exhausted), "retries_exhausted");
    EXPECT_EQ(to_string(dead_letter_reason::verification_failed), "verification_failed");
}

TEST_F(TypesTest, UnknownNamesDoNotParse) {
    EXPECT_FALSE(parse_sub_state("dead_lettered"));
    EXPECT_FALSE(parse_source_kind("Webhook"));
    EXPECT_FALSE(parse_backoff_kind(""));
    EXPECT_FALSE(parse_verification_mode("best_effort"));
}

} // namespace
} // namespace wopbridge
