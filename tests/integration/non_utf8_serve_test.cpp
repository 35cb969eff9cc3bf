// Content that is not UTF-8 through the real `wopbridge serve`, on every inbound path: a signed
// Standard Webhooks post with a binary body, a validly signed Slack slash command with `text=%FF`,
// a signed Twilio `Body=%FF`, a form post with `%FF` and a multipart part with a raw `\xff` in
// its value and filename, an SMTP message with raw 8-bit bytes. Each is acknowledged (2xx/250,
// never a retryable 503), starts exactly one run, and the run's TriggerEvent is valid against the
// schema and carries the bytes recoverably (the `{"$base64": ...}` marker, or for email's typed
// strings the original message as an attachment). And two posts that differ only in such a byte
// are two events, on every path whose dedup identity comes from content: each starts its own run.
#include "support/http_client.hpp"
#include "support/provider_signing.hpp"
#include "support/schema_check.hpp"
#include "support/serve_probe.hpp"
#include "support/serve_process.hpp"
#include "support/smtp_client.hpp"
#include "support/temp_dir.hpp"
#include "support/webhook_signer.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <csignal>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

namespace wopbridge::testing::non_utf8_serve_test {
namespace {

namespace json = boost::json;
using namespace std::string_literals;

constexpr const char* webhook_secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
constexpr const char* slack_secret = "8f742231b10e8888abcd99yyyzzz85a5";
constexpr const char* twilio_token = "non-utf8-twilio-token-0001";
constexpr const char* public_url = "https://bridge.example.test";
constexpr const char* origin = "https://shop.example.test";
constexpr const char* parse_key = "key-non-utf8-inbound-parse-0123456789";

json::value marker(const std::string& base64) {
    return json::object{{"$base64", base64}};
}

class NonUtf8ServeTest : public ::testing::Test {
protected:
    void SetUp() override {
        std::filesystem::create_directories(dir_.file("events"));
        std::ofstream(dir_.file("wopbridge.yaml"))
            << probe_config_prelude(dir_.path().string(), public_url)
            << "runs:\n"
               "  local:\n"
               "    workflows:\n"
            << capturing_workflow_yaml("capture", dir_.file("events"))
            << "connectors:\n"
               "  - {name: slack, module: slack, settings: {signingSecret: \""
            << slack_secret
            << "\"}}\n"
               "  - {name: sms, module: sms, settings: {authToken: \""
            << twilio_token
            << "\"}}\n"
               "  - {name: forms, module: forms}\n"
               "  - {name: email, module: email, settings: {listen: \"127.0.0.1:0\", "
               "hostname: mx.example.test, webhookSigningKey: \""
            << parse_key
            << "\"}}\n"
               "subscriptions:\n"
               "  - {id: hook, source: webhook, workflowId: capture, signingSecret: \""
            << webhook_secret
            << "\"}\n"
               "  - {id: slack-in, connector: slack, workflowId: capture}\n"
               "  - {id: sms-in, connector: sms, workflowId: capture}\n"
               "  - {id: form-in, source: form, connector: forms, workflowId: capture,\n"
               "     settings: {allowedOrigins: [\""
            << origin
            << "\"]}}\n"
               "  - {id: mail-in, source: email, connector: email, workflowId: capture,\n"
               "     settings: {addresses: [raw@example.test]}}\n";
        ASSERT_TRUE(serve_.start(dir_.file("wopbridge.yaml"), dir_.file("serve.log")))
            << serve_.error;
        probe_ = std::make_unique<serve_probe>(serve_.url(), "hk_probe");
    }

    void TearDown() override {
        if (probe_) {
            serve_.signal(SIGTERM);
            EXPECT_EQ(serve_.wait_exit(), 0) << read_text_file(dir_.file("serve.log"));
        }
    }

