// Module-level tests: the built slack.so loaded through the connector harness.

#include "support/connector_harness.hpp"
#include "support/webhook_module_test.hpp"

#include <wopbridge/signatures.hpp>

#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace wopbridge::testing {
namespace {

// The slack-v0 vector from shared/vectors/signatures.json (confirmed by @slack/bolt).
constexpr std::string_view vector_secret = "8f742231b10e8888abcd99yyyzzz85a5";
constexpr std::string_view vector_timestamp = "1531420618";
constexpr std::int64_t vector_ts = 1531420618;
constexpr std::string_view vector_signature =
    "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503";
constexpr std::string_view vector_body =
    "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V"
    "&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text="
    "&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfm"
    "ibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";

constexpr std::string_view secret = "slack-test-secret-0001";
constexpr const char* json_type = "application/json";
constexpr const char* form_type = "application/x-www-form-urlencoded";

std::string event_body(std::string_view event_id, std::string_view type = "app_mention",
                       std::string_view channel = "C1") {
    return R"({"token":"legacy","team_id":"T1","type":"event_callback","event_id":")" +
           std::string(event_id) + R"(","event_time":1531420600,"event":{"type":")" +
           std::string(type) + R"(","channel":")" + std::string(channel) + R"(","text":"hello"}})";
}

class SlackModuleTest : public ::testing::Test {
  protected:
    void SetUp() override { harness_.set_now_ms(vector_ts * 1000 + 5000); }

    void bring_up(std::string config = R"({"signingSecret":"slack-test-secret-0001"})",
                  std::string sub_settings = "{}") {
        std::string error;
        subscription_spec sub;
        sub.settings_json = std::move(sub_settings);
        ASSERT_EQ(harness_.bring_up(config, sub, &error), WB_OK) << error;
    }

    // A request signed with `key` at the harness clock (offset by skew_s).
    http_request_spec signed_request(std::string body, const char* content_type = json_type,
                                     std::string_view key = secret, std::int64_t skew_s = 0) {
        const std::string ts = std::to_string(harness_.now_ms() / 1000 + skew_s);
        http_request_spec req;
        req.headers = {{"Content-Type", content_type},
                       {"X-Slack-Request-Timestamp", ts},
                       {"X-Slack-Signature", sig::sign_slack_v0(key, ts, body)}};
        req.body = std::move(body);
        return req;
    }

    static boost::json::value json(const std::string& text) { return boost::json::parse(text); }

    void expect_envelope(const module_reply& reply, int status, std::string_view code) {
        expect_error_envelope(reply, status, code);
        EXPECT_TRUE(json(reply.body).at("message").is_string());
    }

    void TearDown() override { EXPECT_TRUE(harness_.violations().empty()); }

    connector_harness harness_{"slack"};
};

TEST_F(SlackModuleTest, DescriptorIsWellFormed) {
    expect_webhook_ingest_descriptor(harness_, "slack", "signingSecrets", "channels");
}

TEST_F(SlackModuleTest, ValidateGivesOneLineReasons) {
    EXPECT_EQ(harness_.validate(R"({"signingSecret":"x"})").first, WB_OK);
    EXPECT_EQ(harness_.validate(R"({"signingSecrets":["x","y"]})").first, WB_OK);
    auto [status, reason] = harness_.validate("{}");
    EXPECT_EQ(status, WB_ERR_INVALID);
    EXPECT_EQ(reason, "signingSecret or signingSecrets is required");
    EXPECT_EQ(harness_.validate(R"({"signingSecret":"x","toleranceSeconds":-1})").first,
              WB_ERR_INVALID);
    EXPECT_EQ(harness_.validate("{").first, WB_ERR_INVALID);
    std::string error;
    EXPECT_EQ(harness_.create("{}", &error), WB_ERR_INVALID);
    EXPECT_FALSE(error.empty());
}

TEST_F(SlackModuleTest, SubscribeRejectsBadOverrides) {
    bring_up();
    std::string error;
    subscription_spec sub;
    sub.id = "sub-2";
    sub.settings_json = R"({"channels":"C1"})";
    EXPECT_EQ(harness_.subscribe(sub, &error), WB_ERR_INVALID);
    EXPECT_NE(error.find("channels"), std::string::npos);
}

