// The sms connector through the real `wopbridge serve`: Twilio-signed form posts over the URL the
// config's server.publicUrl names, the published Twilio vectors (../shared/vectors/signatures.json)
// replayed end to end, refused signatures, MessageSid dedup and the TwiML answers. Every accepted
// request starts exactly one run whose causationId is its delivered attempt; every refused one starts
// none and leaves the subscription active.
#include "support/http_client.hpp"
#include "support/provider_signing.hpp"
#include "support/serve_probe.hpp"
#include "support/serve_process.hpp"
#include "support/temp_dir.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

namespace wopbridge::testing::sms_serve_test {
namespace {

namespace json = boost::json;
using params = std::multimap<std::string, std::string>;

constexpr const char* auth_token = "sms-serve-token-0001";
constexpr const char* public_url = "https://sms.example.test"; // what the provider calls
constexpr const char* sub = "sms-inbox";
constexpr const char* auto_reply_twiml =
    R"(<?xml version="1.0" encoding="UTF-8"?><Response><Message>Thanks &amp; see you</Message></Response>)";
constexpr const char* empty_twiml = R"(<?xml version="1.0" encoding="UTF-8"?><Response/>)";

class SmsServeTest : public ::testing::Test {
protected:
    void SetUp() override {
        std::ofstream(dir_.file("wopbridge.yaml"))
            << probe_config_prelude(dir_.path().string(), public_url)
            << "runs: {local: {workflows: [{id: support-triage}]}}\n"
               "connectors:\n"
               "  - {name: sms, module: sms, settings: {authToken: \""
            << auth_token
            << "\", statusCallbacks: ignore}}\n"
               "subscriptions:\n"
               "  - {id: sms-inbox, connector: sms, workflowId: support-triage,\n"
               "     settings: {autoReply: \"Thanks & see you\"}}\n"
               // Twilio's documentation example: its token and its URL (a proxy in front of us).
               "  - {id: twilio-docs, connector: sms, workflowId: support-triage,\n"
               "     settings: {authToken: \"12345\", publicUrl: \"https://mycompany.com/myapp.php\"}}\n";
        ASSERT_TRUE(serve_.start(dir_.file("wopbridge.yaml"), dir_.file("serve.log")))
            << serve_.error;
        probe_ = std::make_unique<serve_probe>(serve_.url(), "hk_probe");
    }

    void TearDown() override {
        serve_.signal(SIGTERM);
        EXPECT_EQ(serve_.wait_exit(), 0) << read_text_file(dir_.file("serve.log"));
    }

    http_reply post_form(const std::string& subscription, const std::string& query,
                         const params& fields, const std::string& signature) {
        http_call c;
        c.method = "POST";
        c.url = serve_.url() + "/v1/ingest/" + subscription + query;
        c.headers = {{"content-type", "application/x-www-form-urlencoded"}};
        if (!signature.empty()) {
            c.headers.emplace_back("x-twilio-signature", signature);
        }
        c.body = form_encode(fields);
        return perform(c);
    }

    http_reply post_signed(const params& fields, const std::string& token = auth_token) {
        const std::string url = std::string(public_url) + "/v1/ingest/" + sub;
        return post_form(sub, "", fields, twilio_signature(token, url, fields));
    }

    static params inbound(const std::string& sid, const std::string& text) {
        return {{"MessageSid", sid}, {"SmsSid", sid},     {"AccountSid", "AC0001"},
                {"From", "+14155550100"}, {"To", "+14155550199"}, {"Body", text},
                {"NumMedia", "0"},        {"NumSegments", "1"}};
    }