    http_reply post(const std::string& sub, const std::string& content_type,
                    const std::string& body, http_headers extra = {}) {
        http_call c;
        c.method = "POST";
        c.url = serve_.url() + "/v1/ingest/" + sub;
        c.headers = {{"content-type", content_type}};
        c.headers.insert(c.headers.end(), extra.begin(), extra.end());
        c.body = body;
        return perform(c);
    }

    // The one run of `sub` and the TriggerEvent it received, validated against the schema.
    json::object only_event(const std::string& sub) {
        std::vector<std::string> runs;
        if (!probe_->runs_started(sub, 1, &runs) || runs.size() != 1) {
            ADD_FAILURE() << "no single run for " << sub << "\n"
                          << read_text_file(dir_.file("serve.log"));
            return {};
        }
        EXPECT_TRUE(probe_->run_finished(runs[0]));
        const std::string text = read_text_file(dir_.file("events/" + runs[0] + ".json"));
        boost::system::error_code ec;
        auto v = json::parse(text, ec);
        if (ec || !v.is_object()) {
            ADD_FAILURE() << "run " << runs[0] << " received: " << text;
            return {};
        }
        EXPECT_TRUE(expect_valid(v, "v2/trigger-event.schema.json"));
        return v.as_object();
    }

    temp_dir dir_;
    serve_process serve_;
    std::unique_ptr<serve_probe> probe_;
};

TEST_F(NonUtf8ServeTest, WebhookBinaryBodyIsAcceptedAndCarriedAsBase64) {
    const std::string body = "\xff\xfe\x00raw"s;
    auto r = post("hook", "application/octet-stream", body,
                  standard_webhook_headers(webhook_secret, fresh_webhook_id(), std::time(nullptr),
                                           body));
    EXPECT_EQ(r.status, 202) << r.body;
    auto ev = only_event("hook");
    ASSERT_TRUE(ev.contains("webhook")) << json::serialize(ev);
    EXPECT_EQ(ev.at("webhook").at("body"), marker("//4AcmF3"));
}

TEST_F(NonUtf8ServeTest, WebhookJsonWithNumbersJsonCannotCarryIsKeptAsItsText) {
    // Valid JSON, correctly signed, with numbers past a double (or past 64-bit integers): kept,
    // as the raw text (a JSON string, lossless), not refused and not rounded to Infinity.
    const std::vector<std::string> bodies = {
        R"({"n":1e400})", R"({"n":)" + std::string(400, '7') + "}",
        R"({"id":123456789012345678901234567890,"ok":true})", R"([-1e-400, 2E+999])"};
    for (const auto& body : bodies) {
        auto r = post("hook", "application/json", body,
                      standard_webhook_headers(webhook_secret, fresh_webhook_id(),
                                               std::time(nullptr), body));
        EXPECT_EQ(r.status, 202) << body << ": " << r.body;
    }
    // Exact numbers are still parsed.
    const std::string exact = R"({"n":18446744073709551615,"m":-9223372036854775808,"x":1.5e300})";
    EXPECT_EQ(post("hook", "application/json", exact,
                   standard_webhook_headers(webhook_secret, fresh_webhook_id(),
                                            std::time(nullptr), exact))
                  .status,
              202);
    std::vector<std::string> runs;
    ASSERT_TRUE(probe_->runs_started("hook", bodies.size() + 1, &runs));
    std::set<std::string> kept_as_text;
    bool exact_parsed = false;
    for (const auto& run : runs) {
        ASSERT_TRUE(probe_->run_finished(run));
        auto ev = json::parse(read_text_file(dir_.file("events/" + run + ".json")));
        EXPECT_TRUE(expect_valid(ev, "v2/trigger-event.schema.json"));
        const auto& body = ev.at("webhook").at("body");
        if (body.is_string()) {
            kept_as_text.insert(std::string(body.get_string()));
        } else {
            exact_parsed = body.at("n").is_uint64() &&
                           body.at("n").get_uint64() == 18446744073709551615ull &&
                           body.at("m").is_int64();
        }
    }
    EXPECT_EQ(kept_as_text, std::set<std::string>(bodies.begin(), bodies.end()));
    EXPECT_TRUE(exact_parsed);
}

TEST_F(NonUtf8ServeTest, SlackEventsJsonWithInvalidUtf8IsAcceptedAndCarriedAsBase64) {
    const std::vector<std::string> sequences = {"\xff", "\x80", "\xc0\xaf", "\xed\xa0\x80",
                                                "\xf4\x90\x80\x80", "\xe2\x82", "\xfe\xfe"};
    int n = 0;
    for (const auto& bad : sequences) {
        const std::string body = R"({"type":"event_callback","team_id":"T1","event_id":"EvBad)" +
                                 std::to_string(n++) +
                                 R"(","event":{"type":"message","channel":"C1","text":"x)" + bad +
                                 R"("}})";
        const auto ts = std::time(nullptr);
        auto r = post("slack-in", "application/json", body,
                      {{"x-slack-request-timestamp", std::to_string(ts)},
                       {"x-slack-signature", slack_signature(slack_secret, ts, body)}});
        EXPECT_EQ(r.status, 200) << r.body;
    }
    std::vector<std::string> runs;
    ASSERT_TRUE(probe_->runs_started("slack-in", sequences.size(), &runs));
    std::set<std::string> texts;
    for (const auto& run : runs) {
        ASSERT_TRUE(probe_->run_finished(run));
        auto ev = json::parse(read_text_file(dir_.file("events/" + run + ".json")));
        EXPECT_TRUE(expect_valid(ev, "v2/trigger-event.schema.json"));
        texts.insert(json::serialize(ev.at("webhook").at("body").at("event").at("text")));
    }
    EXPECT_EQ(texts.size(), sequences.size());
    EXPECT_TRUE(texts.contains(json::serialize(marker("eP8=")))); // "x\xff"
}