TEST_F(SlackModuleTest, PublishedVectorSlashCommandIsSubmitted) {
    bring_up(R"({"signingSecret":"8f742231b10e8888abcd99yyyzzz85a5"})");
    http_request_spec req;
    req.headers = {{"Content-Type", form_type},
                   {"X-Slack-Request-Timestamp", std::string(vector_timestamp)},
                   {"X-Slack-Signature", std::string(vector_signature)}};
    req.body = std::string(vector_body);
    auto reply = harness_.send(req);
    EXPECT_EQ(reply.status, 200);
    EXPECT_EQ(reply.body, "");
    auto submits = harness_.submits();
    ASSERT_EQ(submits.size(), 1u);
    EXPECT_EQ(submits[0].provider_event_id,
              "command:398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c");
    EXPECT_TRUE(submits[0].verified);
    EXPECT_EQ(submits[0].subscription_id, "sub-1");
    EXPECT_EQ(submits[0].outcome, WB_SUBMIT_ACCEPTED);
    auto content = json(submits[0].content_json);
    const auto& webhook = content.at("webhook");
    EXPECT_EQ(webhook.at("method").as_string(), "POST");
    EXPECT_EQ(webhook.at("body").at("command").as_string(), "/webhook-collect");
    EXPECT_EQ(webhook.at("body").at("channel_id").as_string(), "G8PSS9T3V");
    EXPECT_FALSE(webhook.at("body").as_object().contains("token"));
    const auto& headers = webhook.at("headers").as_object();
    EXPECT_EQ(headers.at("content-type").as_string(), form_type);
    EXPECT_EQ(headers.at("x-slack-request-timestamp").as_string(), vector_timestamp);
    EXPECT_FALSE(headers.contains("x-slack-signature"));
    EXPECT_EQ(submits[0].content_json.find(vector_signature), std::string::npos);
}

TEST_F(SlackModuleTest, TamperedBodyIsRefusedWithoutSubmit) {
    bring_up(R"({"signingSecret":"8f742231b10e8888abcd99yyyzzz85a5"})");
    http_request_spec req;
    req.headers = {{"Content-Type", form_type},
                   {"X-Slack-Request-Timestamp", std::string(vector_timestamp)},
                   {"X-Slack-Signature", std::string(vector_signature)}};
    req.body = std::string(vector_body) + "&text=rm+-rf";
    expect_envelope(harness_.send(req), 401, "signature_invalid");
    EXPECT_TRUE(harness_.submits().empty());
}

TEST_F(SlackModuleTest, MissingSignatureIsRefused) {
    bring_up();
    auto req = signed_request(event_body("Ev1"));
    req.headers.pop_back();
    expect_envelope(harness_.send(req), 401, "signature_invalid");
    EXPECT_TRUE(harness_.submits().empty());
}

TEST_F(SlackModuleTest, StaleTimestampIsRefused) {
    bring_up();
    expect_envelope(harness_.send(signed_request(event_body("Ev1"), json_type, secret, -301)), 401,
                    "signature_invalid");
    EXPECT_TRUE(harness_.submits().empty());
}

TEST_F(SlackModuleTest, FutureTimestampIsRefused) {
    bring_up();
    expect_envelope(harness_.send(signed_request(event_body("Ev1"), json_type, secret, 301)), 401,
                    "signature_invalid");
    EXPECT_TRUE(harness_.submits().empty());
}

TEST_F(SlackModuleTest, TimestampsInsideTheWindowAreAccepted) {
    bring_up();
    EXPECT_EQ(harness_.send(signed_request(event_body("Ev1"), json_type, secret, -299)).status,
              200);
    EXPECT_EQ(harness_.send(signed_request(event_body("Ev2"), json_type, secret, 299)).status, 200);
    EXPECT_EQ(harness_.submits().size(), 2u);
}

TEST_F(SlackModuleTest, ToleranceIsConfigurable) {
    bring_up(R"({"signingSecret":"slack-test-secret-0001","toleranceSeconds":10})");
    EXPECT_EQ(harness_.send(signed_request(event_body("Ev1"), json_type, secret, -11)).status, 401);
    EXPECT_EQ(harness_.send(signed_request(event_body("Ev1"), json_type, secret, -9)).status, 200);
}

