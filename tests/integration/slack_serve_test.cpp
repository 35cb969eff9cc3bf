// The slack connector through the real `wopbridge serve`: Slack requests signed by the test with the
// current time (valid, tampered, stale, future, retried), the url_verification handshake, an
// interactivity payload and a slash command. Every accepted request starts exactly one run whose
// causationId is its delivered attempt; every refused one starts none and leaves the subscription
// active.
#include "support/http_client.hpp"
#include "support/provider_signing.hpp"
#include "support/serve_probe.hpp"
#include "support/serve_process.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <ctime>
#include <fstream>
#include <string>

namespace wopbridge::testing::slack_serve_test {
namespace {

constexpr const char* signing_secret = "8f742231b10e8888abcd99yyyzzz85a5";
constexpr const char* sub = "support-inbox";

class SlackServeTest : public ::testing::Test {
protected:
    void SetUp() override {
        std::ofstream(dir_.file("wopbridge.yaml"))
            << probe_config_prelude(dir_.path().string(), "https://bridge.example.test")
            << "runs: {local: {workflows: [{id: support-triage}]}}\n"
               "connectors:\n"
               "  - {name: slack, module: slack, settings: {signingSecret: \""
            << signing_secret
            << "\", toleranceSeconds: 300}}\n"
               "subscriptions:\n"
               "  - {id: support-inbox, connector: slack, workflowId: support-triage}\n";
        ASSERT_TRUE(serve_.start(dir_.file("wopbridge.yaml"), dir_.file("serve.log")))
            << serve_.error;
        probe_ = std::make_unique<serve_probe>(serve_.url(), "hk_probe");
    }

    void TearDown() override {
        serve_.signal(SIGTERM);
        EXPECT_EQ(serve_.wait_exit(), 0) << read_text_file(dir_.file("serve.log"));
    }

    // POSTs `body` signed over `signed_body` at `timestamp` (they differ only when tampering).
    http_reply post(const std::string& body, const std::string& content_type,
                    std::int64_t timestamp, const std::string& signed_body,
                    const http_headers& extra = {}) {
        http_call c;
        c.method = "POST";
        c.url = serve_.url() + "/v1/ingest/" + sub;
        c.headers = {{"content-type", content_type},
                     {"x-slack-request-timestamp", std::to_string(timestamp)},
                     {"x-slack-signature", slack_signature(signing_secret, timestamp, signed_body)}};
        c.headers.insert(c.headers.end(), extra.begin(), extra.end());
        c.body = body;
        return perform(c);
    }
    http_reply post_signed(const std::string& body, const std::string& content_type,
                           const http_headers& extra = {}) {
        return post(body, content_type, std::time(nullptr), body, extra);
    }

    static std::string event_callback(const std::string& event_id, const std::string& text) {
        return R"({"token":"legacy-verification-token","team_id":"T0001","api_app_id":"A0001",)"
               R"("event":{"type":"app_mention","user":"U0001","text":")" +
               text +
               R"(","ts":"1700000000.000100","channel":"C0001","event_ts":"1700000000.000100"},)"
               R"("type":"event_callback","event_id":")" +
               event_id + R"(","event_time":1700000000})";
    }

    temp_dir dir_;
    serve_process serve_;
    std::unique_ptr<serve_probe> probe_;
};

TEST_F(SlackServeTest, SignedEventStartsExactlyOneRun) {
    auto r = post_signed(event_callback("Ev0001", "hello"), "application/json");
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_LT(r.seconds, 3.0); // Slack's acknowledgement budget
    EXPECT_TRUE(probe_->runs_started(sub, 1));
    EXPECT_EQ(probe_->ingest_count(sub, "accepted"), 1);
}

