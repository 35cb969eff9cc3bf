#include "core/ids.hpp"

#include "support/fake_clock.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace wopbridge {
namespace {

TEST(IdsTest, ShapeIsPrefixAnd26CrockfordDigits) {
    testing::seeded_random random{7};
    testing::fake_clock clock;
    for (const auto* gen : {static_cast<const clock_source*>(nullptr),
                            static_cast<const clock_source*>(&clock)}) {
        const auto id = id_generator(random, gen).make("dlv");
        EXPECT_TRUE(std::regex_match(id, std::regex("dlv_[0-9a-hjkmnp-tv-z]{26}"))) << id;
    }
}

TEST(IdsTest, WithAClockIdsSortByMintTimeAndStayUnique) {
    testing::seeded_random random{11};
    testing::fake_clock clock;
    id_generator ids(random, &clock);
    std::vector<std::string> minted;
    std::set<std::string> distinct;
    for (int i = 0; i < 2000; ++i) {
        if (i % 100 == 0) {
            clock.advance(1); // a new millisecond every hundred ids
        }
        minted.push_back(ids.make("run"));
        distinct.insert(minted.back());
    }
    EXPECT_EQ(distinct.size(), minted.size());
    // Across milliseconds the order is the mint order (within one millisecond it is random).
    for (std::size_t i = 100; i < minted.size(); i += 100) {
        EXPECT_LT(*std::max_element(minted.begin() + static_cast<long>(i) - 100,
                                    minted.begin() + static_cast<long>(i)),
                  *std::min_element(minted.begin() + static_cast<long>(i),
                                    minted.begin() + static_cast<long>(i) + 100))
            << i;
    }
}

} // namespace
} // namespace wopbridge
