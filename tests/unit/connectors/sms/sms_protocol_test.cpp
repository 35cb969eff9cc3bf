// Pure protocol tests for the SMS (Twilio-compatible) connector: settings, the signed URL,
// verification with the published vectors, classification, TwiML and content.

#include "sms/protocol.hpp"
#include "sms/settings.hpp"

#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

namespace wopbridge::sms {
namespace {

// twilio-form and twilio-json vectors from shared/vectors/signatures.json.
constexpr std::string_view vector_url = "https://mycompany.com/myapp.php?foo=1&bar=2";
constexpr std::string_view vector_form_body =
    "CallSid=CA1234567890ABCDE&Caller=%2B12349013030&Digits=1234&From=%2B12349013030"
    "&To=%2B18005551212";
constexpr std::string_view vector_form_signature = "0/KCTR6DLpKmkAf8muzZqo1nDgQ=";
constexpr std::string_view vector_json_url =
    "https://mycompany.com/myapp.php?foo=1&bar=2&bodySHA256="
    "0a1ff7634d9ab3b95db5c9a2dfe9416e41502b283a80c7cf19632632f96e6620";
constexpr std::string_view vector_json_body = R"({"property": "value", "boolean": true})";
constexpr std::string_view vector_json_signature = "a9nBmqA0ju/hNViExpshrM61xv4=";

class SmsProtocolTest : public ::testing::Test {
protected:
    static settings with_token(std::string token = "12345") {
        settings s;
        s.auth_tokens = {std::move(token)};
        return s;
    }

