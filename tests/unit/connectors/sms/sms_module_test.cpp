// Module-level tests: the built sms.so loaded through the connector harness.

#include "support/connector_harness.hpp"
#include "support/webhook_module_test.hpp"
#include "sms/protocol.hpp"

#include <wopbridge/signatures.hpp>

#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace wopbridge::testing {
namespace {

using params = std::vector<std::pair<std::string, std::string>>;

// twilio-form and twilio-json vectors from shared/vectors/signatures.json.
constexpr std::string_view vector_url = "https://mycompany.com/myapp.php?foo=1&bar=2";
constexpr std::string_view vector_form_signature = "0/KCTR6DLpKmkAf8muzZqo1nDgQ=";
const params vector_params = {{"CallSid", "CA1234567890ABCDE"},
                              {"Caller", "+12349013030"},
                              {"Digits", "1234"},
                              {"From", "+12349013030"},
                              {"To", "+18005551212"}};
constexpr std::string_view vector_json_url =
    "https://mycompany.com/myapp.php?foo=1&bar=2&bodySHA256="
    "0a1ff7634d9ab3b95db5c9a2dfe9416e41502b283a80c7cf19632632f96e6620";
constexpr std::string_view vector_json_body = R"({"property": "value", "boolean": true})";
constexpr std::string_view vector_json_signature = "a9nBmqA0ju/hNViExpshrM61xv4=";

constexpr std::string_view token = "sms-test-token-0001";
constexpr const char* sms_form_type = "application/x-www-form-urlencoded";
constexpr std::string_view empty_twiml = R"(<?xml version="1.0" encoding="UTF-8"?><Response/>)";

std::string form_encode(const params& fields) {
    std::string out;
    for (const auto& [name, value] : fields) {
        if (!out.empty()) {
            out += '&';
        }
        for (const std::string* part : {&name, &value}) {
            for (unsigned char c : *part) {
                if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
                    out.push_back(static_cast<char>(c));
                } else {
                    char buf[4];
                    std::snprintf(buf, sizeof buf, "%%%02X", c);
                    out += buf;
                }
            }
            if (part == &name) {
                out += '=';
            }
        }
    }
    return out;
}

params inbound(std::string sid, std::string text = "Hello") {
    return {{"MessageSid", std::move(sid)}, {"AccountSid", "AC1"},     {"From", "+15551230000"},
            {"To", "+15559870000"},         {"Body", std::move(text)}, {"NumMedia", "0"},
            {"SmsStatus", "received"}};
}

class SmsModuleTest : public ::testing::Test {
  protected:
    void bring_up(std::string config = R"({"authToken":"sms-test-token-0001"})",
                  std::string sub_settings = "{}") {
        std::string error;
        subscription_spec sub;
        sub.settings_json = std::move(sub_settings);
        ASSERT_EQ(harness_.bring_up(config, sub, &error), WB_OK) << error;
    }

    // A form post signed over the harness's public URL for sub-1.
    static http_request_spec signed_form(const params& fields, std::string_view key = token) {
        http_request_spec req;
        const std::string url = std::string(connector_harness::public_base) + "/v1/ingest/sub-1";
        req.headers = {{"Content-Type", sms_form_type},
                       {"X-Twilio-Signature", sig::sign_twilio(key, url, fields)}};
        req.body = form_encode(fields);
        return req;
    }

    // A JSON post signed as Twilio signs one: the URL carries bodySHA256, the signature covers
    // the URL alone.
    static http_request_spec signed_json(const std::string& body) {
        http_request_spec req;
        req.target = "/v1/ingest/sub-1?bodySHA256=" + sig::to_hex(sig::sha256(body));
        const std::string url = std::string(connector_harness::public_base) + req.target;
        req.headers = {{"Content-Type", "application/json"},
                       {"X-Twilio-Signature", sig::sign_twilio(token, url, {})}};
        req.body = body;
        return req;
    }

    static boost::json::value json(const std::string& text) { return boost::json::parse(text); }

    void expect_envelope(const module_reply& reply, int status, std::string_view code) {
        expect_error_envelope(reply, status, code);
    }

    void TearDown() override { EXPECT_TRUE(harness_.violations().empty()); }

    connector_harness harness_{"sms"};
};

TEST_F(SmsModuleTest, DescriptorIsWellFormed) {
    expect_webhook_ingest_descriptor(harness_, "sms", "statusCallbacks", "autoReply");
}

