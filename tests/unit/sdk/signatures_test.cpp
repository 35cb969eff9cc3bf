// Signature helpers against the provider vectors (embedded here, and the shared vector file when it
// is present), plus the refusal cases every verifier must get right.
#include "wopbridge/signatures.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace wopbridge::sig {
namespace {

// The contents of /work/shared/vectors/signatures.json, embedded so the test runs without it.
constexpr std::string_view embedded_vectors = R"json({
  "vectors": [
    {"scheme": "standard-webhooks-1", "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
     "headers": {"webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek", "webhook-timestamp": "1614265330",
                 "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="},
     "body": "{\"test\": 2432232314}", "valid": true},
    {"scheme": "standard-webhooks-1", "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
     "headers": {"webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek", "webhook-timestamp": "1614265330",
                 "webhook-signature": "v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA= v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="},
     "body": "{\"test\": 2432232314}", "valid": true},
    {"scheme": "standard-webhooks-1", "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
     "headers": {"webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek", "webhook-timestamp": "1614265330",
                 "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="},
     "body": "{\"test\": 2432232315}", "valid": false},
    {"scheme": "slack-v0", "secret": "8f742231b10e8888abcd99yyyzzz85a5",
     "headers": {"x-slack-request-timestamp": "1531420618",
                 "x-slack-signature": "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"},
     "body": "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c",
     "valid": true},
    {"scheme": "twilio-form", "authToken": "12345", "url": "https://mycompany.com/myapp.php?foo=1&bar=2",
     "params": {"CallSid": "CA1234567890ABCDE", "Caller": "+12349013030", "Digits": "1234",
                "From": "+12349013030", "To": "+18005551212"},
     "headers": {"x-twilio-signature": "0/KCTR6DLpKmkAf8muzZqo1nDgQ="}, "valid": true},
    {"scheme": "twilio-json", "authToken": "12345",
     "url": "https://mycompany.com/myapp.php?foo=1&bar=2&bodySHA256=0a1ff7634d9ab3b95db5c9a2dfe9416e41502b283a80c7cf19632632f96e6620",
     "body": "{\"property\": \"value\", \"boolean\": true}",
     "headers": {"x-twilio-signature": "a9nBmqA0ju/hNViExpshrM61xv4="}, "valid": true},
    {"scheme": "openwop-v1", "secret": "f8a3c0ffee00112233445566778899aabbccddeeff00112233445566778899aa",
     "headers": {"X-openwop-Timestamp": "1767225600",
                 "X-openwop-Signature": "sha256=21e8f1b18fda6e4aec59555c61c034c69b7831466ec1f23933a27208635767f3"},
     "body": "{\"runId\":\"run_abc\",\"workspaceId\":\"workspace-123\",\"event\":{\"type\":\"run.completed\"}}",
     "valid": true}
  ]
})json";

