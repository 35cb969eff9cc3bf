// The provider catalogue (bridge/providers/*.yaml) and the verifier it drives. The expected
// signatures are GitHub's documented example and HMACs computed apart from this code (Python's
// hmac); tests/integration/provider_sdk_serve_test.cpp signs with each provider's own SDK.
#include "intake/provider_catalogue.hpp"
#include "intake/provider_verify.hpp"
#include "provider_requests.hpp"

#include <boost/json.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace wopbridge {
namespace {
using ::testing::HasSubstr;
namespace json = boost::json;

constexpr std::int64_t now_s = 1767225600;

inbound_http_request request(std::string body, std::vector<std::pair<std::string, std::string>> h) {
    return testing::json_post(std::move(body), std::move(h));
}

const providers::provider& entry(std::string_view name) {
    const auto* p = providers::find(name);
    EXPECT_NE(p, nullptr) << name;
    static providers::provider none;
    return p != nullptr ? *p : none;
}

intake::webhook_verification check(std::string_view name, const std::vector<std::string>& secrets,
                                   const inbound_http_request& r, std::int64_t now = now_s) {
    return intake::verify_provider(entry(name), verification_mode::required, secrets, r, now);
}

TEST(ProviderCatalogueTest, EveryFileParsesAndNamesItself) {
    EXPECT_TRUE(providers::catalogue_errors().empty())
        << ::testing::PrintToString(providers::catalogue_errors());
    EXPECT_EQ(providers::catalogue().size(), providers::provider_files().size());
    EXPECT_THAT(providers::names(),
                ::testing::IsSupersetOf({"github", "stripe", "shopify", "telegram", "linear",
                                         "mailgun", "standard-webhooks", "discord", "zoom"}));
    for (const auto& f : providers::provider_files()) {
        auto p = providers::parse_provider(f.name, f.text);
        ASSERT_TRUE(p) << p.error().message;
        EXPECT_EQ(std::string(p->name) + ".yaml", f.name);
        EXPECT_THAT(p->docs, ::testing::StartsWith("https://"));
    }
}

TEST(ProviderCatalogueTest, RefusesEntriesItDoesNotUnderstand) {
    auto refused = [](const char* text) {
        auto p = providers::parse_provider("x.yaml", text);
        return p ? std::string() : p.error().message;
    };
    const std::string base = "name: x\ndocs: https://x\nsecret: {pattern: '.+', describe: d}\n";
    EXPECT_THAT(refused((base + "signature: {algorithm: md5, header: x}\n").c_str()),
                HasSubstr("signature.algorithm: 'md5'"));
    EXPECT_THAT(refused((base + "signature: {algorithm: hmac-sha256, header: x, signs: '{bdy}'}\n").c_str()),
                HasSubstr("unknown part {bdy}"));
    EXPECT_THAT(refused((base + "signature: {algorithm: hmac-sha256, header: x, signs: '{timestamp}'}\n").c_str()),
                HasSubstr("{timestamp} needs a timestamp"));
    EXPECT_THAT(refused((base + "signature: {algorithm: token}\n").c_str()), HasSubstr("signature:"));
    EXPECT_THAT(refused("name: x\nsignature: {algorithm: token, header: x}\n"), HasSubstr("secret:"));
}

TEST(ProviderCatalogueTest, GitHubsDocumentedExampleVerifiesAndOneByteChangedIsRefused) {
    const std::string secret = "It's a Secret to Everybody";
    auto r = request("Hello, World!",
                     {{"x-hub-signature-256",
                       "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"},
                      {"x-github-delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958"},
                      {"x-github-event", "issues"}});
    auto v = check("github", {secret}, r);
    EXPECT_TRUE(v.verified);
    EXPECT_FALSE(v.refused);
    EXPECT_EQ(v.webhook_id, "72d3162e-cc78-11e3-81ab-4c9367dc0958");
    r.body = "Hello, World?";
    v = check("github", {secret}, r);
    EXPECT_TRUE(v.refused);
    EXPECT_EQ(v.refusal, "mismatch");
    // Rotation: the old secret first, the new one matches.
    r.body = "Hello, World!";
    EXPECT_TRUE(check("github", {"old-secret", secret}, r).verified);
    // The SHA-1 header alone is not accepted: the entry names the SHA-256 one.
    auto legacy = request("Hello, World!", {{"x-hub-signature", "sha1=0000"}});
    EXPECT_EQ(check("github", {secret}, legacy).refusal, "missing_header");
    auto unprefixed = request("Hello, World!", {{"x-hub-signature-256", "757107ea0eb2"}});
    EXPECT_EQ(check("github", {secret}, unprefixed).refusal, "malformed");
}

TEST(ProviderCatalogueTest, StripeSignsTimestampDotBodyWithinItsToleranceAndAcceptsAnyV1) {
    const std::string body = R"({"id":"evt_1QxYz","type":"payment_intent.succeeded"})";
    const std::string good = "7cd13ac076770ce2fefa1b60836c54a94d8f76662d18991be7af6f1ab7b02a0b";
    const std::string secret = "whsec_test1234567890abcdef";
    auto r = request(body, {{"stripe-signature", "t=1767225600,v1=" + std::string(64, 'a') +
                                                     ",v1=" + good + ",v0=ignored"}});
    auto v = check("stripe", {secret}, r);
    EXPECT_TRUE(v.verified) << v.refusal;
    EXPECT_EQ(v.webhook_id, "evt_1QxYz");
    EXPECT_EQ(check("stripe", {secret}, r, now_s + 301).refusal, "stale_timestamp");
    EXPECT_EQ(check("stripe", {secret}, r, now_s - 301).refusal, "stale_timestamp");
    EXPECT_TRUE(check("stripe", {secret}, r, now_s + 300).verified);
    auto tampered = request(body, {{"stripe-signature", "t=1767225601,v1=" + good}});
    EXPECT_EQ(check("stripe", {secret}, tampered, now_s).refusal, "mismatch");
    auto no_t = request(body, {{"stripe-signature", "v1=" + good}});
    EXPECT_EQ(check("stripe", {secret}, no_t).refusal, "missing_header");
}

TEST(ProviderCatalogueTest, ShopifyIsBase64OfTheBodyAndItsTopicReachesTheRun) {
    const std::string body = R"({"id":820982911946154508})";
    auto r = request(body, {{"x-shopify-hmac-sha256", "jqbalbO3Z8mDmrF2/+wzM3KYvbgqzVBF969vgiIy80I="},
                            {"x-shopify-webhook-id", "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043"},
                            {"x-shopify-topic", "orders/create"}});
    auto v = check("shopify", {"shpss_secret"}, r);
    EXPECT_TRUE(v.verified) << v.refusal;
    EXPECT_EQ(v.webhook_id, "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043");
    auto content = json::parse(intake::webhook_content_json(r, intake::provider_headers(entry("shopify"))));
    EXPECT_EQ(content.at("webhook").at("headers").at("x-shopify-topic").as_string(), "orders/create");
    EXPECT_FALSE(content.at("webhook").at("headers").as_object().contains("x-shopify-hmac-sha256"));
    EXPECT_EQ(check("shopify", {"other"}, r).refusal, "mismatch");
}

TEST(ProviderCatalogueTest, TelegramComparesItsSecretTokenAndDedupsOnUpdateId) {
    auto r = request(R"({"update_id":10000,"message":{"text":"hi"}})",
                     {{"x-telegram-bot-api-secret-token", "s3cr3t_Token-1"}});
    auto v = check("telegram", {"s3cr3t_Token-1"}, r);
    EXPECT_TRUE(v.verified);
    EXPECT_EQ(v.webhook_id, "10000");
    EXPECT_EQ(check("telegram", {"s3cr3t_Token-2"}, r).refusal, "mismatch");
    EXPECT_EQ(check("telegram", {}, r).refusal, "mismatch");
}

TEST(ProviderCatalogueTest, LinearChecksTheBodyAndItsMillisecondTimestamp) {
    const std::string body = R"({"action":"create","type":"Issue","webhookTimestamp":1767225600123})";
    auto r = request(body, {{"linear-signature",
                             "f4e4365028ec13782d8e57a327db2e891cd0b7e1ac026faad1319afb595750e1"},
                            {"linear-delivery", "234d1a4e-b617-4388-90fe-adc3633d6b72"},
                            {"linear-event", "Issue"}});
    EXPECT_TRUE(check("linear", {"lin_wh_secret"}, r).verified);
    EXPECT_EQ(check("linear", {"lin_wh_secret"}, r, now_s + 61).refusal, "stale_timestamp");
}

TEST(ProviderCatalogueTest, MailgunSignsTimestampAndTokenFromTheBody) {
    const std::string token = "a8ce0edb2dd8301dee6c2405235584e45aa91d1e9f979f3de0";
    json::object body{{"signature",
                       {{"timestamp", "1767225600"},
                        {"token", token},
                        {"signature", "0c855c5882822342bfb7e3d1618cc1b8abe76fbbf1c19a00fae266c1eda2fe84"}}},
                      {"event-data", {{"event", "delivered"}}}};
    auto r = request(json::serialize(body), {});
    auto v = check("mailgun", {"key-mailgun"}, r);
    EXPECT_TRUE(v.verified) << v.refusal;
    EXPECT_EQ(v.webhook_id, token);
    body["signature"].as_object()["token"] = token + "0";
    EXPECT_EQ(check("mailgun", {"key-mailgun"}, request(json::serialize(body), {})).refusal, "mismatch");
    EXPECT_EQ(check("mailgun", {"key-mailgun"}, request("not json", {})).refusal, "missing_header");
}

TEST(ProviderCatalogueTest, BestEffortDeliversUnverifiedAndNoneDoesNotLook) {
    auto r = request("Hello, World!", {{"x-hub-signature-256", "sha256=00"},
                                       {"x-github-delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958"}});
    auto best = intake::verify_provider(entry("github"), verification_mode::best_effort, {"k"}, r, now_s);
    EXPECT_FALSE(best.refused);
    EXPECT_FALSE(best.verified);
    auto none = intake::verify_provider(entry("github"), verification_mode::none, {}, r, now_s);
    EXPECT_FALSE(none.refused);
    EXPECT_EQ(none.webhook_id, "72d3162e-cc78-11e3-81ab-4c9367dc0958");
}

TEST(ProviderCatalogueTest, SecretShapesAreTheEntrysOwn) {
    EXPECT_TRUE(providers::secret_fits(entry("stripe"), "whsec_test1234567890abcdef"));
    EXPECT_FALSE(providers::secret_fits(entry("stripe"), "sk_live_1234567890abcdef"));
    EXPECT_TRUE(providers::secret_fits(entry("telegram"), "abc_DEF-123"));
    EXPECT_FALSE(providers::secret_fits(entry("telegram"), "has space"));
    EXPECT_TRUE(providers::secret_fits(entry("standard-webhooks"), "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"));
}

} // namespace
} // namespace wopbridge