TEST_F(SmsModuleTest, ValidateGivesOneLineReasons) {
    EXPECT_EQ(harness_.validate(R"({"authToken":"x"})").first, WB_OK);
    auto [status, reason] = harness_.validate(R"({"authToken":"x","statusCallbacks":"all"})");
    EXPECT_EQ(status, WB_ERR_INVALID);
    EXPECT_EQ(reason, "statusCallbacks must be \"ignore\" or \"deliver\"");
    EXPECT_EQ(harness_.validate("{}").first, WB_ERR_INVALID);
}

TEST_F(SmsModuleTest, PublishedFormVectorIsAccepted) {
    bring_up(R"({"authToken":"12345"})");
    http_request_spec req;
    req.public_url = std::string(vector_url);
    req.target = "/v1/ingest/sub-1?foo=1&bar=2";
    req.headers = {{"Content-Type", sms_form_type},
                   {"X-Twilio-Signature", std::string(vector_form_signature)}};
    req.body = form_encode(vector_params);
    auto reply = harness_.send(req);
    EXPECT_EQ(reply.status, 200);
    EXPECT_EQ(reply.header("content-type"), "text/xml");
    EXPECT_EQ(reply.body, empty_twiml);
    auto submits = harness_.submits();
    ASSERT_EQ(submits.size(), 1u);
    EXPECT_TRUE(submits[0].verified);
    auto webhook = json(submits[0].content_json).at("webhook");
    EXPECT_EQ(webhook.at("body").at("Caller").as_string(), "+12349013030");
    EXPECT_EQ(webhook.at("body").as_object().size(), 5u);
    EXPECT_EQ(webhook.at("headers").as_object().size(), 1u);
    EXPECT_EQ(webhook.at("headers").at("content-type").as_string(), sms_form_type);
}

TEST_F(SmsModuleTest, PublishedJsonVectorIsAccepted) {
    bring_up(R"({"authToken":"12345"})");
    http_request_spec req;
    req.public_url = std::string(vector_json_url);
    req.headers = {{"Content-Type", "application/json"},
                   {"X-Twilio-Signature", std::string(vector_json_signature)}};
    req.body = std::string(vector_json_body);
    EXPECT_EQ(harness_.send(req).status, 200);
    auto submits = harness_.submits();
    ASSERT_EQ(submits.size(), 1u);
    EXPECT_TRUE(json(submits[0].content_json).at("webhook").at("body").at("boolean").as_bool());

    req.body = R"({"property": "value", "boolean": false})";
    expect_envelope(harness_.send(req), 403, "signature_invalid");
    EXPECT_EQ(harness_.submits().size(), 1u);
}

TEST_F(SmsModuleTest, PublicUrlOverrideVerifiesTheProviderUrl) {
    bring_up(R"({"authToken":"12345","publicUrl":"https://mycompany.com/myapp.php"})");
    http_request_spec req;
    req.target = "/v1/ingest/sub-1?foo=1&bar=2"; // public_url defaults to the bridge's own URL
    req.headers = {{"Content-Type", sms_form_type},
                   {"X-Twilio-Signature", std::string(vector_form_signature)}};
    req.body = form_encode(vector_params);
    EXPECT_EQ(harness_.send(req).status, 200);
    EXPECT_EQ(harness_.submits().size(), 1u);
}

TEST_F(SmsModuleTest, TamperedParameterIsRefused) {
    bring_up(R"({"authToken":"12345"})");
    params tampered = vector_params;
    tampered[2].second = "9999";
    http_request_spec req;
    req.public_url = std::string(vector_url);
    req.headers = {{"Content-Type", sms_form_type},
                   {"X-Twilio-Signature", std::string(vector_form_signature)}};
    req.body = form_encode(tampered);
    expect_envelope(harness_.send(req), 403, "signature_invalid");
    EXPECT_TRUE(harness_.submits().empty());
}

TEST_F(SmsModuleTest, MissingOrWrongSignatureIsRefused) {
    bring_up();
    auto req = signed_form(inbound("SM1"));
    req.headers.pop_back();
    expect_envelope(harness_.send(req), 403, "signature_invalid");
    expect_envelope(harness_.send(signed_form(inbound("SM1"), "other-token")), 403,
                    "signature_invalid");
    EXPECT_TRUE(harness_.submits().empty());
}

TEST_F(SmsModuleTest, RotationAcceptsTheSecondToken) {
    bring_up(R"({"authTokens":["old-token","new-token"]})");
    EXPECT_EQ(harness_.send(signed_form(inbound("SM1"), "new-token")).status, 200);
    EXPECT_EQ(harness_.send(signed_form(inbound("SM2"), "old-token")).status, 200);
    EXPECT_EQ(harness_.send(signed_form(inbound("SM3"), "gone-token")).status, 403);
    EXPECT_EQ(harness_.submits().size(), 2u);
}

TEST_F(SmsModuleTest, DuplicateMessageSidIsADuplicate) {
    bring_up();
    EXPECT_EQ(harness_.send(signed_form(inbound("SM0123"))).status, 200);
    auto reply = harness_.send(signed_form(inbound("SM0123")));
    EXPECT_EQ(reply.status, 200);
    EXPECT_EQ(reply.body, empty_twiml);
    auto submits = harness_.submits();
    ASSERT_EQ(submits.size(), 2u);
    EXPECT_EQ(submits[0].provider_event_id, "sms:SM0123");
    EXPECT_EQ(submits[1].outcome, WB_SUBMIT_DUPLICATE);
    EXPECT_EQ(submits[1].run_id, submits[0].run_id);
}

TEST_F(SmsModuleTest, AutoReplyIsEscapedAndRepeatedForDuplicates) {
    bring_up(R"({"authToken":"sms-test-token-0001","autoReply":"Thanks <3 & \"bye\""})");
    const std::string expected = R"(<?xml version="1.0" encoding="UTF-8"?><Response><Message>)"
                                 R"(Thanks &lt;3 &amp; &quot;bye&quot;</Message></Response>)";
    auto reply = harness_.send(signed_form(inbound("SM1")));
    EXPECT_EQ(reply.status, 200);
    EXPECT_EQ(reply.header("content-type"), "text/xml");
    EXPECT_EQ(reply.body, expected);
    EXPECT_EQ(harness_.send(signed_form(inbound("SM1"))).body, expected);
}