TEST_F(SlackModuleTest, RetriedEventIsADuplicateOfTheFirstRun) {
    bring_up();
    EXPECT_EQ(harness_.send(signed_request(event_body("Ev0ABC"))).status, 200);
    harness_.set_now_ms(harness_.now_ms() + 60000);
    auto retry = signed_request(event_body("Ev0ABC"));
    retry.headers.push_back({"X-Slack-Retry-Num", "1"});
    retry.headers.push_back({"X-Slack-Retry-Reason", "http_timeout"});
    auto reply = harness_.send(retry);
    EXPECT_EQ(reply.status, 200);
    EXPECT_EQ(reply.body, "");
    auto submits = harness_.submits();
    ASSERT_EQ(submits.size(), 2u);
    EXPECT_EQ(submits[0].provider_event_id, "event:Ev0ABC");
    EXPECT_EQ(submits[1].provider_event_id, "event:Ev0ABC");
    EXPECT_EQ(submits[0].outcome, WB_SUBMIT_ACCEPTED);
    EXPECT_EQ(submits[1].outcome, WB_SUBMIT_DUPLICATE);
    EXPECT_EQ(submits[1].run_id, submits[0].run_id);
    auto headers = json(submits[1].content_json).at("webhook").at("headers");
    EXPECT_EQ(headers.at("x-slack-retry-num").as_string(), "1");
    EXPECT_EQ(headers.at("x-slack-retry-reason").as_string(), "http_timeout");
}

TEST_F(SlackModuleTest, UrlVerificationAnswersTheChallenge) {
    bring_up();
    auto reply = harness_.send(signed_request(
        R"({"token":"legacy","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P",)"
        R"("type":"url_verification"})"));
    EXPECT_EQ(reply.status, 200);
    EXPECT_EQ(reply.header("content-type"), "application/json");
    EXPECT_EQ(json(reply.body).at("challenge").as_string(),
              "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P");
    EXPECT_TRUE(harness_.submits().empty());
}

TEST_F(SlackModuleTest, UnsignedUrlVerificationIsRefused) {
    bring_up();
    auto req = signed_request(R"({"challenge":"c","type":"url_verification"})", json_type,
                              "another-secret");
    expect_envelope(harness_.send(req), 401, "signature_invalid");
}

TEST_F(SlackModuleTest, InteractivityPayloadIsSubmitted) {
    bring_up();
    const std::string payload =
        R"({"type":"block_actions","token":"legacy","trigger_id":"1334.7384.808f",)"
        R"("channel":{"id":"C5"},"actions":[{"action_id":"approve","value":"42"}]})";
    std::string encoded;
    for (unsigned char c : payload) {
        char buf[4];
        std::snprintf(buf, sizeof buf, "%%%02X", c);
        encoded += buf;
    }
    auto reply = harness_.send(signed_request("payload=" + encoded, form_type));
    EXPECT_EQ(reply.status, 200);
    auto submits = harness_.submits();
    ASSERT_EQ(submits.size(), 1u);
    EXPECT_EQ(submits[0].provider_event_id, "interaction:1334.7384.808f");
    auto body = json(submits[0].content_json).at("webhook").at("body");
    EXPECT_EQ(body.at("actions").at(0).at("value").as_string(), "42");
    EXPECT_FALSE(body.as_object().contains("token"));
}

TEST_F(SlackModuleTest, SlashCommandIsKeyedOnTriggerId) {
    bring_up();
    auto reply = harness_.send(signed_request(
        "command=%2Fdeploy&text=prod&channel_id=C1&trigger_id=111.222.abc", form_type));
    EXPECT_EQ(reply.status, 200);
    auto submits = harness_.submits();
    ASSERT_EQ(submits.size(), 1u);
    EXPECT_EQ(submits[0].provider_event_id, "command:111.222.abc");
    EXPECT_EQ(json(submits[0].content_json).at("webhook").at("body").at("text").as_string(),
              "prod");
}

TEST_F(SlackModuleTest, EventTypeFilterAcknowledgesWithoutSubmit) {
    bring_up(R"({"signingSecret":"slack-test-secret-0001","eventTypes":["app_mention"]})");
    auto reply = harness_.send(signed_request(event_body("Ev1", "message")));
    EXPECT_EQ(reply.status, 200);
    EXPECT_TRUE(harness_.submits().empty());
    EXPECT_EQ(harness_.send(signed_request(event_body("Ev2", "app_mention"))).status, 200);
    EXPECT_EQ(harness_.submits().size(), 1u);
}

