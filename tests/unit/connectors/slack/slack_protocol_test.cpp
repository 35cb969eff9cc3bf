// Pure protocol tests for the Slack connector (no module loading): settings, classification,
// filters and the submitted content.

#include "slack/protocol.hpp"
#include "slack/settings.hpp"

#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

namespace wopbridge::slack {
namespace {

class SlackProtocolTest : public ::testing::Test {
protected:
    static settings base() {
        std::string error;
        auto s = parse_connector_settings(R"({"signingSecret":"s3cr3t"})", error);
        EXPECT_TRUE(s) << error;
        return *s;
    }

    static slack_request parse_ok(std::string_view content_type, std::string_view body) {
        std::string error;
        auto r = parse_request(content_type, body, error);
        EXPECT_TRUE(r) << error;
        return r ? *r : slack_request{};
    }
};

TEST_F(SlackProtocolTest, SettingsRequireASecret) {
    std::string error;
    EXPECT_FALSE(parse_connector_settings("{}", error));
    EXPECT_EQ(error, "signingSecret or signingSecrets is required");
    EXPECT_FALSE(parse_connector_settings(R"({"signingSecret":""})", error));
    EXPECT_FALSE(parse_connector_settings(R"({"signingSecrets":[]})", error));
    EXPECT_FALSE(parse_connector_settings("[1]", error));
    EXPECT_FALSE(parse_connector_settings("not json", error));
}

TEST_F(SlackProtocolTest, SettingsRejectUnknownKeysAndBadValues) {
    std::string error;
    EXPECT_FALSE(parse_connector_settings(R"({"signingSecret":"a","eventType":["x"]})", error));
    EXPECT_NE(error.find("eventType"), std::string::npos);
    EXPECT_FALSE(parse_connector_settings(R"({"signingSecret":"a","toleranceSeconds":0})", error));
    EXPECT_FALSE(parse_connector_settings(R"({"signingSecret":"a","toleranceSeconds":"5"})", error));
    EXPECT_FALSE(parse_connector_settings(R"({"signingSecret":"a","channels":[""]})", error));
    EXPECT_FALSE(parse_connector_settings(R"({"signingSecret":"a","eventTypes":[]})", error));
}

TEST_F(SlackProtocolTest, SettingsErrorsNeverEchoTheSecret) {
    std::string error;
    EXPECT_FALSE(parse_connector_settings(R"({"signingSecret":"hunter2","bogus":1})", error));
    EXPECT_EQ(error.find("hunter2"), std::string::npos);
}

TEST_F(SlackProtocolTest, SettingsParseEveryKey) {
    std::string error;
    auto s = parse_connector_settings(
        R"({"signingSecret":"a","signingSecrets":["b","c"],"toleranceSeconds":60,)"
        R"("eventTypes":["app_mention"],"channels":["C1"]})",
        error);
    ASSERT_TRUE(s) << error;
    EXPECT_EQ(s->signing_secrets, (std::vector<std::string>{"a", "b", "c"}));
    EXPECT_EQ(s->tolerance_seconds, 60);
    EXPECT_EQ(s->event_types, (std::vector<std::string>{"app_mention"}));
    EXPECT_EQ(s->channels, (std::vector<std::string>{"C1"}));
}

TEST_F(SlackProtocolTest, SubscriptionSettingsOverrideSecretsAndFilters) {
    std::string error;
    auto s = apply_subscription_settings(base(), R"({"signingSecrets":["x"],"channels":["C9"]})",
                                         error);
    ASSERT_TRUE(s) << error;
    EXPECT_EQ(s->signing_secrets, (std::vector<std::string>{"x"}));
    EXPECT_EQ(s->channels, (std::vector<std::string>{"C9"}));
    EXPECT_FALSE(s->event_types);
    auto same = apply_subscription_settings(base(), "", error);
    ASSERT_TRUE(same);
    EXPECT_EQ(same->signing_secrets, (std::vector<std::string>{"s3cr3t"}));
    EXPECT_FALSE(apply_subscription_settings(base(), R"({"toleranceSeconds":5})", error));
}

TEST_F(SlackProtocolTest, UrlVerificationCarriesTheChallenge) {
    auto r = parse_ok("application/json",
                      R"({"token":"t","challenge":"3eZbrw1aB","type":"url_verification"})");
    EXPECT_EQ(r.kind, request_kind::url_verification);
    EXPECT_EQ(r.challenge, "3eZbrw1aB");
}

TEST_F(SlackProtocolTest, EventCallbackIsKeyedOnEventId) {
    auto r = parse_ok("application/json; charset=utf-8",
                      R"({"token":"t","type":"event_callback","event_id":"Ev123",)"
                      R"("event":{"type":"app_mention","channel":"C1","text":"hi"}})");
    EXPECT_EQ(r.kind, request_kind::event);
    EXPECT_EQ(r.provider_event_id, "event:Ev123");
    EXPECT_EQ(r.type, "app_mention");
    EXPECT_EQ(r.channel, "C1");
    EXPECT_FALSE(r.body.as_object().contains("token"));
}

TEST_F(SlackProtocolTest, ReactionEventsTakeTheItemChannel) {
    auto r = parse_ok("application/json",
                      R"({"type":"event_callback","event_id":"Ev1",)"
                      R"("event":{"type":"reaction_added","item":{"channel":"C7"}}})");
    EXPECT_EQ(r.channel, "C7");
}

TEST_F(SlackProtocolTest, InteractivityUsesTheTriggerId) {
    auto r = parse_ok("application/x-www-form-urlencoded",
                      "payload=%7B%22type%22%3A%22block_actions%22%2C%22trigger_id%22%3A%22"
                      "13345224609.738474920.8088930838d88f008e0%22%2C%22channel%22%3A%7B%22id"
                      "%22%3A%22C2%22%7D%2C%22token%22%3A%22t%22%7D");
    EXPECT_EQ(r.kind, request_kind::interaction);
    EXPECT_EQ(r.provider_event_id, "interaction:13345224609.738474920.8088930838d88f008e0");
    EXPECT_EQ(r.type, "block_actions");
    EXPECT_EQ(r.channel, "C2");
    EXPECT_FALSE(r.body.as_object().contains("token"));
}

TEST_F(SlackProtocolTest, InteractivityWithoutTriggerIdFallsBackToAContentHash) {
    const std::string body = "payload=%7B%22type%22%3A%22block_suggestion%22%7D";
    auto a = parse_ok("application/x-www-form-urlencoded", body);
    auto b = parse_ok("application/x-www-form-urlencoded", body);
    EXPECT_EQ(a.provider_event_id.rfind("interaction:sha256:", 0), 0u);
    EXPECT_EQ(a.provider_event_id, b.provider_event_id);
}

TEST_F(SlackProtocolTest, SlashCommandFieldsBecomeAnObject) {
    auto r = parse_ok("application/x-www-form-urlencoded",
                      "token=t&command=%2Fdeploy&text=prod+now&channel_id=C3&trigger_id=T.1");
    EXPECT_EQ(r.kind, request_kind::slash_command);
    EXPECT_EQ(r.provider_event_id, "command:T.1");
    EXPECT_EQ(r.command, "/deploy");
    EXPECT_EQ(r.channel, "C3");
    EXPECT_EQ(r.body.at("text").as_string(), "prod now");
    EXPECT_FALSE(r.body.as_object().contains("token"));
}

TEST_F(SlackProtocolTest, NonDeliveriesAreIgnored) {
    EXPECT_EQ(parse_ok("application/json", R"({"type":"app_rate_limited","minute_rate_limited":1})")
                  .kind,
              request_kind::ignored);
    EXPECT_EQ(parse_ok("application/x-www-form-urlencoded", "ssl_check=1&token=t").kind,
              request_kind::ignored);
}

TEST_F(SlackProtocolTest, MalformedBodiesAreErrors) {
    std::string error;
    EXPECT_FALSE(parse_request("application/json", "{not json", error));
    EXPECT_FALSE(parse_request("application/json", "[]", error));
    EXPECT_FALSE(parse_request("application/json", R"({"type":"event_callback","event":{}})", error));
    EXPECT_FALSE(parse_request("application/json", R"({"type":"url_verification"})", error));
    EXPECT_FALSE(parse_request("application/x-www-form-urlencoded", "text=hi", error));
    EXPECT_FALSE(parse_request("application/x-www-form-urlencoded", "payload=%7Bbad", error));
    EXPECT_FALSE(parse_request("application/x-www-form-urlencoded", "command=%zz", error));
    EXPECT_FALSE(parse_request("text/plain", "hello", error));
}

TEST_F(SlackProtocolTest, FiltersMatchTypeCommandAndChannel) {
    settings s = base();
    slack_request r;
    r.type = "app_mention";
    r.channel = "C1";
    EXPECT_TRUE(passes_filters(s, r));
    s.event_types = std::vector<std::string>{"message"};
    EXPECT_FALSE(passes_filters(s, r));
    s.event_types = std::vector<std::string>{"app_mention"};
    EXPECT_TRUE(passes_filters(s, r));
    s.channels = std::vector<std::string>{"C2"};
    EXPECT_FALSE(passes_filters(s, r));
    r.channel.clear();
    EXPECT_FALSE(passes_filters(s, r));

    settings c = base();
    slack_request cmd;
    cmd.type = "slash_command";
    cmd.command = "/deploy";
    c.event_types = std::vector<std::string>{"/deploy"};
    EXPECT_TRUE(passes_filters(c, cmd));
    c.event_types = std::vector<std::string>{"slash_command"};
    EXPECT_TRUE(passes_filters(c, cmd));
    c.event_types = std::vector<std::string>{"/other"};
    EXPECT_FALSE(passes_filters(c, cmd));
}

TEST_F(SlackProtocolTest, ContentCarriesOnlyAllowListedHeaders) {
    auto r = parse_ok("application/json",
                      R"({"type":"event_callback","event_id":"Ev1","event":{"type":"message"}})");
    const std::string content = content_json(
        r, {{"content-type", "application/json"},
            {"x-slack-signature", "v0=abc"},
            {"x-slack-request-timestamp", "1"},
            {"x-slack-retry-num", "2"},
            {"x-slack-retry-reason", "http_timeout"},
            {"authorization", "Bearer x"},
            {"cookie", "c=1"}});
    auto doc = boost::json::parse(content);
    const auto& webhook = doc.at("webhook").as_object();
    EXPECT_EQ(doc.as_object().size(), 1u);
    EXPECT_EQ(webhook.at("method").as_string(), "POST");
    const auto& headers = webhook.at("headers").as_object();
    EXPECT_EQ(headers.size(), 4u);
    EXPECT_FALSE(headers.contains("x-slack-signature"));
    EXPECT_FALSE(headers.contains("authorization"));
    EXPECT_EQ(headers.at("x-slack-retry-num").as_string(), "2");
    EXPECT_EQ(webhook.at("body").at("event_id").as_string(), "Ev1");
}

TEST_F(SlackProtocolTest, VerificationUsesEverySecret) {
    settings s = base();
    s.signing_secrets = {"old", "new"};
    const std::string body = "{}";
    const std::string sig = sig::sign_slack_v0("new", "1000", body);
    EXPECT_EQ(verify_request(s, "1000", sig, body, 1000), sig::verdict::valid);
    s.signing_secrets = {"old"};
    EXPECT_EQ(verify_request(s, "1000", sig, body, 1000), sig::verdict::mismatch);
}

} // namespace
} // namespace wopbridge::slack
