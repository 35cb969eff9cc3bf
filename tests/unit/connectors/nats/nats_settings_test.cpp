// The nats connector's settings and event content, without a broker.
#include "nats/message_event.hpp"
#include "nats/nats_link.hpp"
#include "nats/settings.hpp"

#include "support/schema_check.hpp"

#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

// Named, so its using-directive stays in this file in a unity build.
namespace wopbridge::testing::nats_settings_test {
namespace {

using namespace wopbridge::nats;

TEST(NatsSettingsTest, ReadsEverySettingAndFillsDefaults) {
    std::string error;
    auto s = parse_connector_settings(
        R"({"url":"nats://a:4222, nats://b:4222","user":"bridge","password":"pw",)"
        R"("tlsCa":"/ca.pem","batchSize":8,"maxInFlight":32,"fetchWaitMs":200,"retryDelayMs":50})",
        error);
    ASSERT_TRUE(s) << error;
    EXPECT_EQ(s->user, "bridge");
    EXPECT_EQ(s->batch_size, 8u);
    EXPECT_EQ(s->max_in_flight, 32u);
    EXPECT_TRUE(s->wants_tls());
    EXPECT_EQ(s->name.rfind("wopbridge-", 0), 0u);

    auto sub = parse_subscription_settings(
        R"({"stream":"ORDERS","durable":"bridge","filterSubject":"orders.*.created",)"
        R"("startFrom":"beginning","ackWaitMs":5000,"maxDeliver":10,"keyHeader":"Customer"})",
        error);
    ASSERT_TRUE(sub) << error;
    EXPECT_TRUE(sub->from_beginning);
    EXPECT_EQ(sub->ack_wait_ms, 5000);
    EXPECT_EQ(sub->max_deliver, 10);
    auto plain = parse_subscription_settings(R"({"stream":"ORDERS"})", error);
    ASSERT_TRUE(plain);
    EXPECT_EQ(plain->durable, "wopbridge");
    EXPECT_EQ(plain->max_deliver, -1);
    EXPECT_TRUE(plain->create_consumer);
}

TEST(NatsSettingsTest, RefusesBadSettingsWithoutNamingSecrets) {
    std::string error;
    EXPECT_FALSE(parse_connector_settings("{}", error));
    EXPECT_NE(error.find("url"), std::string::npos);
    EXPECT_FALSE(parse_connector_settings(R"({"url":"redis://x:1"})", error));
    EXPECT_FALSE(parse_connector_settings(R"({"url":"nats://h:1","password":"hunter22"})", error));
    EXPECT_EQ(error.find("hunter22"), std::string::npos);
    EXPECT_FALSE(parse_connector_settings(
        R"({"url":"nats://h:1","user":"u","password":"p","token":"t0ken-Secret"})", error));
    EXPECT_EQ(error.find("t0ken-Secret"), std::string::npos);
    EXPECT_FALSE(parse_connector_settings(R"({"url":"nats://h:1","tlsCert":"/c.pem"})", error));
    EXPECT_FALSE(parse_connector_settings(R"({"url":"nats://h:1","maxDeliveries":3})", error));
    EXPECT_NE(error.find("maxDeliveries"), std::string::npos);

    EXPECT_FALSE(parse_subscription_settings("{}", error));
    EXPECT_FALSE(parse_subscription_settings(R"({"stream":"a.b"})", error));
    EXPECT_FALSE(parse_subscription_settings(R"({"stream":"S","durable":"x*"})", error));
    EXPECT_FALSE(parse_subscription_settings(R"({"stream":"S","maxDeliver":0})", error));
    EXPECT_FALSE(parse_subscription_settings(R"({"stream":"S","filterSubject":"a.>.b"})", error));
}

TEST(NatsSettingsTest, LogsNameServersWithoutTheirUserInfo) {
    EXPECT_EQ(redacted_url("nats://u:secret@127.0.0.1:4222"), "nats://127.0.0.1:4222");
    EXPECT_EQ(redacted_url("tls://tok@h:1"), "tls://h:1");
    EXPECT_EQ(redacted_url("nats://h:1"), "nats://h:1");
}

TEST(NatsMessageEventTest, ProviderIdIsTheStreamAndItsSequence) {
    EXPECT_EQ(provider_event_id("ORDERS", 42), "ORDERS:42");
}

TEST(NatsMessageEventTest, JsonTextAndBinaryPayloadsAreCarriedAsTheSchemaAllows) {
    message_view m;
    m.stream = "ORDERS";
    m.stream_sequence = 7;
    m.subject = "orders.created";
    m.key = "c-42";
    m.data = R"({"total":9.5})";
    auto doc = boost::json::parse(event_content(m, 1024, false));
    const auto& st = doc.at("stream").as_object();
    EXPECT_EQ(st.at("topic").as_string(), "orders.created");
    EXPECT_EQ(st.at("offset").as_string(), "7");
    EXPECT_EQ(st.at("key").as_string(), "c-42");
    EXPECT_EQ(st.at("message").at("total").as_double(), 9.5);
    EXPECT_TRUE(expect_valid(doc.at("stream"), "v2/trigger-event.schema.json#/$defs/StreamEvent"));

    m.key.reset();
    m.data = "plain text";
    doc = boost::json::parse(event_content(m, 1024, false));
    EXPECT_FALSE(doc.at("stream").as_object().contains("key"));
    EXPECT_EQ(doc.at("stream").at("message").as_string(), "plain text");

    m.data = std::string_view("\xff\x00\x01", 3);
    doc = boost::json::parse(event_content(m, 1024, false));
    EXPECT_EQ(doc.at("stream").at("message").at("$base64").as_string(), "/wAB");
    EXPECT_TRUE(expect_valid(doc.at("stream"), "v2/trigger-event.schema.json#/$defs/StreamEvent"));

    m.data = "";
    doc = boost::json::parse(event_content(m, 1024, false));
    EXPECT_EQ(doc.at("stream").at("message").as_string(), "");
}

TEST(NatsMessageEventTest, OversizeOrRefusedPayloadIsLeftOutButTheMessageIsNamed) {
    message_view m;
    m.stream = "ORDERS";
    m.stream_sequence = 9;
    m.subject = "orders.created";
    m.data = std::string(100, 'x');
    auto doc = boost::json::parse(event_content(m, 16, false));
    EXPECT_TRUE(doc.at("stream").at("message").is_null());
    EXPECT_EQ(doc.at("stream").at("offset").as_string(), "9");
    doc = boost::json::parse(event_content(m, 1024, true));
    EXPECT_TRUE(doc.at("stream").at("message").is_null());
}

} // namespace
} // namespace wopbridge::testing::nats_settings_test
