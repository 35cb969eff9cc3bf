#include "intake/webhook_intake.hpp"

#include <wopbridge/signatures.hpp>

#include <boost/json.hpp>
#include <gtest/gtest.h>

namespace wopbridge {
namespace {
namespace json = boost::json;

class WebhookIntakeTest : public ::testing::Test {
protected:
    const std::string secret_ = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const std::int64_t now_s_ = 1767225600;
    const std::string id_ = "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W";

    inbound_http_request signed_request(std::int64_t ts, const std::string& body = R"({"a":1})") {
        inbound_http_request r;
        r.body = body;
        r.headers = {{"content-type", "application/json"},
                     {"webhook-id", id_},
                     {"webhook-timestamp", std::to_string(ts)},
                     {"webhook-signature", *sig::sign_standard_webhooks(secret_, id_, ts, body)},
                     {"authorization", "Bearer nope"},
                     {"cookie", "c=1"},
                     {"user-agent", "test"}};
        return r;
    }
};

TEST_F(WebhookIntakeTest, ValidSignatureIsVerified) {
    auto v = intake::verify_webhook(verification_mode::required, {secret_}, signed_request(now_s_), now_s_);
    EXPECT_FALSE(v.refused);
    EXPECT_TRUE(v.verified);
    EXPECT_EQ(v.webhook_id, id_);
}

TEST_F(WebhookIntakeTest, RequiredRefusesStaleTimestampsBadSignaturesAndMissingHeaders) {
    EXPECT_TRUE(intake::verify_webhook(verification_mode::required, {secret_},
                                       signed_request(now_s_ - 600), now_s_).refused);
    EXPECT_TRUE(intake::verify_webhook(verification_mode::required, {secret_},
                                       signed_request(now_s_ + 301), now_s_).refused);
    auto bad = signed_request(now_s_);
    bad.body = R"({"a":2})";
    EXPECT_TRUE(intake::verify_webhook(verification_mode::required, {secret_}, bad, now_s_).refused);
    auto missing = signed_request(now_s_);
    missing.headers.erase(missing.headers.begin() + 3);
    EXPECT_TRUE(intake::verify_webhook(verification_mode::required, {secret_}, missing, now_s_).refused);
    auto bad_id = signed_request(now_s_);
    bad_id.headers[1].second = "short";
    EXPECT_TRUE(intake::verify_webhook(verification_mode::required, {secret_}, bad_id, now_s_).refused);
}

TEST_F(WebhookIntakeTest, RotationAcceptsAnyConfiguredSecret) {
    auto v = intake::verify_webhook(verification_mode::required,
                                    {"whsec_b3RoZXItc2VjcmV0LW90aGVyLXNlY3JldA==", secret_},
                                    signed_request(now_s_), now_s_);
    EXPECT_TRUE(v.verified);
}

TEST_F(WebhookIntakeTest, BestEffortDeliversUnverified) {
    auto bad = signed_request(now_s_ - 1000);
    auto v = intake::verify_webhook(verification_mode::best_effort, {secret_}, bad, now_s_);
    EXPECT_FALSE(v.refused);
    EXPECT_FALSE(v.verified);
    auto none = intake::verify_webhook(verification_mode::none, {}, bad, now_s_);
    EXPECT_FALSE(none.refused);
    EXPECT_FALSE(none.verified);
    EXPECT_EQ(none.webhook_id, id_);
}

TEST_F(WebhookIntakeTest, ContentKeepsOnlyAllowListedHeadersAndParsesJson) {
    auto o = json::parse(intake::webhook_content_json(signed_request(now_s_))).as_object();
    auto& w = o.at("webhook").as_object();
    EXPECT_EQ(w.at("method"), "POST");
    auto& h = w.at("headers").as_object();
    EXPECT_TRUE(h.contains("content-type"));
    EXPECT_TRUE(h.contains("webhook-id"));
    EXPECT_TRUE(h.contains("user-agent"));
    EXPECT_FALSE(h.contains("authorization"));
    EXPECT_FALSE(h.contains("cookie"));
    EXPECT_FALSE(h.contains("webhook-signature"));
    EXPECT_EQ(w.at("body").as_object().at("a"), 1);
}

TEST_F(WebhookIntakeTest, NonJsonBodyStaysText) {
    inbound_http_request r;
    r.headers = {{"content-type", "application/json"}};
    r.body = "{broken";
    auto o = json::parse(intake::webhook_content_json(r)).as_object();
    EXPECT_EQ(o.at("webhook").as_object().at("body"), "{broken");
    r.headers = {{"content-type", "text/plain"}};
    r.body = "[1]";
    o = json::parse(intake::webhook_content_json(r)).as_object();
    EXPECT_EQ(o.at("webhook").as_object().at("body"), "[1]");
}

TEST_F(WebhookIntakeTest, SecretsSplitOnSpacesAndCommas) {
    auto v = intake::split_secrets(" whsec_a, whsec_b whsec_c ");
    EXPECT_EQ(v, (std::vector<std::string>{"whsec_a", "whsec_b", "whsec_c"}));
}

} // namespace
} // namespace wopbridge
