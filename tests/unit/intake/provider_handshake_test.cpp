// The catalogue entries that answer an endpoint check (Discord's PING, Zoom's URL validation).
// The signatures are computed apart from this code: Ed25519 by Python's `cryptography` with
// RFC 8032's first test key, HMACs by Python's hmac.
#include "intake/provider_catalogue.hpp"
#include "intake/provider_verify.hpp"
#include "provider_requests.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

namespace wopbridge::provider_handshake_test {
namespace {
namespace json = boost::json;

constexpr std::int64_t now_s = 1767225600;
// RFC 8032 §7.1, TEST 1: the public key of secret key 9d61b1…7f60.
const std::string discord_public_key = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";

inbound_http_request request(std::string body, std::vector<std::pair<std::string, std::string>> h) {
    return testing::json_post(std::move(body), std::move(h));
}

intake::webhook_verification check(std::string_view name, const std::vector<std::string>& secrets,
                                   const inbound_http_request& r, std::int64_t now = now_s,
                                   verification_mode mode = verification_mode::required) {
    const auto* p = providers::find(name);
    EXPECT_NE(p, nullptr) << name;
    static providers::provider none;
    return intake::verify_provider(p != nullptr ? *p : none, mode, secrets, r, now);
}

TEST(ProviderHandshakeTest, DiscordPingIsAnsweredOnlyAfterItsEd25519SignatureVerified) {
    const std::string ping = R"({"id":"1234","type":1})";
    const std::string sig = "4e6aa1dc054fddc67a304ca6824d6e83aeb9acdc4836ff4917af16e854ce1e06"
                            "f14ab967b3bd1ff0d58e684e5122461d358949cc01987b0fab77d315f86f6505";
    auto r = request(ping, {{"x-signature-ed25519", sig}, {"x-signature-timestamp", "1767225600"}});
    auto v = check("discord", {discord_public_key}, r);
    ASSERT_TRUE(v.verified) << v.refusal;
    ASSERT_TRUE(v.answer.has_value());
    EXPECT_EQ(v.answer->status, 200);
    EXPECT_EQ(v.answer->body, R"({"type":1})");

    // Discord's endpoint check sends a bad signature and expects 401: refused, nothing answered.
    auto forged = r;
    forged.body = R"({"id":"1234","type":1} )";
    auto refused = check("discord", {discord_public_key}, forged);
    EXPECT_TRUE(refused.refused);
    EXPECT_EQ(refused.refusal, "mismatch");
    EXPECT_FALSE(refused.answer.has_value());
    // The timestamp is signed, and held to the window.
    auto moved = request(ping, {{"x-signature-ed25519", sig}, {"x-signature-timestamp", "1767225601"}});
    EXPECT_EQ(check("discord", {discord_public_key}, moved, now_s).refusal, "mismatch");
    EXPECT_EQ(check("discord", {discord_public_key}, r, now_s + 301).refusal, "stale_timestamp");
    // A best-effort subscription does not answer an unverified PING either.
    auto best = check("discord", {discord_public_key}, forged, now_s, verification_mode::best_effort);
    EXPECT_FALSE(best.refused);
    EXPECT_FALSE(best.answer.has_value());
    // Another application's key, and a key that is not 32 bytes, verify nothing.
    EXPECT_EQ(check("discord", {std::string(64, '0')}, r).refusal, "mismatch");
    EXPECT_EQ(check("discord", {"d75a98"}, r).refusal, "mismatch");
}

TEST(ProviderHandshakeTest, ADiscordInteractionIsAnEventKeyedByItsId) {
    const std::string body = R"({"id":"5678","type":2,"data":{"name":"deploy"}})";
    const std::string sig = "14a1971243777859dfdd4b3bd400fdc725e61dea071cfdde63645a72c5177bb7"
                            "a5a059bf122c8d94ca690ad7ee5f2f51e39d60842f1b34c97e7576bbd79b0f02";
    auto r = request(body, {{"x-signature-ed25519", sig}, {"x-signature-timestamp", "1767225600"}});
    // Rotation: the old key first, the current one matches.
    auto v = check("discord", {std::string(64, 'a'), discord_public_key}, r);
    EXPECT_TRUE(v.verified) << v.refusal;
    EXPECT_FALSE(v.answer.has_value());
    EXPECT_EQ(v.webhook_id, "5678");
}

TEST(ProviderHandshakeTest, ZoomUrlValidationIsAnsweredOnlyForARequestThatVerified) {
    const std::string secret = "zoom_secret_token";
    const std::string body = R"({"payload":{"plainToken":"qgg8vlvZRS6UYooatFL8Aw"},)"
                             R"("event_ts":1654503849680,"event":"endpoint.url_validation"})";
    auto r = request(body, {{"x-zm-signature",
                             "v0=c2356fd8a71edc4636ae6cc537108bfaab92b11e6b345472e9ef9abefb4b5ee1"},
                            {"x-zm-request-timestamp", "1767225600"}});
    auto v = check("zoom", {secret}, r);
    ASSERT_TRUE(v.verified) << v.refusal;
    ASSERT_TRUE(v.answer.has_value());
    auto reply = json::parse(v.answer->body);
    EXPECT_EQ(reply.at("plainToken").as_string(), "qgg8vlvZRS6UYooatFL8Aw");
    EXPECT_EQ(reply.at("encryptedToken").as_string(),
              "bd48235863f4a6323ccc4963c594908b7c97f88b4a6a95278f4f093690b12726");

    // A stranger's token with a bad signature is refused and nothing is signed back (windmill#9413
    // answered any token: a signing oracle).
    auto oracle = request(R"({"payload":{"plainToken":"attacker-chosen"},"event":"endpoint.url_validation"})",
                          {{"x-zm-signature", "v0=" + std::string(64, '0')},
                           {"x-zm-request-timestamp", "1767225600"}});
    auto refused = check("zoom", {secret}, oracle);
    EXPECT_TRUE(refused.refused);
    EXPECT_FALSE(refused.answer.has_value());
    auto best = check("zoom", {secret}, oracle, now_s, verification_mode::best_effort);
    EXPECT_FALSE(best.answer.has_value());
    auto none = check("zoom", {secret}, oracle, now_s, verification_mode::none);
    EXPECT_FALSE(none.answer.has_value());
}

TEST(ProviderHandshakeTest, AZoomEventVerifiesAndCarriesItsType) {
    const std::string body = R"({"event":"meeting.started","payload":{"object":{"id":"1"}}})";
    auto r = request(body, {{"x-zm-signature",
                             "v0=7ba494eee57c1ea52bf8c9329922ca3947e8e456bd34b47b9b95bbbf10f66884"},
                            {"x-zm-request-timestamp", "1767225600"},
                            {"x-zm-trackingid", "v=2.0,s=1,c=a1b2c3"}});
    auto v = check("zoom", {"zoom_secret_token"}, r);
    EXPECT_TRUE(v.verified) << v.refusal;
    EXPECT_FALSE(v.answer.has_value());
    EXPECT_EQ(v.webhook_id, "v=2.0,s=1,c=a1b2c3");
    EXPECT_EQ(check("zoom", {"zoom_secret_token"}, r, now_s + 301).refusal, "stale_timestamp");
}

} // namespace
} // namespace wopbridge::provider_handshake_test