TEST_F(SlackModuleTest, ChannelFilterAcknowledgesWithoutSubmit) {
    bring_up(R"({"signingSecret":"slack-test-secret-0001","channels":["C1"]})");
    EXPECT_EQ(harness_.send(signed_request(event_body("Ev1", "message", "C2"))).status, 200);
    EXPECT_TRUE(harness_.submits().empty());
    EXPECT_EQ(harness_.send(signed_request(event_body("Ev2", "message", "C1"))).status, 200);
    EXPECT_EQ(harness_.submits().size(), 1u);
}

TEST_F(SlackModuleTest, SubscriptionOverridesFiltersAndSecret) {
    bring_up(R"({"signingSecret":"slack-test-secret-0001"})",
             R"({"signingSecret":"per-sub-secret","channels":["C9"]})");
    // The connector-level secret no longer verifies this subscription.
    EXPECT_EQ(harness_.send(signed_request(event_body("Ev1", "message", "C9"))).status, 401);
    EXPECT_EQ(
        harness_
            .send(signed_request(event_body("Ev2", "message", "C1"), json_type, "per-sub-secret"))
            .status,
        200);
    EXPECT_TRUE(harness_.submits().empty());
    EXPECT_EQ(
        harness_
            .send(signed_request(event_body("Ev3", "message", "C9"), json_type, "per-sub-secret"))
            .status,
        200);
    EXPECT_EQ(harness_.submits().size(), 1u);
}

TEST_F(SlackModuleTest, RotationAcceptsTheSecondSecret) {
    bring_up(R"({"signingSecrets":["old-secret","new-secret"]})");
    EXPECT_EQ(harness_.send(signed_request(event_body("Ev1"), json_type, "new-secret")).status,
              200);
    EXPECT_EQ(harness_.send(signed_request(event_body("Ev2"), json_type, "old-secret")).status,
              200);
    EXPECT_EQ(harness_.send(signed_request(event_body("Ev3"), json_type, "retired")).status, 401);
    EXPECT_EQ(harness_.submits().size(), 2u);
}

TEST_F(SlackModuleTest, MalformedBodiesAre400WithoutSubmit) {
    bring_up();
    expect_envelope(harness_.send(signed_request("{not json")), 400, "malformed_request");
    expect_envelope(harness_.send(signed_request(R"({"type":"event_callback"})")), 400,
                    "malformed_request");
    expect_envelope(harness_.send(signed_request("text=hi", form_type)), 400, "malformed_request");
    expect_envelope(harness_.send(signed_request("payload=%7B", form_type)), 400,
                    "malformed_request");
    expect_envelope(harness_.send(signed_request(std::string("\0\xff\xfe", 3))), 400,
                    "malformed_request");
    EXPECT_TRUE(harness_.submits().empty());
}

TEST_F(SlackModuleTest, UnknownSubscriptionIs404) {
    bring_up();
    auto req = signed_request(event_body("Ev1"));
    req.subscription_id = "nope";
    expect_envelope(harness_.send(req), 404, "not_found");
    EXPECT_TRUE(harness_.submits().empty());
}

TEST_F(SlackModuleTest, UnsubscribedIs404) {
    bring_up();
    EXPECT_EQ(harness_.send(signed_request(event_body("Ev1"))).status, 200);
    EXPECT_EQ(harness_.unsubscribe("sub-1"), WB_OK);
    EXPECT_EQ(harness_.unsubscribe("never-there"), WB_OK);
    expect_envelope(harness_.send(signed_request(event_body("Ev2"))), 404, "not_found");
    EXPECT_EQ(harness_.submits().size(), 1u);
}

TEST_F(SlackModuleTest, NotActiveIs409) {
    bring_up();
    harness_.set_submit_mode(submit_mode::refuse, "subscription_not_active");
    expect_envelope(harness_.send(signed_request(event_body("Ev1"))), 409,
                    "subscription_not_active");
    ASSERT_EQ(harness_.submits().size(), 1u);
    EXPECT_EQ(harness_.submits()[0].outcome, WB_SUBMIT_REFUSED);
}

TEST_F(SlackModuleTest, OverloadIs503WithRetryAfter) {
    bring_up();
    harness_.set_submit_mode(submit_mode::refuse, "overloaded", 7);
    auto reply = harness_.send(signed_request(event_body("Ev1")));
    expect_envelope(reply, 503, "overloaded");
    EXPECT_EQ(reply.header("retry-after"), "7");
    harness_.set_submit_mode(submit_mode::refuse, "store_unavailable", 0);
    reply = harness_.send(signed_request(event_body("Ev1")));
    expect_envelope(reply, 503, "store_unavailable");
    EXPECT_EQ(reply.header("retry-after"), "1");
}