TEST_F(NonUtf8ServeTest, SlackSlashCommandWithInvalidTextIsAcceptedAndCarriedAsBase64) {
    const std::string body = "team_id=T1&channel_id=C1&user_id=U1&command=%2Fhelp&text=%FF"
                             "&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c4";
    const auto ts = std::time(nullptr);
    auto r = post("slack-in", "application/x-www-form-urlencoded", body,
                  {{"x-slack-request-timestamp", std::to_string(ts)},
                   {"x-slack-signature", slack_signature(slack_secret, ts, body)}});
    EXPECT_EQ(r.status, 200) << r.body;
    auto ev = only_event("slack-in");
    ASSERT_TRUE(ev.contains("webhook")) << json::serialize(ev);
    EXPECT_EQ(ev.at("webhook").at("body").at("text"), marker("/w=="));
    EXPECT_EQ(ev.at("webhook").at("body").at("command"), "/help");
}

TEST_F(NonUtf8ServeTest, TwilioBodyWithInvalidBytesIsAcceptedAndCarriedAsBase64) {
    const std::multimap<std::string, std::string> fields{
        {"MessageSid", "SM00000000000000000000000000000ff1"},
        {"AccountSid", "AC0001"},
        {"From", "+14155550100"},
        {"To", "+14155550199"},
        {"Body", "caf\xe9 \xff"}};
    const std::string url = std::string(public_url) + "/v1/ingest/sms-in";
    auto r = post("sms-in", "application/x-www-form-urlencoded", form_encode(fields),
                  {{"x-twilio-signature", twilio_signature(twilio_token, url, fields)}});
    EXPECT_EQ(r.status, 200) << r.body;
    auto ev = only_event("sms-in");
    ASSERT_TRUE(ev.contains("webhook")) << json::serialize(ev);
    EXPECT_EQ(ev.at("webhook").at("body").at("Body"), marker("Y2Fm6SD/"));
    EXPECT_EQ(ev.at("webhook").at("body").at("From"), "+14155550100");
}