TEST_F(SlackServeTest, RetryWithTheSameEventIdIsADuplicateOfTheSameRun) {
    const std::string body = event_callback("Ev0002", "retried");
    ASSERT_EQ(post_signed(body, "application/json").status, 200);
    std::vector<std::string> runs;
    ASSERT_TRUE(probe_->runs_started(sub, 1, &runs));

    // Slack's retries carry the same event_id, a fresh timestamp and X-Slack-Retry-Num.
    for (const char* n : {"1", "2"}) {
        auto r = post_signed(body, "application/json",
                             {{"x-slack-retry-num", n}, {"x-slack-retry-reason", "http_timeout"}});
        EXPECT_EQ(r.status, 200) << r.body;
    }
    EXPECT_EQ(probe_->ingest_count(sub, "duplicate"), 2);
    std::vector<std::string> again;
    EXPECT_TRUE(probe_->runs_started(sub, 1, &again));
    EXPECT_EQ(again, runs);
}

TEST_F(SlackServeTest, TamperedBodyIsRefusedAndStartsNoRun) {
    const std::string body = event_callback("Ev0003", "original");
    auto r = post(event_callback("Ev0003", "tampered"), "application/json", std::time(nullptr), body);
    EXPECT_EQ(r.status, 401);
    EXPECT_NE(r.body.find("signature_invalid"), std::string::npos) << r.body;
    EXPECT_TRUE(probe_->nothing_started(sub, 0));
    EXPECT_EQ(probe_->ingest_count(sub, "accepted"), 0);
}

TEST_F(SlackServeTest, StaleAndFutureTimestampsAreRefusedAndStartNoRun) {
    const std::string body = event_callback("Ev0004", "replayed");
    const std::int64_t now = std::time(nullptr);
    for (std::int64_t t : {now - 301 - 60, now + 301 + 60}) {
        auto r = post(body, "application/json", t, body);
        EXPECT_EQ(r.status, 401) << "timestamp offset " << (t - now) << ": " << r.body;
        EXPECT_NE(r.body.find("signature_invalid"), std::string::npos) << r.body;
    }
    EXPECT_TRUE(probe_->nothing_started(sub, 0));
    // Inside the window the very same body is accepted: only the timestamp was refused.
    EXPECT_EQ(post(body, "application/json", now - 240, body).status, 200);
    EXPECT_TRUE(probe_->runs_started(sub, 1));
}

TEST_F(SlackServeTest, UrlVerificationEchoesTheChallengeWithoutADelivery) {
    auto r = post_signed(R"({"token":"legacy","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"})",
                         "application/json");
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.body, R"({"challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"})");
    EXPECT_EQ(r.header("content-type").value_or(""), "application/json");
    EXPECT_TRUE(probe_->nothing_started(sub, 0));
    // The handshake is signed like everything else: unsigned, it is refused.
    auto forged = post(R"({"challenge":"x","type":"url_verification"})", "application/json",
                       std::time(nullptr), "other");
    EXPECT_EQ(forged.status, 401);
}

TEST_F(SlackServeTest, InteractivityPayloadStartsOneRun) {
    const std::string payload =
        R"({"type":"block_actions","trigger_id":"13345224609.738474920.8088930838d88f008e0",)"
        R"("user":{"id":"U0001"},"channel":{"id":"C0001"},"response_url":"https://hooks.slack.com/actions/T0001/1/x",)"
        R"("actions":[{"action_id":"approve","type":"button","value":"yes"}],"token":"legacy"})";
    const std::string body = form_encode({{"payload", payload}});
    auto r = post_signed(body, "application/x-www-form-urlencoded");
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_TRUE(probe_->runs_started(sub, 1));
    // A second click is its own interaction (its own trigger_id): a second run.
    std::string second = payload;
    second.replace(second.find("13345224609"), 11, "13345224610");
    EXPECT_EQ(post_signed(form_encode({{"payload", second}}), "application/x-www-form-urlencoded")
                  .status,
              200);
    EXPECT_TRUE(probe_->runs_started(sub, 2));
}

TEST_F(SlackServeTest, SlashCommandStartsOneRun) {
    // Slack's documented slash command body, signed now.
    const std::string body =
        "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id="
        "G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-"
        "collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F3977008"
        "85554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121."
        "803a0bc887a14d10d2c447fce8b6703c";
    auto r = post_signed(body, "application/x-www-form-urlencoded");
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_TRUE(probe_->runs_started(sub, 1));
    EXPECT_EQ(probe_->ingest_count(sub, "accepted"), 1);
}

} // namespace
} // namespace wopbridge::testing::slack_serve_test
