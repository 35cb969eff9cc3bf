// Module-level tests: the built forms.so driven through the connector harness.
#include "forms/form_logic.hpp"
#include "support/connector_harness.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

namespace wopbridge::forms {
namespace {

using wopbridge::testing::connector_harness;
using wopbridge::testing::http_request_spec;
using wopbridge::testing::subscription_spec;

constexpr const char* origin = "https://www.example.com";
constexpr const char* secret = "form-token-secret-0123456789";

class FormsConnectorTest : public ::testing::Test {
  protected:
    void bring_up(const std::string& settings, const std::string& config = "{}") {
        subscription_spec sub;
        sub.id = "sub-1";
        sub.source = "form";
        sub.settings_json = settings;
        std::string err;
        ASSERT_EQ(h_.bring_up(config, sub, &err), WB_OK) << err;
    }

    http_request_spec urlencoded(std::string body, bool json = true) {
        http_request_spec r;
        r.headers = {{"content-type", "application/x-www-form-urlencoded"}, {"origin", origin}};
        if (json) {
            r.headers.emplace_back("accept", "application/json");
        }
        r.body = std::move(body);
        return r;
    }

    std::string token_from_endpoint() {
        http_request_spec r;
        r.method = "GET";
        r.target = "/v1/ingest/sub-1/token";
        r.headers = {{"origin", origin}};
        auto reply = h_.send(r);
        EXPECT_EQ(reply.status, 200);
        EXPECT_EQ(reply.header("access-control-allow-origin"), origin);
        auto v = boost::json::parse(reply.body);
        EXPECT_EQ(v.at("field"), "_token");
        return std::string(v.at("token").as_string());
    }

    void expect_clean() { EXPECT_TRUE(h_.violations().empty()); }

    connector_harness h_{"forms"};
};

TEST_F(FormsConnectorTest, DescriptorIsWellFormed) {
    EXPECT_EQ(h_.descriptor_problem(), "");
    EXPECT_EQ(std::string(h_.descriptor().source), "form");
    EXPECT_NE(h_.descriptor().capabilities & WB_CAP_TOKEN_GET, 0u);
}

TEST_F(FormsConnectorTest, RefusesSettingsWithoutOrigins) {
    ASSERT_EQ(h_.create("{}"), WB_OK);
    ASSERT_EQ(h_.start(), WB_OK);
    subscription_spec sub;
    sub.settings_json = R"({"honeypotField":"x"})";
    EXPECT_EQ(h_.subscribe(sub), WB_ERR_INVALID);
    sub.settings_json = R"({"allowedOrigins":["https://a.example/path"]})";
    EXPECT_EQ(h_.subscribe(sub), WB_ERR_INVALID);
    EXPECT_EQ(h_.validate(R"({"bogus":1})").first, WB_ERR_INVALID);
}

// The refusal names the entry, by position and as written, so the operator can find it.
TEST_F(FormsConnectorTest, RefusesAnAllowedOriginThatIsNotAnOriginNamingTheEntry) {
    ASSERT_EQ(h_.create("{}"), WB_OK);
    ASSERT_EQ(h_.start(), WB_OK);
    subscription_spec sub;
    sub.id = "sub-1";
    for (const char* entry :
         {"javascript:alert(1)", "https://user@www.example.com", "https://*.example.com",
          "https://www.example.com?x", "https://www.example.com:"}) {
        sub.settings_json = std::string(R"({"allowedOrigins":["https://ok.example",")") + entry +
                            R"("]})";
        std::string err;
        EXPECT_EQ(h_.subscribe(sub, &err), WB_ERR_INVALID) << entry;
        EXPECT_NE(err.find(std::string("allowedOrigins[1] '") + entry + "' is not an origin"),
                  std::string::npos)
            << err;
        EXPECT_NE(err.find("http(s)://host[:port]"), std::string::npos) << err;
    }
    // Control characters and long entries are not copied into the message as they are.
    sub.settings_json = R"({"allowedOrigins":["https://a
b.example"]})";
    std::string err;
    EXPECT_EQ(h_.subscribe(sub, &err), WB_ERR_INVALID);
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
    sub.settings_json = R"({"allowedOrigins":["https://)" + std::string(500, 'a') + R"(/"]})";
    EXPECT_EQ(h_.subscribe(sub, &err), WB_ERR_INVALID);
    EXPECT_LT(err.size(), 300u) << err;
}