TEST_F(NonUtf8ServeTest, FormFieldWithPercentFFIsAcceptedAndCarriedAsBase64) {
    auto r = post("form-in", "application/x-www-form-urlencoded", "name=%FF&msg=ok&%FE=k",
                  {{"origin", origin}, {"accept", "application/json"}});
    EXPECT_EQ(r.status, 202) << r.body;
    auto ev = only_event("form-in");
    ASSERT_TRUE(ev.contains("form")) << json::serialize(ev);
    const auto& fields = ev.at("form").at("fields").as_object();
    EXPECT_EQ(fields.at("name"), marker("/w==")) << json::serialize(fields);
    EXPECT_EQ(fields.at("msg"), "ok");
    EXPECT_EQ(fields.at("$base64:/g=="), "k") << json::serialize(fields); // a name, not UTF-8
}

TEST_F(NonUtf8ServeTest, MultipartRawBytesInValueAndFilenameAreAccepted) {
    const std::string boundary = "b0undary";
    const std::string body = "--" + boundary +
                             "\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\n"
                             "a\xff"
                             "b\r\n--" +
                             boundary +
                             "\r\nContent-Disposition: form-data; name=\"up\"; filename=\"r\xff.txt\""
                             "\r\nContent-Type: text/plain\r\n\r\nfile bytes\r\n--" +
                             boundary + "--\r\n";
    auto r = post("form-in", "multipart/form-data; boundary=" + boundary, body,
                  {{"origin", origin}, {"accept", "application/json"}});
    EXPECT_EQ(r.status, 202) << r.body;
    auto ev = only_event("form-in");
    ASSERT_TRUE(ev.contains("form")) << json::serialize(ev);
    EXPECT_EQ(ev.at("form").at("fields").at("note"), marker("Yf9i"));
    const auto& files = ev.at("form").at("files").as_array();
    ASSERT_EQ(files.size(), 1u) << json::serialize(ev);
    // AttachmentRef.filename is a typed string: the name's bytes are carried in the marker's
    // string form ("r\xff.txt" is cv8udHh0 in base64); the file is intact.
    EXPECT_EQ(files[0].at("filename"), "$base64:cv8udHh0");
    const std::string ref(files[0].at("ref").as_string());
    EXPECT_EQ(read_text_file(dir_.file("attachments/" + ref.substr(4))), "file bytes");
}

TEST_F(NonUtf8ServeTest, SmtpMessageWithRaw8BitBytesIsTakenWithTheOriginalAttached) {
    const std::string log = read_text_file(dir_.file("serve.log"));
    auto at = log.find("smtp.listening");
    ASSERT_NE(at, std::string::npos) << log;
    at = log.find(':', log.find("port", at));
    const auto port = static_cast<std::uint16_t>(std::stoi(log.substr(at + 1)));

    auto sent = smtp_send(port, "ada@example.com", "raw@example.test", "raw-0001@example.com",
                          "caf\xe9 and \xff");
    EXPECT_EQ(sent.final_code, 250) << sent.last_reply;
    auto ev = only_event("mail-in");
    ASSERT_TRUE(ev.contains("email")) << json::serialize(ev);
    const auto& email = ev.at("email").as_object();
    EXPECT_NE(email.at("text").as_string().find("\xEF\xBF\xBD"), json::string::npos)
        << json::serialize(email);
    const json::object* original = nullptr;
    for (const auto& a : email.at("attachments").as_array()) {
        if (a.as_object().at("filename") == "original.eml") {
            original = &a.as_object();
        }
    }
    ASSERT_NE(original, nullptr) << json::serialize(email);
    EXPECT_EQ(original->at("mediaType"), "message/rfc822");
    const std::string ref(original->at("ref").as_string());
    const std::string kept = read_text_file(dir_.file("attachments/" + ref.substr(4)));
    EXPECT_NE(kept.find("caf\xe9 and \xff"), std::string::npos) << kept;
}

