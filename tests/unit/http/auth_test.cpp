#include "http/auth.hpp"

#include <gtest/gtest.h>

namespace wopbridge::http {
namespace {

class AuthenticatorTest : public ::testing::Test {
protected:
    authenticator auth_{{{"hk_alpha", "acme", {"runs:read"}},
                         {"hk_beta", "globex", {"webhooks:manage", "runs:create"}},
                         {"", "nobody", {"runs:read"}}}};
};

TEST_F(AuthenticatorTest, AcceptsKnownBearerKeysWithTheirTenantAndScopes) {
    auto p = auth_.authenticate("Bearer hk_beta");
    ASSERT_TRUE(p);
    EXPECT_EQ(p->tenant, "globex");
    EXPECT_TRUE(p->has_scope("webhooks:manage"));
    EXPECT_FALSE(p->has_scope("runs:read"));
    EXPECT_TRUE(auth_.authenticate("bearer   hk_alpha ").has_value());
}

TEST_F(AuthenticatorTest, RefusesMissingMalformedAndUnknownCredentials) {
    EXPECT_FALSE(auth_.authenticate(std::nullopt));
    EXPECT_FALSE(auth_.authenticate("hk_alpha"));
    EXPECT_FALSE(auth_.authenticate("Basic hk_alpha"));
    EXPECT_FALSE(auth_.authenticate("Bearer "));
    EXPECT_FALSE(auth_.authenticate("Bearer hk_alph"));
    EXPECT_FALSE(auth_.authenticate("Bearer hk_alpha2"));
}

TEST_F(AuthenticatorTest, EmptyConfiguredKeysNeverMatch) {
    EXPECT_FALSE(auth_.authenticate("Bearer "));
    EXPECT_FALSE(auth_.authenticate("Bearer  "));
}

} // namespace
} // namespace wopbridge::http