    static sms_request parse_ok(std::string_view content_type, std::string_view body) {
        std::string error;
        auto r = parse_request(content_type, body, error);
        EXPECT_TRUE(r) << error;
        return r ? *r : sms_request{};
    }
};

TEST_F(SmsProtocolTest, SettingsRequireAToken) {
    std::string error;
    EXPECT_FALSE(parse_connector_settings("{}", error));
    EXPECT_EQ(error, "authToken or authTokens is required");
    EXPECT_FALSE(parse_connector_settings(R"({"authTokens":[""]})", error));
    EXPECT_TRUE(parse_connector_settings(R"({"authTokens":["a","b"]})", error));
}

TEST_F(SmsProtocolTest, SettingsValidateEveryKey) {
    std::string error;
    EXPECT_FALSE(parse_connector_settings(R"({"authToken":"a","publicUrl":"mycompany.com"})", error));
    EXPECT_FALSE(parse_connector_settings(R"({"authToken":"a","statusCallbacks":"drop"})", error));
    EXPECT_FALSE(parse_connector_settings(R"({"authToken":"a","autoReply":""})", error));
    EXPECT_FALSE(parse_connector_settings(R"({"authToken":"secret-tok","autoreply":"x"})", error));
    EXPECT_EQ(error.find("secret-tok"), std::string::npos);
    auto s = parse_connector_settings(
        R"({"authToken":"a","publicUrl":"https://x.example/sms","autoReply":"hi",)"
        R"("statusCallbacks":"deliver"})",
        error);
    ASSERT_TRUE(s) << error;
    EXPECT_EQ(s->public_url, "https://x.example/sms");
    EXPECT_EQ(s->auto_reply, "hi");
    EXPECT_EQ(s->status_callbacks, status_callback_policy::deliver);
}

TEST_F(SmsProtocolTest, SubscriptionSettingsOverride) {
    std::string error;
    auto base = parse_connector_settings(R"({"authToken":"a","autoReply":"hi"})", error);
    ASSERT_TRUE(base);
    auto s = apply_subscription_settings(*base, R"({"authTokens":["b"],"statusCallbacks":"deliver"})",
                                         error);
    ASSERT_TRUE(s) << error;
    EXPECT_EQ(s->auth_tokens, (std::vector<std::string>{"b"}));
    EXPECT_EQ(s->auto_reply, "hi");
    EXPECT_EQ(s->status_callbacks, status_callback_policy::deliver);
    EXPECT_FALSE(apply_subscription_settings(*base, R"({"x":1})", error));
}

TEST_F(SmsProtocolTest, SignedUrlUsesTheOverrideWithTheReceivedQuery) {
    settings s = with_token();
    EXPECT_EQ(signed_url(s, "https://bridge/v1/ingest/a?x=1", "/v1/ingest/a?x=1"),
              "https://bridge/v1/ingest/a?x=1");
    s.public_url = "https://mycompany.com/myapp.php?ignored=1";
    EXPECT_EQ(signed_url(s, "https://bridge/v1/ingest/a?foo=1&bar=2", "/v1/ingest/a?foo=1&bar=2"),
              vector_url);
    EXPECT_EQ(signed_url(s, "https://bridge/v1/ingest/a", "/v1/ingest/a"),
              "https://mycompany.com/myapp.php");
}

TEST_F(SmsProtocolTest, AlternatePortForm) {
    EXPECT_EQ(alternate_port_form("https://a.example/p?q=1"), "https://a.example:443/p?q=1");
    EXPECT_EQ(alternate_port_form("https://a.example:443/p"), "https://a.example/p");
    EXPECT_EQ(alternate_port_form("http://a.example"), "http://a.example:80");
    EXPECT_FALSE(alternate_port_form("https://a.example:8443/p"));
    EXPECT_FALSE(alternate_port_form("ftp://a.example/p"));
    EXPECT_EQ(alternate_port_form("https://[::1]/p"), "https://[::1]:443/p");
}

TEST_F(SmsProtocolTest, PublishedFormVectorVerifies) {
    auto r = parse_ok("application/x-www-form-urlencoded", vector_form_body);
    EXPECT_EQ(verify_request(with_token(), r, vector_url, vector_form_body, vector_form_signature),
              sig::verdict::valid);
    EXPECT_EQ(verify_request(with_token("54321"), r, vector_url, vector_form_body,
                             vector_form_signature),
              sig::verdict::mismatch);
}

TEST_F(SmsProtocolTest, FormVectorVerifiesWithAnExplicitDefaultPort) {
    auto r = parse_ok("application/x-www-form-urlencoded", vector_form_body);
    EXPECT_EQ(verify_request(with_token(), r, "https://mycompany.com:443/myapp.php?foo=1&bar=2",
                             vector_form_body, vector_form_signature),
              sig::verdict::valid);
}

TEST_F(SmsProtocolTest, TamperedParameterFails) {
    const std::string body = std::string(vector_form_body) + "&Body=extra";
    auto r = parse_ok("application/x-www-form-urlencoded", body);
    EXPECT_EQ(verify_request(with_token(), r, vector_url, body, vector_form_signature),
              sig::verdict::mismatch);
}

TEST_F(SmsProtocolTest, PublishedJsonVectorVerifies) {
    auto r = parse_ok("application/json", vector_json_body);
    EXPECT_EQ(r.format, body_format::json);
    EXPECT_EQ(verify_request(with_token(), r, vector_json_url, vector_json_body,
                             vector_json_signature),
              sig::verdict::valid);
    const std::string tampered = R"({"property": "value", "boolean": false})";
    auto t = parse_ok("application/json", tampered);
    EXPECT_NE(verify_request(with_token(), t, vector_json_url, tampered, vector_json_signature),
              sig::verdict::valid);
    EXPECT_EQ(verify_request(with_token(), r, vector_url, vector_json_body, vector_json_signature),
              sig::verdict::malformed); // no bodySHA256
}

TEST_F(SmsProtocolTest, InboundMessageIsKeyedOnMessageSid) {
    auto r = parse_ok("application/x-www-form-urlencoded",
                      "MessageSid=SM123&SmsStatus=received&Body=Hello+there&From=%2B1555");
    EXPECT_FALSE(r.status_callback);
    EXPECT_EQ(r.provider_event_id, "sms:SM123");
    EXPECT_EQ(r.body.at("Body").as_string(), "Hello there");
    EXPECT_EQ(r.body.at("From").as_string(), "+1555");
}

TEST_F(SmsProtocolTest, StatusCallbackIsKeyedOnSidAndStatus) {
    auto r = parse_ok("application/x-www-form-urlencoded",
                      "MessageSid=SM123&MessageStatus=delivered");
    EXPECT_TRUE(r.status_callback);
    EXPECT_EQ(r.provider_event_id, "status:SM123:delivered");
    auto inbound = parse_ok("application/x-www-form-urlencoded",
                            "MessageSid=SM9&MessageStatus=received");
    EXPECT_FALSE(inbound.status_callback);
}

TEST_F(SmsProtocolTest, RequestsWithoutASidUseABodyHash) {
    auto a = parse_ok("application/x-www-form-urlencoded", vector_form_body);
    auto b = parse_ok("application/x-www-form-urlencoded", vector_form_body);
    EXPECT_EQ(a.provider_event_id.rfind("sha256:", 0), 0u);
    EXPECT_EQ(a.provider_event_id, b.provider_event_id);
    auto c = parse_ok("application/x-www-form-urlencoded", "CallSid=other");
    EXPECT_NE(a.provider_event_id, c.provider_event_id);
}

TEST_F(SmsProtocolTest, MalformedBodiesAreErrors) {
    std::string error;
    EXPECT_FALSE(parse_request("application/json", "[1]", error));
    EXPECT_FALSE(parse_request("application/json", "{", error));
    EXPECT_FALSE(parse_request("application/x-www-form-urlencoded", "Body=%G1", error));
    EXPECT_FALSE(parse_request("text/plain", "hi", error));
}

TEST_F(SmsProtocolTest, XmlEscaping) {
    EXPECT_EQ(xml_escape(R"(<b>&"x"'y')"), "&lt;b&gt;&amp;&quot;x&quot;&apos;y&apos;");
    EXPECT_EQ(xml_escape(std::string("a\x01\tb\n", 5)), "a\tb\n");
    EXPECT_EQ(xml_escape("caf\xc3\xa9"), "caf\xc3\xa9");
}

TEST_F(SmsProtocolTest, TwimlResponses) {
    EXPECT_EQ(twiml_response(std::nullopt), R"(<?xml version="1.0" encoding="UTF-8"?><Response/>)");
    EXPECT_EQ(twiml_response(std::string("Thanks & <bye>")),
              R"(<?xml version="1.0" encoding="UTF-8"?><Response><Message>Thanks &amp; )"
              R"(&lt;bye&gt;</Message></Response>)");
}

TEST_F(SmsProtocolTest, ContentCarriesAllParamsAndOnlyContentType) {
    auto r = parse_ok("application/x-www-form-urlencoded", "MessageSid=SM1&Body=hi&NumMedia=0");
    auto doc = boost::json::parse(content_json(r, "application/x-www-form-urlencoded"));
    const auto& webhook = doc.at("webhook").as_object();
    EXPECT_EQ(doc.as_object().size(), 1u);
    EXPECT_EQ(webhook.at("method").as_string(), "POST");
    EXPECT_EQ(webhook.at("headers").as_object().size(), 1u);
    EXPECT_EQ(webhook.at("body").as_object().size(), 3u);
    EXPECT_EQ(webhook.at("body").at("NumMedia").as_string(), "0");
}

} // namespace
} // namespace wopbridge::sms