TEST_F(FormsConnectorTest, UrlencodedPostSubmitsOneEventAndAnswersJson) {
    bring_up(R"({"allowedOrigins":["https://www.example.com"]})");
    auto reply = h_.send(urlencoded("name=Ada+L&topic=a&topic=b"));
    EXPECT_EQ(reply.status, 202);
    auto body = boost::json::parse(reply.body);
    EXPECT_EQ(body.at("outcome"), "accepted");
    EXPECT_FALSE(body.at("runId").as_string().empty());
    auto submits = h_.submits();
    ASSERT_EQ(submits.size(), 1u);
    EXPECT_EQ(submits[0].subscription_id, "sub-1");
    EXPECT_EQ(submits[0].provider_event_id.rfind("hash:", 0), 0u);
    auto content = boost::json::parse(submits[0].content_json);
    EXPECT_EQ(content.at("form").at("fields").at("name"), "Ada L");
    EXPECT_EQ(content.at("form").at("fields").at("topic"), (boost::json::array{"a", "b"}));
    expect_clean();
}

TEST_F(FormsConnectorTest, SameContentWithinWindowIsDuplicate) {
    bring_up(R"({"allowedOrigins":["https://www.example.com"],"dedupWindow":60})");
    h_.set_now_ms(1'800'000'000'000);
    auto first = h_.send(urlencoded("a=1"));
    auto second = h_.send(urlencoded("a=1"));
    EXPECT_EQ(first.status, 202);
    EXPECT_EQ(second.status, 200);
    EXPECT_EQ(boost::json::parse(second.body).at("outcome"), "duplicate");
    EXPECT_EQ(boost::json::parse(second.body).at("runId"),
              boost::json::parse(first.body).at("runId"));
    expect_clean();
}

TEST_F(FormsConnectorTest, SubmissionIdFieldDrivesDedup) {
    bring_up(R"({"allowedOrigins":["https://www.example.com"],"submissionIdField":"sid"})");
    h_.send(urlencoded("sid=42&a=1"));
    auto submits = h_.submits();
    ASSERT_EQ(submits.size(), 1u);
    EXPECT_EQ(submits[0].provider_event_id, "submission:42");
}

TEST_F(FormsConnectorTest, MultipartFileBecomesAttachmentRef) {
    bring_up(R"({"allowedOrigins":["https://www.example.com"]})");
    http_request_spec r;
    r.headers = {{"content-type", "multipart/form-data; boundary=----b0undary"},
                 {"origin", origin},
                 {"accept", "application/json"}};
    r.body = "------b0undary\r\n"
             "Content-Disposition: form-data; name=\"name\"\r\n\r\n"
             "Ada\r\n"
             "------b0undary\r\n"
             "Content-Disposition: form-data; name=\"cv\"; filename=\"cv.txt\"\r\n"
             "Content-Type: text/plain\r\n\r\n"
             "file bytes\r\n"
             "------b0undary\r\n"
             "Content-Disposition: form-data; name=\"empty\"; filename=\"\"\r\n"
             "Content-Type: application/octet-stream\r\n\r\n"
             "\r\n"
             "------b0undary--\r\n";
    auto reply = h_.send(r);
    EXPECT_EQ(reply.status, 202) << reply.body;
    auto submits = h_.submits();
    ASSERT_EQ(submits.size(), 1u);
    auto content = boost::json::parse(submits[0].content_json);
    const auto& files = content.at("form").at("files").as_array();
    ASSERT_EQ(files.size(), 1u);
    EXPECT_EQ(files[0].at("filename"), "cv.txt");
    EXPECT_EQ(files[0].at("mediaType"), "text/plain");
    EXPECT_EQ(files[0].at("bytes"), 10);
    auto ref = std::string(files[0].at("ref").as_string());
    EXPECT_EQ(h_.attachment(ref).value_or(""), "file bytes");
    EXPECT_EQ(submits[0].content_json.find("file bytes"), std::string::npos);
    expect_clean();
}

TEST_F(FormsConnectorTest, MalformedMultipartIs400WithoutSubmit) {
    bring_up(R"({"allowedOrigins":["https://www.example.com"]})");
    http_request_spec r;
    r.headers = {{"content-type", "multipart/form-data; boundary=b"}, {"origin", origin}};
    r.body = "--b\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\ntruncated";
    EXPECT_EQ(h_.send(r).status, 400);
    r.headers[0].second = "multipart/form-data";
    EXPECT_EQ(h_.send(r).status, 400);
    r.headers[0].second = "application/json";
    EXPECT_EQ(h_.send(r).status, 415);
    EXPECT_TRUE(h_.submits().empty());
}

TEST_F(FormsConnectorTest, ForeignOriginIsRefused) {
    bring_up(R"({"allowedOrigins":["https://www.example.com"]})");
    auto r = urlencoded("a=1");
    r.headers[1].second = "https://evil.example";
    auto reply = h_.send(r);
    EXPECT_EQ(reply.status, 403);
    EXPECT_EQ(boost::json::parse(reply.body).at("error"), "forbidden");
    r.headers.erase(r.headers.begin() + 1); // no Origin, no Referer
    EXPECT_EQ(h_.send(r).status, 403);
    r.headers.emplace_back("referer", "https://www.example.com/contact");
    EXPECT_EQ(h_.send(r).status, 202);
    EXPECT_EQ(h_.submits().size(), 1u);
}

TEST_F(FormsConnectorTest, RefusalRedirectsBrowsersToErrorUrl) {
    bring_up(R"({"allowedOrigins":["https://www.example.com"],
                 "errorUrl":"https://www.example.com/oops"})");
    auto r = urlencoded("a=1", false);
    r.headers[1].second = "https://evil.example";
    auto reply = h_.send(r);
    EXPECT_EQ(reply.status, 303);
    EXPECT_EQ(reply.header("location"), "https://www.example.com/oops?error=forbidden");
    EXPECT_TRUE(h_.submits().empty());
}

TEST_F(FormsConnectorTest, HoneypotLooksAcceptedButSubmitsNothing) {
    bring_up(R"({"allowedOrigins":["https://www.example.com"],"honeypotField":"website"})");
    auto reply = h_.send(urlencoded("a=1&website=http%3A%2F%2Fspam"));
    EXPECT_EQ(reply.status, 202);
    EXPECT_EQ(boost::json::parse(reply.body).at("outcome"), "accepted");
    EXPECT_TRUE(h_.submits().empty());
    EXPECT_EQ(h_.send(urlencoded("a=1&website=")).status, 202);
    auto submits = h_.submits();
    ASSERT_EQ(submits.size(), 1u);
    EXPECT_FALSE(boost::json::parse(submits[0].content_json)
                     .at("form")
                     .at("fields")
                     .as_object()
                     .contains("website"));
}

TEST_F(FormsConnectorTest, TokenIssuedVerifiedAndStripped) {
    bring_up(std::string(R"({"allowedOrigins":["https://www.example.com"],"tokenSecret":")") +
             secret + R"(","tokenTtl":60})");
    auto token = token_from_endpoint();
    EXPECT_EQ(h_.send(urlencoded("a=1")).status, 403); // missing
    EXPECT_EQ(h_.send(urlencoded("a=1&_token=1.ab.cd")).status, 403);
    auto reply = h_.send(urlencoded("a=1&_token=" + token));
    EXPECT_EQ(reply.status, 202) << reply.body;
    auto submits = h_.submits();
    ASSERT_EQ(submits.size(), 1u);
    EXPECT_EQ(submits[0].content_json.find("_token"), std::string::npos);
}

TEST_F(FormsConnectorTest, ExpiredTokenIsRefused) {
    bring_up(std::string(R"({"allowedOrigins":["https://www.example.com"],"tokenSecret":")") +
             secret + R"(","tokenTtl":60})");
    auto now = h_.now_ms();
    auto token = token_from_endpoint();
    h_.set_now_ms(now + 61'000);
    EXPECT_EQ(h_.send(urlencoded("a=1&_token=" + token)).status, 403);
    EXPECT_TRUE(h_.submits().empty());
}

TEST_F(FormsConnectorTest, BrowserGets303ToSuccessUrl) {
    bring_up(R"({"allowedOrigins":["https://www.example.com"],
                 "successUrl":"https://www.example.com/thanks"})");
    auto reply = h_.send(urlencoded("a=1", false));
    EXPECT_EQ(reply.status, 303);
    EXPECT_EQ(reply.header("location"), "https://www.example.com/thanks");
    auto json = h_.send(urlencoded("a=2", true));
    EXPECT_EQ(json.status, 202);
    EXPECT_EQ(h_.submits().size(), 2u);
    expect_clean();
}

TEST_F(FormsConnectorTest, HostRefusalsMapToEnvelopes) {
    bring_up(R"({"allowedOrigins":["https://www.example.com"]})");
    h_.set_submit_mode(wopbridge::testing::submit_mode::refuse, "subscription_not_active");
    auto reply = h_.send(urlencoded("a=1"));
    EXPECT_EQ(reply.status, 409);
    EXPECT_EQ(boost::json::parse(reply.body).at("error"), "subscription_not_active");
    h_.set_submit_mode(wopbridge::testing::submit_mode::refuse, "overloaded", 7);
    reply = h_.send(urlencoded("a=2"));
    EXPECT_EQ(reply.status, 503);
    EXPECT_EQ(reply.header("retry-after"), "7");
    expect_clean();
}

TEST_F(FormsConnectorTest, AnswersOnlyAfterTheCommit) {
    bring_up(R"({"allowedOrigins":["https://www.example.com"]})");
    h_.pause_submit_completion();
    auto pending = h_.send_async(urlencoded("a=1"));
    ASSERT_TRUE(h_.wait_for_submits(1));
    EXPECT_FALSE(pending.ready());
    h_.resume_submit_completion();
    auto reply = pending.wait();
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->status, 202);
    expect_clean();
}

TEST_F(FormsConnectorTest, SecretNeverLogged) {
    bring_up(std::string(R"({"allowedOrigins":["https://www.example.com"],"tokenSecret":")") +
             secret + R"("})");
    h_.send(urlencoded("a=1&_token=bad.ff.00"));
    for (const auto& line : h_.log_lines()) {
        EXPECT_EQ(line.find(secret), std::string::npos) << line;
    }
}

// examples/forms: the config's settings are accepted and the page's flow (token, multipart post
// from the page origin, browser redirect) works against them.
TEST_F(FormsConnectorTest, ExampleConfigAndPageFlow) {
    const std::string path = std::string(WOPBRIDGE_SOURCE_DIR) + "/examples/forms/wopbridge.yaml";
    const auto config = wopbridge::testing::settings_from_config(path, "forms");
    EXPECT_EQ(h_.validate(config).first, WB_OK);
    subscription_spec sub;
    sub.id = "contact";
    sub.source = "form";
    sub.settings_json = wopbridge::testing::settings_from_config(path, "contact", true);
    std::string err;
    ASSERT_EQ(h_.bring_up(config, sub, &err), WB_OK) << err;

    http_request_spec get;
    get.subscription_id = "contact";
    get.method = "GET";
    get.target = "/v1/ingest/contact/token";
    get.headers = {{"origin", "http://127.0.0.1:8000"}};
    auto token_reply = h_.send(get);
    ASSERT_EQ(token_reply.status, 200);
    EXPECT_EQ(token_reply.header("access-control-allow-origin"), "http://127.0.0.1:8000");
    auto token = std::string(boost::json::parse(token_reply.body).at("token").as_string());

    http_request_spec post;
    post.subscription_id = "contact";
    post.headers = {{"content-type", "multipart/form-data; boundary=pg"},
                    {"origin", "http://127.0.0.1:8000"},
                    {"accept", "text/html,application/xhtml+xml"}};
    auto field = [](const std::string& n, const std::string& v) {
        return "--pg\r\nContent-Disposition: form-data; name=\"" + n + "\"\r\n\r\n" + v + "\r\n";
    };
    post.body = field("_token", token) + field("submission_id", "6f1c") + field("name", "Ada") +
                field("website", "") + field("message", "hi") + "--pg--\r\n";
    auto reply = h_.send(post);
    EXPECT_EQ(reply.status, 303);
    EXPECT_EQ(reply.header("location"), "http://127.0.0.1:8000/thanks.html");
    auto submits = h_.submits();
    ASSERT_EQ(submits.size(), 1u);
    EXPECT_EQ(submits[0].provider_event_id, "submission:6f1c");
    auto fields = boost::json::parse(submits[0].content_json).at("form").at("fields").as_object();
    EXPECT_FALSE(fields.contains("_token"));
    EXPECT_FALSE(fields.contains("website"));
    EXPECT_EQ(fields.at("name"), "Ada");
}

} // namespace
} // namespace wopbridge::forms