TEST_F(SlackModuleTest, HeldIsAcknowledged) {
    bring_up();
    harness_.set_submit_mode(submit_mode::hold);
    EXPECT_EQ(harness_.send(signed_request(event_body("Ev1"))).status, 200);
    ASSERT_EQ(harness_.submits().size(), 1u);
    EXPECT_EQ(harness_.submits()[0].outcome, WB_SUBMIT_HELD);
}

TEST_F(SlackModuleTest, AnswersOnlyAfterTheCommit) {
    bring_up();
    harness_.pause_submit_completion();
    auto pending = harness_.send_async(signed_request(event_body("Ev1")));
    ASSERT_TRUE(harness_.wait_for_submits(1));
    EXPECT_FALSE(pending.ready());
    harness_.resume_submit_completion();
    auto reply = pending.wait();
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->status, 200);
}

TEST_F(SlackModuleTest, SecretsNeverReachTheLog) {
    bring_up();
    harness_.send(signed_request(event_body("Ev1"), json_type, "wrong-secret"));
    harness_.send(signed_request("{bad"));
    harness_.send(signed_request(event_body("Ev2")));
    ASSERT_FALSE(harness_.log_lines().empty());
    for (const auto& line : harness_.log_lines()) {
        EXPECT_EQ(line.find(secret), std::string::npos) << line;
        EXPECT_EQ(line.find("hello"), std::string::npos) << line; // no inbound content either
    }
}

TEST_F(SlackModuleTest, StopDrainsAndRefusesNewRequests) {
    bring_up();
    harness_.pause_submit_completion();
    auto pending = harness_.send_async(signed_request(event_body("Ev1")));
    ASSERT_TRUE(harness_.wait_for_submits(1));
    EXPECT_EQ(harness_.stop(), WB_OK); // resumes completions, waits for the in-flight answer
    auto reply = pending.wait();
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->status, 200);
}

TEST_F(SlackModuleTest, ConcurrentRequestsAreEachAnsweredOnce) {
    bring_up();
    constexpr int threads = 8;
    constexpr int per_thread = 25;
    std::vector<std::thread> senders;
    std::atomic<int> ok{0};
    for (int t = 0; t < threads; ++t) {
        senders.emplace_back([&, t] {
            for (int i = 0; i < per_thread; ++i) {
                // Half the requests repeat one event id across all threads (a retry storm).
                const std::string id = i % 2 == 0
                                           ? "EvSHARED" + std::to_string(i)
                                           : "Ev" + std::to_string(t) + "-" + std::to_string(i);
                if (harness_.send(signed_request(event_body(id))).status == 200) {
                    ++ok;
                }
            }
        });
    }
    for (auto& s : senders) {
        s.join();
    }
    EXPECT_EQ(ok.load(), threads * per_thread);
    auto submits = harness_.submits();
    ASSERT_EQ(submits.size(), static_cast<std::size_t>(threads * per_thread));
    std::size_t accepted = 0;
    for (const auto& s : submits) {
        accepted += s.outcome == WB_SUBMIT_ACCEPTED ? 1 : 0;
    }
    // 13 shared ids (i = 0, 2, ..., 24) once each, plus every thread's own odd-numbered ids.
    EXPECT_EQ(accepted, 13u + threads * 12u);
}

TEST_F(SlackModuleTest, ExampleConfigSettingsAreAccepted) {
    const std::string path = std::string(WOPBRIDGE_SOURCE_DIR) + "/examples/slack/wopbridge.yaml";
    const std::string settings = settings_from_config(path, "slack");
    auto [status, reason] = harness_.validate(settings);
    EXPECT_EQ(status, WB_OK) << reason << " in " << settings;
    EXPECT_NE(settings.find("test-SLACK_SIGNING_SECRET"), std::string::npos);
    std::string error;
    subscription_spec sub;
    sub.id = "support-inbox";
    sub.settings_json = settings_from_config(path, "support-inbox", true);
    EXPECT_EQ(harness_.bring_up(settings, sub, &error), WB_OK) << error;
}

} // namespace
} // namespace wopbridge::testing
