#include "contract/state_machine.hpp"

#include <gtest/gtest.h>

#include <set>
#include <utility>

namespace wopbridge {
namespace {

class StateMachineTest : public ::testing::Test {
protected:
    static constexpr sub_state all[] = {sub_state::active, sub_state::paused, sub_state::failed,
                                        sub_state::dead_lettered};
    const std::set<std::pair<sub_state, sub_state>> allowed = {
        {sub_state::active, sub_state::paused},
        {sub_state::paused, sub_state::active},
        {sub_state::active, sub_state::failed},
        {sub_state::failed, sub_state::active},
        {sub_state::active, sub_state::dead_lettered},
        {sub_state::failed, sub_state::dead_lettered},
        {sub_state::dead_lettered, sub_state::active},
        {sub_state::failed, sub_state::paused},
    };
};

TEST_F(StateMachineTest, CreatedSubscriptionsStartActive) {
    EXPECT_EQ(initial_state(), sub_state::active);
}

TEST_F(StateMachineTest, EveryListedTransitionIsAllowed) {
    for (auto [from, to] : allowed) {
        EXPECT_TRUE(transition_allowed(from, to)) << to_string(from) << "->" << to_string(to);
        EXPECT_TRUE(check_transition(from, to).has_value());
    }
}

TEST_F(StateMachineTest, EveryOtherTransitionIsRefusedWithConflict) {
    int refused = 0;
    for (auto from : all) {
        for (auto to : all) {
            if (allowed.count({from, to})) {
                continue;
            }
            ++refused;
            EXPECT_FALSE(transition_allowed(from, to)) << to_string(from) << "->" << to_string(to);
            auto r = check_transition(from, to);
            ASSERT_FALSE(r.has_value());
            EXPECT_EQ(r.error(), make_error_code(errc::conflict));
        }
    }
    EXPECT_EQ(refused, 8); // 16 pairs, 8 allowed
}

TEST_F(StateMachineTest, DeadLetteredIsTerminalExceptForReactivation) {
    EXPECT_FALSE(transition_allowed(sub_state::dead_lettered, sub_state::paused));
    EXPECT_FALSE(transition_allowed(sub_state::dead_lettered, sub_state::failed));
    EXPECT_TRUE(transition_allowed(sub_state::dead_lettered, sub_state::active));
}

TEST_F(StateMachineTest, OperatorReasonIsOperatorPausedOnlyForPause) {
    EXPECT_EQ(operator_reason(sub_state::paused), state_reason::operator_paused);
    EXPECT_EQ(operator_reason(sub_state::active), state_reason::none);
}

TEST_F(StateMachineTest, OnlyActiveAcceptsIntake) {
    EXPECT_TRUE(accepts_intake(sub_state::active));
    EXPECT_FALSE(accepts_intake(sub_state::paused));
    EXPECT_FALSE(accepts_intake(sub_state::failed));
    EXPECT_FALSE(accepts_intake(sub_state::dead_lettered));
}

} // namespace
} // namespace wopbridge