TEST_F(SmsModuleTest, StatusCallbacksAreIgnoredByDefault) {
    bring_up(R"({"authToken":"sms-test-token-0001","autoReply":"hi"})");
    auto reply = harness_.send(signed_form(
        {{"MessageSid", "SM1"}, {"MessageStatus", "delivered"}, {"AccountSid", "AC1"}}));
    EXPECT_EQ(reply.status, 200);
    EXPECT_EQ(reply.body, empty_twiml);
    EXPECT_TRUE(harness_.submits().empty());
}

TEST_F(SmsModuleTest, StatusCallbacksCanBeDelivered) {
    bring_up(R"({"authToken":"sms-test-token-0001","autoReply":"hi"})",
             R"({"statusCallbacks":"deliver"})");
    auto reply = harness_.send(signed_form(
        {{"MessageSid", "SM1"}, {"MessageStatus", "delivered"}, {"AccountSid", "AC1"}}));
    EXPECT_EQ(reply.status, 200);
    EXPECT_EQ(reply.body, empty_twiml); // never an auto-reply to a status callback
    EXPECT_EQ(
        harness_.send(signed_form({{"MessageSid", "SM1"}, {"MessageStatus", "failed"}})).status,
        200);
    auto submits = harness_.submits();
    ASSERT_EQ(submits.size(), 2u);
    EXPECT_EQ(submits[0].provider_event_id, "status:SM1:delivered");
    EXPECT_EQ(submits[1].provider_event_id, "status:SM1:failed");
    EXPECT_EQ(submits[1].outcome, WB_SUBMIT_ACCEPTED);
}

TEST_F(SmsModuleTest, MalformedBodiesAre400WithoutSubmit) {
    bring_up();
    auto req = signed_form(inbound("SM1"));
    req.body = "Body=%G1";
    expect_envelope(harness_.send(req), 400, "malformed_request");
    req.headers[0].second = "text/plain";
    expect_envelope(harness_.send(req), 400, "malformed_request");
    // JSON is signed as bytes: a correctly signed body that is not an object is malformed...
    expect_envelope(harness_.send(signed_json("[1,2]")), 400, "malformed_request");
    expect_envelope(harness_.send(signed_json("{")), 400, "malformed_request");
    // ...and an unsigned one is refused before it is parsed.
    req.headers[0].second = "application/json";
    req.body = "[1,2]";
    expect_envelope(harness_.send(req), 403, "signature_invalid");
    EXPECT_TRUE(harness_.submits().empty());
    // The control: a signed JSON object is taken.
    EXPECT_EQ(harness_.send(signed_json(R"({"MessageSid":"SMjson1","Body":"hi"})")).status, 200);
}