// The review's case: two signed inbound-parse posts without a Message-Id whose body-plain differs
// only in one byte that is not UTF-8. Both are new mails (the identity is the bytes received, not
// the sanitized text); a provider retry of the first (new token and signature, same parts) is
// still its duplicate.
TEST_F(NonUtf8ServeTest, TwoInboundMailsDifferingOnlyInAnInvalidByteStartTwoRuns) {
    auto post_mail = [&](const std::string& token, const std::string& text) {
        const std::string ts = std::to_string(std::time(nullptr));
        auto part = [](const std::string& name, const std::string& value) {
            return "--b0undary\r\nContent-Disposition: form-data; name=\"" + name +
                   "\"\r\n\r\n" + value + "\r\n";
        };
        return post("mail-in", "multipart/form-data; boundary=b0undary",
                    part("timestamp", ts) + part("token", token) +
                        part("signature", hmac_sha256_hex(parse_key, ts + token)) +
                        part("from", "billing@example.com") +
                        part("recipient", "raw@example.test") + part("subject", "Invoice") +
                        part("body-plain", text) + "--b0undary--\r\n");
    };
    auto first = post_mail("tok-first-0123456789abcdef0123456789abcdef", "amount due: \xff");
    ASSERT_EQ(first.status, 200) << first.body;
    EXPECT_NE(first.body.find("\"accepted\""), std::string::npos) << first.body;
    auto second = post_mail("tok-second-0123456789abcdef0123456789abcde", "amount due: \xfe");
    ASSERT_EQ(second.status, 200) << second.body;
    EXPECT_NE(second.body.find("\"accepted\""), std::string::npos) << second.body;
    std::vector<std::string> runs;
    ASSERT_TRUE(probe_->runs_started("mail-in", 2, &runs));
    EXPECT_NE(runs[0], runs[1]);

    auto retry = post_mail("tok-retry-0123456789abcdef0123456789abcdef", "amount due: \xff");
    ASSERT_EQ(retry.status, 200) << retry.body;
    EXPECT_NE(retry.body.find("\"duplicate\""), std::string::npos) << retry.body;
    EXPECT_TRUE(probe_->nothing_started("mail-in", 2));
}

// The siblings: a Slack slash command without a trigger_id, a Twilio post without a MessageSid and
// a form post, each twice with one byte changed, both bytes invalid UTF-8.
TEST_F(NonUtf8ServeTest, SlackSmsAndFormBodiesDifferingOnlyInAnInvalidByteStartTwoRunsEach) {
    for (const char* text : {"%FF", "%FE"}) {
        const std::string body =
            "team_id=T1&channel_id=C1&user_id=U1&command=%2Fpay&text=due+"s + text;
        const auto ts = std::time(nullptr);
        auto r = post("slack-in", "application/x-www-form-urlencoded", body,
                      {{"x-slack-request-timestamp", std::to_string(ts)},
                       {"x-slack-signature", slack_signature(slack_secret, ts, body)}});
        EXPECT_EQ(r.status, 200) << r.body;
    }
    EXPECT_TRUE(probe_->runs_started("slack-in", 2));

    const std::string url = std::string(public_url) + "/v1/ingest/sms-in";
    for (const char* text : {"due \xff", "due \xfe"}) {
        const std::multimap<std::string, std::string> fields{
            {"AccountSid", "AC0001"}, {"From", "+14155550100"}, {"Body", text}};
        auto r = post("sms-in", "application/x-www-form-urlencoded", form_encode(fields),
                      {{"x-twilio-signature", twilio_signature(twilio_token, url, fields)}});
        EXPECT_EQ(r.status, 200) << r.body;
    }
    EXPECT_TRUE(probe_->runs_started("sms-in", 2));

    for (const char* body : {"amount=%FF&note=due", "amount=%FE&note=due"}) {
        auto r = post("form-in", "application/x-www-form-urlencoded", body,
                      {{"origin", origin}, {"accept", "application/json"}});
        EXPECT_EQ(r.status, 202) << r.body;
    }
    EXPECT_TRUE(probe_->runs_started("form-in", 2));
}

} // namespace
} // namespace wopbridge::testing::non_utf8_serve_test