    temp_dir dir_;
    serve_process serve_;
    std::unique_ptr<serve_probe> probe_;
};

TEST_F(SmsServeTest, SignedInboundMessageStartsOneRunAndAnswersTheAutoReply) {
    auto r = post_signed(inbound("SM00000000000000000000000000000001", "Help, my order & invoice"));
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.header("content-type").value_or(""), "text/xml");
    EXPECT_EQ(r.body, auto_reply_twiml);
    EXPECT_TRUE(probe_->runs_started(sub, 1));
    EXPECT_EQ(probe_->ingest_count(sub, "accepted"), 1);
}

TEST_F(SmsServeTest, RepeatedMessageSidIsADuplicateOfTheSameRun) {
    const auto fields = inbound("SM00000000000000000000000000000002", "once");
    ASSERT_EQ(post_signed(fields).status, 200);
    std::vector<std::string> runs;
    ASSERT_TRUE(probe_->runs_started(sub, 1, &runs));
    // Twilio's retry: same MessageSid, same answer (the first may have been lost), no second run.
    auto again = post_signed(fields);
    EXPECT_EQ(again.status, 200) << again.body;
    EXPECT_EQ(again.body, auto_reply_twiml);
    EXPECT_EQ(probe_->ingest_count(sub, "duplicate"), 1);
    std::vector<std::string> after;
    EXPECT_TRUE(probe_->runs_started(sub, 1, &after));
    EXPECT_EQ(after, runs);
}

TEST_F(SmsServeTest, BadSignaturesAreRefusedAndStartNoRun) {
    const auto fields = inbound("SM00000000000000000000000000000003", "forged");
    const std::string url = std::string(public_url) + "/v1/ingest/" + sub;
    auto tampered = fields;
    tampered.find("Body")->second = "forged and changed";
    const std::vector<std::pair<std::string, http_reply>> attempts = {
        {"wrong token", post_signed(fields, "another-token")},
        {"missing header", post_form(sub, "", fields, "")},
        {"tampered parameter", post_form(sub, "", tampered, twilio_signature(auth_token, url, fields))},
        {"another URL", post_form(sub, "", fields,
                                  twilio_signature(auth_token, serve_.url() + "/v1/ingest/" + sub,
                                                   fields))},
    };
    for (const auto& [what, r] : attempts) {
        EXPECT_EQ(r.status, 403) << what << ": " << r.body;
        EXPECT_NE(r.body.find("signature_invalid"), std::string::npos) << what << ": " << r.body;
    }
    EXPECT_TRUE(probe_->nothing_started(sub, 0));
    EXPECT_EQ(probe_->ingest_count(sub, "accepted"), 0);
}

TEST_F(SmsServeTest, AForgedFloodOfFieldsIsRefusedBeforeItIsParsed) {
    // 8 MiB of four million empty fields with a forged signature: refused on the field count,
    // before one is built (parsing them all cost +190 MiB of peak memory).
    const long peak_before = proc_status_kib(serve_.pid(), "VmHWM");
    std::string body;
    body.reserve(8 << 20);
    while (body.size() < (8u << 20)) {
        body += "a&";
    }
    http_call c;
    c.method = "POST";
    c.url = serve_.url() + "/v1/ingest/" + sub;
    c.headers = {{"content-type", "application/x-www-form-urlencoded"},
                 {"x-twilio-signature", "Zm9yZ2VkLXNpZ25hdHVyZS0wMDAwMA=="}};
    c.body = body;
    auto r = perform(c);
    EXPECT_EQ(r.status, 413) << r.body;
    EXPECT_NE(r.body.find("payload_too_large"), std::string::npos) << r.body;
    // The body is held a few times over (read, handed to the module); never per field.
    const long grown = proc_status_kib(serve_.pid(), "VmHWM") - peak_before;
    EXPECT_LT(grown, 96 * 1024) << "peak memory grew by " << grown << " KiB";
    EXPECT_TRUE(probe_->nothing_started(sub, 0));
}

TEST_F(SmsServeTest, IgnoredStatusCallbackIsAnsweredWithoutARun) {
    params status = {{"MessageSid", "SM00000000000000000000000000000004"},
                     {"MessageStatus", "delivered"},
                     {"AccountSid", "AC0001"}};
    auto r = post_signed(status);
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.body, empty_twiml);
    EXPECT_TRUE(probe_->nothing_started(sub, 0));
}

// Twilio's published examples (form and JSON), sent to a subscription configured with the
// documentation's token and URL: the query string the provider called is part of what is signed.
TEST_F(SmsServeTest, PublishedTwilioExamplesAreAcceptedEndToEnd) {
    const std::string path = std::string(WOPBRIDGE_SHARED_DIR) + "/vectors/signatures.json";
    if (!std::filesystem::exists(path)) {
        GTEST_SKIP() << path << " is not present";
    }
    auto vectors = json::parse(read_text_file(path)).at("vectors").as_array();
    int used = 0;
    for (const auto& v : vectors) {
        const auto& o = v.as_object();
        const std::string scheme(o.at("scheme").as_string());
        if (scheme != "twilio-form" && scheme != "twilio-json") {
            continue;
        }
        ASSERT_EQ(o.at("authToken").as_string(), "12345");
        const std::string url(o.at("url").as_string());
        const std::string prefix = "https://mycompany.com/myapp.php";
        ASSERT_EQ(url.rfind(prefix, 0), 0u) << url;
        const std::string query = url.substr(prefix.size());
        const std::string signature(o.at("headers").at("x-twilio-signature").as_string());
        http_call c;
        c.method = "POST";
        c.url = serve_.url() + "/v1/ingest/twilio-docs" + query;
        c.headers = {{"x-twilio-signature", signature}};
        if (scheme == "twilio-form") {
            params fields;
            for (const auto& [k, value] : o.at("params").as_object()) {
                fields.emplace(std::string(k), std::string(value.as_string()));
            }
            c.headers.emplace_back("content-type", "application/x-www-form-urlencoded");
            c.body = form_encode(fields);
        } else {
            c.headers.emplace_back("content-type", "application/json");
            c.body = std::string(o.at("body").as_string());
            EXPECT_NE(query.find("bodySHA256=" + sha256_hex(c.body)), std::string::npos);
        }
        auto r = perform(c);
        EXPECT_EQ(r.status, 200) << scheme << ": " << r.body;
        EXPECT_EQ(r.header("content-type").value_or(""), "text/xml") << scheme;
        EXPECT_EQ(r.body, empty_twiml) << scheme;
        ++used;
        // The same request with one signature character changed is refused.
        std::string bad = signature;
        bad[0] = bad[0] == 'A' ? 'B' : 'A';
        c.headers[0].second = bad;
        EXPECT_EQ(perform(c).status, 403) << scheme;
    }
    ASSERT_EQ(used, 2);
    EXPECT_TRUE(probe_->runs_started("twilio-docs", 2));
}

} // namespace
} // namespace wopbridge::testing::sms_serve_test