TEST_F(SmsModuleTest, AFloodOfFormFieldsIsRefusedBeforeAnyIsBuilt) {
    bring_up();
    // Past max_form_fields, 413 whatever the signature: the count is read before the parameters.
    std::string body = "MessageSid=SM1";
    for (std::size_t i = 0; i < sms::max_form_fields; ++i) {
        body += "&f" + std::to_string(i) + "=x";
    }
    auto req = signed_form(inbound("SM1"));
    req.body = body;
    expect_envelope(harness_.send(req), 413, "payload_too_large");
    EXPECT_TRUE(harness_.submits().empty());
    // At the limit a signed post is taken.
    params fields = inbound("SM2");
    for (std::size_t i = fields.size(); i < sms::max_form_fields; ++i) {
        fields.emplace_back("f" + std::to_string(i), "x");
    }
    EXPECT_EQ(harness_.send(signed_form(fields)).status, 200);
}

TEST_F(SmsModuleTest, NonPostIs405) {
    bring_up();
    auto req = signed_form(inbound("SM1"));
    req.method = "GET";
    expect_envelope(harness_.send(req), 405, "method_not_allowed");
}

TEST_F(SmsModuleTest, NotActiveIs409AndOverloadIs503) {
    bring_up();
    harness_.set_submit_mode(submit_mode::refuse, "subscription_not_active");
    expect_envelope(harness_.send(signed_form(inbound("SM1"))), 409, "subscription_not_active");
    harness_.set_submit_mode(submit_mode::refuse, "overloaded", 3);
    auto reply = harness_.send(signed_form(inbound("SM1")));
    expect_envelope(reply, 503, "overloaded");
    EXPECT_EQ(reply.header("retry-after"), "3");
}

TEST_F(SmsModuleTest, AnswersOnlyAfterTheCommit) {
    bring_up();
    harness_.pause_submit_completion();
    auto pending = harness_.send_async(signed_form(inbound("SM1")));
    ASSERT_TRUE(harness_.wait_for_submits(1));
    EXPECT_FALSE(pending.ready());
    harness_.resume_submit_completion();
    auto reply = pending.wait();
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->status, 200);
}

TEST_F(SmsModuleTest, SecretsAndContentNeverReachTheLog) {
    bring_up();
    harness_.send(signed_form(inbound("SM1", "private words"), "bad-token"));
    harness_.send(signed_form(inbound("SM2", "private words")));
    ASSERT_FALSE(harness_.log_lines().empty());
    for (const auto& line : harness_.log_lines()) {
        EXPECT_EQ(line.find(token), std::string::npos) << line;
        EXPECT_EQ(line.find("private"), std::string::npos) << line;
    }
}

TEST_F(SmsModuleTest, ExampleConfigSettingsAreAccepted) {
    const std::string path = std::string(WOPBRIDGE_SOURCE_DIR) + "/examples/sms/wopbridge.yaml";
    const std::string settings = settings_from_config(path, "sms");
    auto [status, reason] = harness_.validate(settings);
    EXPECT_EQ(status, WB_OK) << reason << " in " << settings;
    std::string error;
    subscription_spec sub;
    sub.id = "sms-inbox";
    sub.settings_json = settings_from_config(path, "sms-inbox", true);
    EXPECT_EQ(harness_.bring_up(settings, sub, &error), WB_OK) << error;
}

// The curl recipe of examples/sms/README.md: the shell's concatenation, curl's encoding.
TEST_F(SmsModuleTest, ExampleReadmeRecipeVerifies) {
    bring_up(R"({"authToken":"readme-token","autoReply":"Thanks!"})", "{}");
    const std::string url = std::string(connector_harness::public_base) + "/v1/ingest/sub-1";
    const std::string text = "Printer on fire & smoking";
    const std::string data = url + "AccountSidAC0001Body" + text +
                             "From+15551230000MessageSidSM1NumMedia0To+15559870000";
    http_request_spec req;
    req.headers = {
        {"content-type", sms_form_type},
        {"x-twilio-signature", sig::base64_encode(sig::hmac_sha1("readme-token", data))}};
    req.body = "AccountSid=AC0001&Body=Printer%20on%20fire%20%26%20smoking&From=%2B15551230000"
               "&MessageSid=SM1&NumMedia=0&To=%2B15559870000";
    auto reply = harness_.send(req);
    EXPECT_EQ(reply.status, 200);
    EXPECT_NE(reply.body.find("<Message>Thanks!</Message>"), std::string::npos);
    EXPECT_EQ(harness_.submits().size(), 1u);
}

} // namespace
} // namespace wopbridge::testing
