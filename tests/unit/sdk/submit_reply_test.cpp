#include "wopbridge/connector.hpp"
#include "wopbridge/http_util.hpp"

#include <gtest/gtest.h>

namespace wopbridge {
namespace {

class SdkSubmitReplyTest : public ::testing::Test {
  protected:
    static submit_outcome refused(std::string reason, int retry_after = 0) {
        submit_outcome o;
        o.kind = outcome_kind::refused;
        o.reason = std::move(reason);
        o.retry_after_seconds = retry_after;
        return o;
    }

    static constexpr refusal_wording wording{.not_active = "inactive",
                                             .not_found = "missing",
                                             .invalid = "bad",
                                             .invalid_code = "validation_error",
                                             .unavailable = "later",
                                             .default_retry_after_seconds = 5};
};

TEST_F(SdkSubmitReplyTest, ReadsEveryHostReason) {
    EXPECT_EQ(refusal_reason_of(refused("subscription_not_active")),
              refusal_reason::subscription_not_active);
    EXPECT_EQ(refusal_reason_of(refused("not_found")), refusal_reason::not_found);
    EXPECT_EQ(refusal_reason_of(refused("invalid")), refusal_reason::invalid);
    EXPECT_EQ(refusal_reason_of(refused("signature_invalid")), refusal_reason::signature_invalid);
    EXPECT_EQ(refusal_reason_of(refused("overloaded")), refusal_reason::overloaded);
    EXPECT_EQ(refusal_reason_of(refused("store_unavailable")), refusal_reason::store_unavailable);
    EXPECT_EQ(refusal_reason_of(refused("something new")), refusal_reason::unknown);
    submit_outcome committed;
    committed.kind = outcome_kind::duplicate;
    committed.reason = "not_found"; // ignored: only a refusal has a reason
    EXPECT_EQ(refusal_reason_of(committed), refusal_reason::none);
}

TEST_F(SdkSubmitReplyTest, MapsRefusalsToStatusCodeAndWording) {
    auto r = refusal_reply(refused("subscription_not_active"), wording);
    EXPECT_EQ(r.status, 409);
    EXPECT_EQ(r.code, "subscription_not_active");
    EXPECT_EQ(r.message, "inactive");
    EXPECT_EQ(r.retry_after_seconds, 0);
    r = refusal_reply(refused("not_found"), wording);
    EXPECT_EQ(r.status, 404);
    EXPECT_EQ(r.code, "not_found");
    EXPECT_EQ(r.message, "missing");
    r = refusal_reply(refused("invalid"), wording);
    EXPECT_EQ(r.status, 400);
    EXPECT_EQ(r.code, "validation_error");
    EXPECT_EQ(r.message, "bad");
    EXPECT_EQ(r.retry_after_seconds, 0);
}

TEST_F(SdkSubmitReplyTest, OverloadAndStoreTroubleAreRetryable) {
    auto r = refusal_reply(refused("overloaded", 7), wording);
    EXPECT_EQ(r.status, 503);
    EXPECT_EQ(r.code, "overloaded");
    EXPECT_EQ(r.message, "later");
    EXPECT_EQ(r.retry_after_seconds, 7);
    r = refusal_reply(refused("store_unavailable"), wording);
    EXPECT_EQ(r.code, "store_unavailable");
    EXPECT_EQ(r.retry_after_seconds, 5); // the connector's default when the host gave none
    r = refusal_reply(refused("signature_invalid"), wording);
    EXPECT_EQ(r.status, 503);
    EXPECT_EQ(r.code, "overloaded");
}

TEST_F(SdkSubmitReplyTest, WordingCanFoldInvalidAndStoreIntoOverload) {
    refusal_wording folded = wording;
    folded.invalid = {};
    folded.store_has_own_code = false;
    auto r = refusal_reply(refused("invalid"), folded);
    EXPECT_EQ(r.status, 503);
    EXPECT_EQ(r.code, "overloaded");
    EXPECT_EQ(r.retry_after_seconds, 5);
    r = refusal_reply(refused("store_unavailable", 2), folded);
    EXPECT_EQ(r.code, "overloaded");
    EXPECT_EQ(r.retry_after_seconds, 2);
}

TEST_F(SdkSubmitReplyTest, HttpTextHelpers) {
    EXPECT_EQ(http::to_lower("Content-TYPE: A/B"), "content-type: a/b");
    EXPECT_EQ(http::trim_whitespace(" \t\r\nx y\n\t "), "x y");
    EXPECT_EQ(http::trim_whitespace(" \r\n"), "");
}

} // namespace
} // namespace wopbridge