std::string str(const boost::json::object& o, std::string_view key) {
    const auto* v = o.if_contains(key);
    return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

// Header lookup ignoring case (the shared file spells X-openwop-* in mixed case).
std::string header(const boost::json::object& vec, std::string_view name) {
    const auto& headers = vec.at("headers").as_object();
    for (const auto& [k, v] : headers) {
        std::string lower(k);
        for (auto& c : lower) {
            c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        }
        if (lower == name) {
            return std::string(v.as_string());
        }
    }
    return {};
}

// Runs one vector; returns the verdict (nullopt for an unknown scheme).
std::optional<verdict> run_vector(const boost::json::object& vec) {
    const std::string scheme = str(vec, "scheme");
    const std::string body = str(vec, "body");
    if (scheme == "standard-webhooks-1") {
        const std::string ts = header(vec, "webhook-timestamp");
        return verify_standard_webhooks({str(vec, "secret")}, header(vec, "webhook-id"), ts,
                                        header(vec, "webhook-signature"), body,
                                        *parse_unix_seconds(ts));
    }
    if (scheme == "slack-v0") {
        const std::string ts = header(vec, "x-slack-request-timestamp");
        return verify_slack_v0({str(vec, "secret")}, ts, header(vec, "x-slack-signature"), body,
                               *parse_unix_seconds(ts));
    }
    if (scheme == "twilio-form") {
        std::vector<std::pair<std::string, std::string>> params;
        for (const auto& [k, v] : vec.at("params").as_object()) {
            params.emplace_back(std::string(k), std::string(v.as_string()));
        }
        return verify_twilio({str(vec, "authToken")}, str(vec, "url"), params,
                             header(vec, "x-twilio-signature"));
    }
    if (scheme == "twilio-json") {
        return verify_twilio_json({str(vec, "authToken")}, str(vec, "url"), body,
                                  header(vec, "x-twilio-signature"));
    }
    if (scheme == "openwop-v1") {
        const std::string ts = header(vec, "x-openwop-timestamp");
        return verify_openwop_v1(str(vec, "secret"), ts, header(vec, "x-openwop-signature"), body,
                                 *parse_unix_seconds(ts));
    }
    return std::nullopt;
}

int check_vectors(std::string_view json_text, const std::string& origin) {
    const auto doc = boost::json::parse(json_text);
    int count = 0;
    for (const auto& v : doc.at("vectors").as_array()) {
        const auto& vec = v.as_object();
        const auto got = run_vector(vec);
        EXPECT_TRUE(got.has_value()) << origin << ": unknown scheme " << str(vec, "scheme");
        if (!got) {
            continue;
        }
        const bool want = vec.at("valid").as_bool();
        EXPECT_EQ(*got == verdict::valid, want) << origin << " vector #" << count << " ("
                                                << str(vec, "scheme") << "): " << to_string(*got);
        ++count;
    }
    return count;
}

constexpr std::string_view sw_secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
constexpr std::string_view sw_id = "msg_p5jXN8AQM9LWM0D4loKWxJek";
constexpr std::string_view sw_ts = "1614265330";
constexpr std::int64_t sw_now = 1614265330;
constexpr std::string_view sw_sig = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";
constexpr std::string_view sw_body = R"({"test": 2432232314})";

constexpr std::string_view slack_secret = "8f742231b10e8888abcd99yyyzzz85a5";
constexpr std::string_view slack_ts = "1531420618";
constexpr std::int64_t slack_now = 1531420618;
constexpr std::string_view slack_body = "token=abc&team_id=T1&text=hello";

class SignaturesTest : public ::testing::Test {
  protected:
    static verdict sw(const std::vector<std::string>& secrets, std::string_view id,
                      std::string_view ts, std::string_view sig, std::string_view body,
                      std::int64_t now) {
        return verify_standard_webhooks(secrets, id, ts, sig, body, now);
    }
    static std::vector<std::string> secrets(std::initializer_list<std::string_view> s) {
        return {s.begin(), s.end()};
    }
};

// ---- primitives ---------------------------------------------------------------------------------

TEST_F(SignaturesTest, HmacSha256MatchesRfc4231Case2) {
    EXPECT_EQ(to_hex(hmac_sha256("Jefe", "what do ya want for nothing?")),
              "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST_F(SignaturesTest, HmacSha1MatchesRfc2202Case2) {
    EXPECT_EQ(to_hex(hmac_sha1("Jefe", "what do ya want for nothing?")),
              "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79");
}

TEST_F(SignaturesTest, HmacAcceptsEmptyKeyAndMessage) {
    EXPECT_EQ(to_hex(hmac_sha256("", "")),
              "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad");
}

TEST_F(SignaturesTest, HmacSha256MatchesRfc4231Case6LongKey) {
    // A key longer than the block size is hashed first: the shared prototype must not keep it.
    EXPECT_EQ(to_hex(hmac_sha256(std::string(131, '\xaa'),
                                 "Test Using Larger Than Block-Size Key - Hash Key First")),
              "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
    EXPECT_EQ(to_hex(hmac_sha256("Jefe", "what do ya want for nothing?")),
              "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST_F(SignaturesTest, HmacGivesTheSameBytesFromManyThreads) {
    std::vector<std::string> got(8);
    std::vector<std::thread> pool;
    for (std::size_t t = 0; t < got.size(); ++t) {
        pool.emplace_back([&got, t] {
            std::string last;
            for (int i = 0; i < 200; ++i) {
                last = to_hex(hmac_sha256("Jefe", "what do ya want for nothing?")) +
                       to_hex(hmac_sha1("Jefe", "what do ya want for nothing?"));
            }
            got[t] = last;
        });
    }
    for (auto& th : pool) {
        th.join();
    }
    for (const auto& g : got) {
        EXPECT_EQ(g, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
                     "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79");
    }
}

TEST_F(SignaturesTest, Sha256OfAbc) {
    EXPECT_EQ(to_hex(sha256("abc")),
              "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_F(SignaturesTest, HexRoundTripsAndRefusesBadInput) {
    EXPECT_EQ(to_hex(std::string("\x00\xff\x10", 3)), "00ff10");
    EXPECT_EQ(from_hex("00FF10"), std::string("\x00\xff\x10", 3));
    EXPECT_EQ(from_hex(""), std::string());
    EXPECT_FALSE(from_hex("abc"));
    EXPECT_FALSE(from_hex("zz"));
}

TEST_F(SignaturesTest, Base64EncodesRfc4648Vectors) {
    EXPECT_EQ(base64_encode(""), "");
    EXPECT_EQ(base64_encode("f"), "Zg==");
    EXPECT_EQ(base64_encode("fo"), "Zm8=");
    EXPECT_EQ(base64_encode("foo"), "Zm9v");
    EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");
    EXPECT_EQ(base64url_encode(std::string("\xfb\xff", 2)), "-_8");
}

TEST_F(SignaturesTest, Base64DecodesStrictly) {
    EXPECT_EQ(base64_decode("Zm9vYmE="), "fooba");
    EXPECT_EQ(base64_decode("Zg=="), "f");
    EXPECT_EQ(base64_decode(""), "");
    EXPECT_FALSE(base64_decode("Zg"));        // padding required
    EXPECT_FALSE(base64_decode("Zg="));       // wrong length
    EXPECT_FALSE(base64_decode("Z==="));      // too much padding
    EXPECT_FALSE(base64_decode("Zm=v"));      // padding inside
    EXPECT_FALSE(base64_decode("Zm9v\n"));    // bad character
    EXPECT_FALSE(base64_decode("Zm9-"));      // url alphabet is not standard
    EXPECT_FALSE(base64_decode("Zh=="));      // non-zero unused bits
    EXPECT_FALSE(base64_decode("Zm9v Zm9v")); // space
}

TEST_F(SignaturesTest, ConstantTimeEqualComparesContentAndLength) {
    EXPECT_TRUE(constant_time_equal("abc", "abc"));
    EXPECT_TRUE(constant_time_equal("", ""));
    EXPECT_FALSE(constant_time_equal("abc", "abd"));
    EXPECT_FALSE(constant_time_equal("abc", "abcd"));
}

TEST_F(SignaturesTest, WindowIsInclusiveBothWays) {
    EXPECT_TRUE(within_window(1000, 700, 300));
    EXPECT_TRUE(within_window(1000, 1300, 300));
    EXPECT_FALSE(within_window(1000, 699, 300));
    EXPECT_FALSE(within_window(1000, 1301, 300));
    EXPECT_FALSE(within_window(std::numeric_limits<std::int64_t>::max(), 0, 300));
}

TEST_F(SignaturesTest, ParsesUnixSecondsOnlyAsPlainDigits) {
    EXPECT_EQ(parse_unix_seconds("1614265330"), 1614265330);
    EXPECT_EQ(parse_unix_seconds("0"), 0);
    EXPECT_FALSE(parse_unix_seconds(""));
    EXPECT_FALSE(parse_unix_seconds("-5"));
    EXPECT_FALSE(parse_unix_seconds("+5"));
    EXPECT_FALSE(parse_unix_seconds("12 "));
    EXPECT_FALSE(parse_unix_seconds("1.5"));
    EXPECT_FALSE(parse_unix_seconds("99999999999999999999"));
    EXPECT_EQ(parse_unix_seconds("9223372036854775807"), std::numeric_limits<std::int64_t>::max());
    EXPECT_FALSE(parse_unix_seconds("9223372036854775808"));
}

TEST_F(SignaturesTest, VerdictNames) {
    EXPECT_EQ(to_string(verdict::valid), "valid");
    EXPECT_EQ(to_string(verdict::stale_timestamp), "stale_timestamp");
    EXPECT_EQ(to_string(verdict::bad_secret), "bad_secret");
}

// ---- vectors ------------------------------------------------------------------------------------

TEST_F(SignaturesTest, EmbeddedProviderVectors) {
    EXPECT_EQ(check_vectors(embedded_vectors, "embedded"), 7);
}

TEST_F(SignaturesTest, SharedVectorFileWhenPresent) {
    const std::filesystem::path file =
        std::filesystem::path(WOPBRIDGE_SHARED_DIR) / "vectors" / "signatures.json";
    if (!std::filesystem::exists(file)) {
        GTEST_SKIP() << file << " not present";
    }
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_GE(check_vectors(text.str(), file.string()), 7);
}

// ---- OpenWOP v1 ---------------------------------------------------------------------------------

constexpr std::string_view ow_secret =
    "f8a3c0ffee00112233445566778899aabbccddeeff00112233445566778899aa";
constexpr std::string_view ow_body =
    R"({"runId":"run_abc","workspaceId":"workspace-123","event":{"type":"run.completed"}})";
constexpr std::string_view ow_sig =
    "sha256=21e8f1b18fda6e4aec59555c61c034c69b7831466ec1f23933a27208635767f3";

TEST_F(SignaturesTest, OpenWopV1WorkedExample) {
    EXPECT_EQ(sign_openwop_v1(ow_secret, 1767225600, ow_body), ow_sig);
    EXPECT_EQ(verify_openwop_v1(ow_secret, "1767225600", ow_sig, ow_body, 1767225600),
              verdict::valid);
    // secretFingerprint = first 8 hex chars of sha256(secret).
    EXPECT_EQ(to_hex(sha256(ow_secret)).substr(0, 8), "e76bdf08");
}

TEST_F(SignaturesTest, OpenWopV1Refusals) {
    const std::int64_t now = 1767225600;
    EXPECT_EQ(verify_openwop_v1(ow_secret, "1767225600", ow_sig, std::string(ow_body) + " ", now),
              verdict::mismatch);
    EXPECT_EQ(verify_openwop_v1("other", "1767225600", ow_sig, ow_body, now), verdict::mismatch);
    EXPECT_EQ(verify_openwop_v1(ow_secret, "1767225600", ow_sig, ow_body, now + 301),
              verdict::stale_timestamp);
    EXPECT_EQ(verify_openwop_v1(ow_secret, "1767225600", ow_sig, ow_body, now - 301),
              verdict::stale_timestamp);
    EXPECT_EQ(verify_openwop_v1(ow_secret, "1767225600", ow_sig.substr(7), ow_body, now),
              verdict::malformed);
    EXPECT_EQ(verify_openwop_v1(ow_secret, "x", ow_sig, ow_body, now), verdict::malformed);
    EXPECT_EQ(verify_openwop_v1(ow_secret, "", ow_sig, ow_body, now), verdict::missing_header);
    EXPECT_EQ(verify_openwop_v1("", "1767225600", ow_sig, ow_body, now), verdict::bad_secret);
}

// ---- Standard Webhooks --------------------------------------------------------------------------

TEST_F(SignaturesTest, StandardWebhooksSignsTheLibraryVector) {
    EXPECT_EQ(sign_standard_webhooks(sw_secret, sw_id, sw_now, sw_body), std::string(sw_sig));
    EXPECT_EQ(sw(secrets({sw_secret}), sw_id, sw_ts, sw_sig, sw_body, sw_now), verdict::valid);
}

TEST_F(SignaturesTest, StandardWebhooksRefusesTamperedBody) {
    EXPECT_EQ(sw(secrets({sw_secret}), sw_id, sw_ts, sw_sig, R"({"test": 2432232315})", sw_now),
              verdict::mismatch);
}

TEST_F(SignaturesTest, StandardWebhooksRefusesWrongSecret) {
    const std::string other = "whsec_" + base64_encode(std::string(32, 'k'));
    EXPECT_EQ(sw({other}, sw_id, sw_ts, sw_sig, sw_body, sw_now), verdict::mismatch);
}

TEST_F(SignaturesTest, StandardWebhooksRefusesChangedIdOrTimestamp) {
    EXPECT_EQ(
        sw(secrets({sw_secret}), "msg_p5jXN8AQM9LWM0D4loKWxJeX", sw_ts, sw_sig, sw_body, sw_now),
        verdict::mismatch);
    EXPECT_EQ(sw(secrets({sw_secret}), sw_id, "1614265331", sw_sig, sw_body, sw_now),
              verdict::mismatch);
}

TEST_F(SignaturesTest, StandardWebhooksRefusesStaleAndFutureTimestamps) {
    EXPECT_EQ(sw(secrets({sw_secret}), sw_id, sw_ts, sw_sig, sw_body, sw_now + 300),
              verdict::valid);
    EXPECT_EQ(sw(secrets({sw_secret}), sw_id, sw_ts, sw_sig, sw_body, sw_now - 300),
              verdict::valid);
    EXPECT_EQ(sw(secrets({sw_secret}), sw_id, sw_ts, sw_sig, sw_body, sw_now + 301),
              verdict::stale_timestamp);
    EXPECT_EQ(sw(secrets({sw_secret}), sw_id, sw_ts, sw_sig, sw_body, sw_now - 301),
              verdict::stale_timestamp);
}

TEST_F(SignaturesTest, StandardWebhooksAcceptsRotation) {
    const std::string old_secret = "whsec_" + base64_encode(std::string(32, 'o'));
    // The matching secret second of two.
    EXPECT_EQ(sw({old_secret, std::string(sw_secret)}, sw_id, sw_ts, sw_sig, sw_body, sw_now),
              verdict::valid);
    // The matching signature second of two entries.
    const std::string two =
        "v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA= " + std::string(sw_sig);
    EXPECT_EQ(sw(secrets({sw_secret}), sw_id, sw_ts, two, sw_body, sw_now), verdict::valid);
    // An unknown version entry is skipped, not fatal.
    const std::string mixed = "v1a,abcd " + std::string(sw_sig);
    EXPECT_EQ(sw(secrets({sw_secret}), sw_id, sw_ts, mixed, sw_body, sw_now), verdict::valid);
}

TEST_F(SignaturesTest, StandardWebhooksRefusesMalformedHeaders) {
    const auto s = secrets({sw_secret});
    EXPECT_EQ(sw(s, "", sw_ts, sw_sig, sw_body, sw_now), verdict::missing_header);
    EXPECT_EQ(sw(s, sw_id, "", sw_sig, sw_body, sw_now), verdict::missing_header);
    EXPECT_EQ(sw(s, sw_id, sw_ts, "", sw_body, sw_now), verdict::missing_header);
    EXPECT_EQ(sw(s, sw_id, "16142653x0", sw_sig, sw_body, sw_now), verdict::malformed);
    EXPECT_EQ(sw(s, sw_id, "-1614265330", sw_sig, sw_body, sw_now), verdict::malformed);
    EXPECT_EQ(sw(s, sw_id, sw_ts, "g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", sw_body, sw_now),
              verdict::malformed);
    EXPECT_EQ(
        sw(s, sw_id, sw_ts, "v2,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", sw_body, sw_now),
        verdict::malformed);
    EXPECT_EQ(sw(s, sw_id, sw_ts, "v1,", sw_body, sw_now), verdict::mismatch);
}

TEST_F(SignaturesTest, StandardWebhooksRefusesBadSecrets) {
    const std::string key = base64_encode(std::string(32, 'k'));
    EXPECT_EQ(sw({}, sw_id, sw_ts, sw_sig, sw_body, sw_now), verdict::bad_secret);
    EXPECT_EQ(sw({key}, sw_id, sw_ts, sw_sig, sw_body, sw_now), verdict::bad_secret); // no prefix
    EXPECT_EQ(sw({"whsec_not*base64"}, sw_id, sw_ts, sw_sig, sw_body, sw_now), verdict::bad_secret);
    EXPECT_EQ(
        sw({"whsec_" + base64_encode(std::string(23, 'k'))}, sw_id, sw_ts, sw_sig, sw_body, sw_now),
        verdict::bad_secret); // too short
    EXPECT_EQ(
        sw({"whsec_" + base64_encode(std::string(65, 'k'))}, sw_id, sw_ts, sw_sig, sw_body, sw_now),
        verdict::bad_secret); // too long
    EXPECT_FALSE(sign_standard_webhooks("whsec_%%%", sw_id, sw_now, sw_body));
    // One usable secret among bad ones still verifies.
    EXPECT_EQ(sw({"garbage", std::string(sw_secret)}, sw_id, sw_ts, sw_sig, sw_body, sw_now),
              verdict::valid);
}

TEST_F(SignaturesTest, StandardWebhooksRefusesInvalidWebhookId) {
    EXPECT_TRUE(valid_webhook_id("msg_p5jXN8AQM9LWM0D4loKWxJek"));
    EXPECT_TRUE(valid_webhook_id(std::string(16, 'a')));
    EXPECT_TRUE(valid_webhook_id(std::string(128, '-')));
    EXPECT_FALSE(valid_webhook_id(std::string(15, 'a')));
    EXPECT_FALSE(valid_webhook_id(std::string(129, 'a')));
    EXPECT_FALSE(valid_webhook_id("msg.p5jXN8AQM9LWM0D4loKW"));
    EXPECT_FALSE(valid_webhook_id("msg p5jXN8AQM9LWM0D4loKW"));
    // A valid signature over an id with a '.' is still refused: the id would make "id.ts.body"
    // ambiguous.
    const std::string bad_id = "msg.p5jXN8AQM9LWM0D4loKW";
    const auto sig = sign_standard_webhooks(sw_secret, bad_id, sw_now, sw_body);
    ASSERT_TRUE(sig);
    EXPECT_EQ(sw(secrets({sw_secret}), bad_id, sw_ts, *sig, sw_body, sw_now), verdict::malformed);
}

// ---- Slack v0 -----------------------------------------------------------------------------------

TEST_F(SignaturesTest, SlackSignsAndVerifies) {
    const std::string sig = sign_slack_v0(slack_secret, slack_ts, slack_body);
    EXPECT_EQ(sig.substr(0, 3), "v0=");
    EXPECT_EQ(sig.size(), 67u);
    EXPECT_EQ(verify_slack_v0(secrets({slack_secret}), slack_ts, sig, slack_body, slack_now),
              verdict::valid);
}

TEST_F(SignaturesTest, SlackRefusesTamperedBodyAndWrongSecret) {
    const std::string sig = sign_slack_v0(slack_secret, slack_ts, slack_body);
    EXPECT_EQ(
        verify_slack_v0(secrets({slack_secret}), slack_ts, sig, "token=abc&team_id=T2", slack_now),
        verdict::mismatch);
    EXPECT_EQ(verify_slack_v0(secrets({"wrong"}), slack_ts, sig, slack_body, slack_now),
              verdict::mismatch);
}

TEST_F(SignaturesTest, SlackRefusesStaleAndFutureTimestamps) {
    const std::string sig = sign_slack_v0(slack_secret, slack_ts, slack_body);
    EXPECT_EQ(verify_slack_v0(secrets({slack_secret}), slack_ts, sig, slack_body, slack_now + 301),
              verdict::stale_timestamp);
    EXPECT_EQ(verify_slack_v0(secrets({slack_secret}), slack_ts, sig, slack_body, slack_now - 301),
              verdict::stale_timestamp);
    EXPECT_EQ(verify_slack_v0(secrets({slack_secret}), slack_ts, sig, slack_body, slack_now + 300),
              verdict::valid);
}

TEST_F(SignaturesTest, SlackAcceptsRotatedSecret) {
    const std::string sig = sign_slack_v0(slack_secret, slack_ts, slack_body);
    EXPECT_EQ(verify_slack_v0({"old-secret", std::string(slack_secret)}, slack_ts, sig, slack_body,
                              slack_now),
              verdict::valid);
}

TEST_F(SignaturesTest, SlackAcceptsUpperCaseHex) {
    std::string sig = sign_slack_v0(slack_secret, slack_ts, slack_body);
    for (std::size_t i = 3; i < sig.size(); ++i) {
        sig[i] = static_cast<char>(std::toupper(static_cast<unsigned char>(sig[i])));
    }
    EXPECT_EQ(verify_slack_v0(secrets({slack_secret}), slack_ts, sig, slack_body, slack_now),
              verdict::valid);
}

TEST_F(SignaturesTest, SlackRefusesMalformedHeadersAndBadSecret) {
    const std::string sig = sign_slack_v0(slack_secret, slack_ts, slack_body);
    const auto s = secrets({slack_secret});
    EXPECT_EQ(verify_slack_v0(s, "", sig, slack_body, slack_now), verdict::missing_header);
    EXPECT_EQ(verify_slack_v0(s, slack_ts, "", slack_body, slack_now), verdict::missing_header);
    EXPECT_EQ(verify_slack_v0(s, "abc", sig, slack_body, slack_now), verdict::malformed);
    EXPECT_EQ(verify_slack_v0(s, slack_ts, "v1=" + sig.substr(3), slack_body, slack_now),
              verdict::malformed);
    EXPECT_EQ(verify_slack_v0(s, slack_ts, sig.substr(0, 66), slack_body, slack_now),
              verdict::malformed);
    EXPECT_EQ(verify_slack_v0(s, slack_ts, "v0=" + std::string(64, 'g'), slack_body, slack_now),
              verdict::malformed);
    EXPECT_EQ(verify_slack_v0({}, slack_ts, sig, slack_body, slack_now), verdict::bad_secret);
    EXPECT_EQ(verify_slack_v0({""}, slack_ts, sig, slack_body, slack_now), verdict::bad_secret);
}

// ---- Twilio -------------------------------------------------------------------------------------

const std::vector<std::pair<std::string, std::string>> twilio_params = {
    {"To", "+18005551212"},
    {"CallSid", "CA1234567890ABCDE"},
    {"Caller", "+12349013030"},
    {"Digits", "1234"},
    {"From", "+12349013030"}};
constexpr std::string_view twilio_url = "https://mycompany.com/myapp.php?foo=1&bar=2";

TEST_F(SignaturesTest, TwilioFormSignatureIgnoresParameterOrder) {
    EXPECT_EQ(sign_twilio("12345", twilio_url, twilio_params), "0/KCTR6DLpKmkAf8muzZqo1nDgQ=");
    EXPECT_EQ(verify_twilio({"12345"}, twilio_url, twilio_params, "0/KCTR6DLpKmkAf8muzZqo1nDgQ="),
              verdict::valid);
}

TEST_F(SignaturesTest, TwilioFormRefusals) {
    auto tampered = twilio_params;
    tampered[3].second = "9999";
    EXPECT_EQ(verify_twilio({"12345"}, twilio_url, tampered, "0/KCTR6DLpKmkAf8muzZqo1nDgQ="),
              verdict::mismatch);
    EXPECT_EQ(verify_twilio({"54321"}, twilio_url, twilio_params, "0/KCTR6DLpKmkAf8muzZqo1nDgQ="),
              verdict::mismatch);
    EXPECT_EQ(verify_twilio({"12345"}, "https://mycompany.com:8443/myapp.php?foo=1&bar=2",
                            twilio_params, "0/KCTR6DLpKmkAf8muzZqo1nDgQ="),
              verdict::mismatch);
    EXPECT_EQ(verify_twilio({"54321", "12345"}, twilio_url, twilio_params,
                            "0/KCTR6DLpKmkAf8muzZqo1nDgQ="),
              verdict::valid);
    EXPECT_EQ(verify_twilio({"12345"}, twilio_url, twilio_params, ""), verdict::missing_header);
    EXPECT_EQ(verify_twilio({"12345"}, twilio_url, twilio_params, "not base64!"),
              verdict::malformed);
    EXPECT_EQ(verify_twilio({}, twilio_url, twilio_params, "0/KCTR6DLpKmkAf8muzZqo1nDgQ="),
              verdict::bad_secret);
}

constexpr std::string_view twilio_json_url =
    "https://mycompany.com/myapp.php?foo=1&bar=2&bodySHA256="
    "0a1ff7634d9ab3b95db5c9a2dfe9416e41502b283a80c7cf19632632f96e6620";
constexpr std::string_view twilio_json_body = R"({"property": "value", "boolean": true})";

TEST_F(SignaturesTest, TwilioJsonChecksBodyHash) {
    EXPECT_EQ(verify_twilio_json({"12345"}, twilio_json_url, twilio_json_body,
                                 "a9nBmqA0ju/hNViExpshrM61xv4="),
              verdict::valid);
    // The URL (and so the signature) is intact but the body is not the one hashed into it.
    EXPECT_EQ(verify_twilio_json({"12345"}, twilio_json_url,
                                 R"({"property": "other", "boolean": true})",
                                 "a9nBmqA0ju/hNViExpshrM61xv4="),
              verdict::mismatch);
    EXPECT_EQ(verify_twilio_json({"nope"}, twilio_json_url, twilio_json_body,
                                 "a9nBmqA0ju/hNViExpshrM61xv4="),
              verdict::mismatch);
}

TEST_F(SignaturesTest, TwilioJsonRefusesMissingBodyHash) {
    EXPECT_EQ(
        verify_twilio_json({"12345"}, twilio_url, twilio_json_body, "a9nBmqA0ju/hNViExpshrM61xv4="),
        verdict::malformed);
    EXPECT_EQ(verify_twilio_json({"12345"}, "https://x.example/?bodySHA256=zz", twilio_json_body,
                                 "a9nBmqA0ju/hNViExpshrM61xv4="),
              verdict::malformed);
    EXPECT_EQ(verify_twilio_json({"12345"}, twilio_json_url, twilio_json_body, ""),
              verdict::missing_header);
}

// RFC 8032 §7.1, TEST 1 (the empty message) and TEST 2 (one byte, 0x72).
TEST_F(SignaturesTest, Ed25519VerifiesRfc8032VectorsAndNothingElse) {
    auto key1 = *from_hex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a");
    auto sig1 = *from_hex("e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e06522490155"
                          "5fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b");
    auto key2 = *from_hex("3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c");
    auto sig2 = *from_hex("92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da"
                          "085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00");
    EXPECT_TRUE(ed25519_verify(key1, sig1, ""));
    EXPECT_TRUE(ed25519_verify(key2, sig2, "\x72"));
    EXPECT_FALSE(ed25519_verify(key2, sig2, "\x73"));
    EXPECT_FALSE(ed25519_verify(key1, sig2, "\x72"));
    EXPECT_FALSE(ed25519_verify(key2.substr(0, 31), sig2, "\x72"));
    EXPECT_FALSE(ed25519_verify(key2, sig2.substr(0, 63), "\x72"));
}

} // namespace
} // namespace wopbridge::sig
