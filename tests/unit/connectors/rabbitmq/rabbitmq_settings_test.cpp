// The rabbitmq connector's settings, dedup identity and event content, without a broker.
#include "rabbitmq/amqp_link.hpp"
#include "rabbitmq/message_event.hpp"
#include "rabbitmq/settings.hpp"

#include "support/schema_check.hpp"

#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

// Named, so its using-directive stays in this file in a unity build.
namespace wopbridge::testing::rabbitmq_settings_test {
namespace {

using namespace wopbridge::rabbitmq;

TEST(RabbitmqSettingsTest, ReadsTheUrlEverySettingAndFillsDefaults) {
    std::string error;
    auto s = parse_connector_settings(
        R"({"url":"amqp://bridge:s%40cret@mq.example:5673/orders%2Fprod","prefetch":8,)"
        R"("heartbeatSeconds":0,"retryDelayMs":50,"reconnectWaitMs":500,"connectTimeoutMs":300,)"
        R"("maxMessageBytes":1000,"name":"node-1"})",
        error);
    ASSERT_TRUE(s) << error;
    EXPECT_EQ(s->host, "mq.example");
    EXPECT_EQ(s->port, 5673);
    EXPECT_EQ(s->vhost, "orders/prod");
    EXPECT_EQ(s->user, "bridge");
    EXPECT_EQ(s->password, "s@cret");
    EXPECT_FALSE(s->tls);
    EXPECT_EQ(s->prefetch, 8u);
    EXPECT_EQ(s->heartbeat_seconds, 0);
    EXPECT_EQ(s->retry_delay_ms, 50);
    EXPECT_EQ(s->reconnect_wait_ms, 500);
    EXPECT_EQ(s->connect_timeout_ms, 300);
    EXPECT_EQ(s->max_message_bytes, 1000u);
    EXPECT_EQ(s->name, "node-1");
    EXPECT_EQ(redacted_url(*s), "amqp://mq.example:5673/orders/prod");

    auto d = parse_connector_settings(R"({"url":"amqp://localhost"})", error);
    ASSERT_TRUE(d) << error;
    EXPECT_EQ(d->port, 5672);
    EXPECT_EQ(d->vhost, "/");
    EXPECT_EQ(d->user, "guest");
    EXPECT_EQ(d->prefetch, 32u);
    EXPECT_EQ(d->heartbeat_seconds, 30);
    EXPECT_EQ(d->name.rfind("wopbridge-", 0), 0u);
    EXPECT_EQ(redacted_url(*d), "amqp://localhost:5672/");
    auto slash = parse_connector_settings(R"({"url":"amqp://localhost/"})", error);
    ASSERT_TRUE(slash) << error;
    EXPECT_EQ(slash->vhost, "/");
}

TEST(RabbitmqSettingsTest, UserAndPasswordSettingsOverrideTheUrls) {
    std::string error;
    auto s = parse_connector_settings(
        R"({"url":"amqp://guest:guest@h:1/","user":"bridge","password":"pw"})", error);
    ASSERT_TRUE(s) << error;
    EXPECT_EQ(s->user, "bridge");
    EXPECT_EQ(s->password, "pw");
}

TEST(RabbitmqSettingsTest, TlsFromAmqpsOrTheFlagWithItsFiles) {
    std::string error;
    auto s = parse_connector_settings(
        R"({"url":"amqps://h","tlsCa":"/ca.pem","tlsCert":"/c.pem","tlsKey":"/k.pem",)"
        R"("tlsVerifyPeer":false,"tlsVerifyHostname":false})",
        error);
    ASSERT_TRUE(s) << error;
    EXPECT_TRUE(s->tls);
    EXPECT_EQ(s->port, 5671);
    EXPECT_FALSE(s->tls_verify_peer);
    EXPECT_FALSE(s->tls_verify_hostname);
    EXPECT_EQ(redacted_url(*s), "amqps://h:5671/");
    auto flag = parse_connector_settings(R"({"url":"amqp://h:5671","tls":true})", error);
    ASSERT_TRUE(flag) << error;
    EXPECT_TRUE(flag->tls);
    // A CA file with a plain URL and no tls flag is a mistake, not a silent plaintext link.
    EXPECT_FALSE(parse_connector_settings(R"({"url":"amqp://h","tlsCa":"/ca.pem"})", error));
    EXPECT_FALSE(parse_connector_settings(R"({"url":"amqps://h","tlsCert":"/c.pem"})", error));
    EXPECT_NE(error.find("tlsKey"), std::string::npos);
}

TEST(RabbitmqSettingsTest, MissingTlsFileIsRefusedNamingTheSettingNotThePath) {
    std::string error;
    auto s =
        parse_connector_settings(R"({"url":"amqps://h","tlsCa":"/no/such/ca-file.pem"})", error);
    ASSERT_TRUE(s) << error;
    EXPECT_FALSE(check_tls_files(*s, error));
    EXPECT_NE(error.find("tlsCa"), std::string::npos) << error;
    EXPECT_EQ(error.find("ca-file"), std::string::npos) << error;
    auto plain = parse_connector_settings(R"({"url":"amqp://h"})", error);
    ASSERT_TRUE(plain);
    EXPECT_TRUE(check_tls_files(*plain, error));
}

TEST(RabbitmqSettingsTest, RefusesBadSettingsWithoutNamingSecrets) {
    std::string error;
    EXPECT_FALSE(parse_connector_settings("{}", error));
    EXPECT_NE(error.find("url"), std::string::npos);
    EXPECT_FALSE(parse_connector_settings(R"({"url":"nats://x:1"})", error));
    EXPECT_FALSE(parse_connector_settings(R"({"url":"amqp://u:hunter22@h:99999"})", error));
    EXPECT_EQ(error.find("hunter22"), std::string::npos);
    EXPECT_FALSE(parse_connector_settings(R"({"url":"amqp://h","password":"hunter22"})", error));
    EXPECT_EQ(error.find("hunter22"), std::string::npos);
    EXPECT_FALSE(parse_connector_settings(R"({"url":"amqp://h","prefetch":0})", error));
    EXPECT_NE(error.find("prefetch"), std::string::npos);
    EXPECT_FALSE(parse_connector_settings(R"({"url":"amqp://h","prefetch":"8"})", error));
    EXPECT_FALSE(parse_connector_settings(R"({"url":"amqp://h","maxAttempts":3})", error));
    EXPECT_NE(error.find("maxAttempts"), std::string::npos);

    EXPECT_FALSE(parse_subscription_settings("{}", error));
    EXPECT_NE(error.find("queue"), std::string::npos);
    EXPECT_FALSE(parse_subscription_settings(R"({"queue":"has space"})", error));
    EXPECT_FALSE(parse_subscription_settings(R"({"queue":"q","withoutMessageId":"tag"})", error));
    EXPECT_FALSE(parse_subscription_settings(R"({"queue":"q","durable":"x"})", error));
    auto sub = parse_subscription_settings(
        R"({"queue":"orders","consumerTag":"node-1","withoutMessageId":"contentHash"})", error);
    ASSERT_TRUE(sub) << error;
    EXPECT_EQ(sub->queue, "orders");
    EXPECT_EQ(sub->consumer_tag, "node-1");
    EXPECT_EQ(sub->without_message_id, missing_id_policy::content_hash);
    auto plain = parse_subscription_settings(R"({"queue":"orders"})", error);
    ASSERT_TRUE(plain);
    EXPECT_EQ(plain->without_message_id, missing_id_policy::reject);
}

TEST(RabbitmqSettingsTest, SchemasMarkTheSecretsAndParse) {
    auto schema = boost::json::parse(connector_schema_json);
    const auto& props = schema.at("properties").as_object();
    EXPECT_TRUE(props.at("url").at("writeOnly").as_bool());
    EXPECT_TRUE(props.at("password").at("writeOnly").as_bool());
    EXPECT_EQ(props.at("prefetch").at("default").as_int64(), 32);
    auto sub = boost::json::parse(subscription_schema_json);
    EXPECT_EQ(sub.at("required").as_array().at(0).as_string(), "queue");
}

TEST(RabbitmqMessageEventTest, ProviderIdIsTheQueueAndTheMessageId) {
    message_view m;
    m.queue = "orders";
    m.routing_key = "orders";
    m.message_id = "m-1";
    m.data = "{}";
    EXPECT_EQ(provider_event_id(m, false), "orders:id:m-1");
    EXPECT_EQ(provider_event_id(m, true), "orders:id:m-1");
    m.message_id.reset();
    EXPECT_FALSE(provider_event_id(m, false));
    m.message_id = "";
    EXPECT_FALSE(provider_event_id(m, false));
    // Without an id: a content hash, the same for the same message and different otherwise.
    const auto a = provider_event_id(m, true);
    ASSERT_TRUE(a);
    EXPECT_EQ(a->rfind("orders:sha256:", 0), 0u);
    EXPECT_EQ(a, provider_event_id(m, true));
    m.data = "{ }";
    EXPECT_NE(a, provider_event_id(m, true));
    m.data = "{}";
    m.routing_key = "order";
    m.exchange = "s";
    EXPECT_NE(a, provider_event_id(m, true));
}

TEST(RabbitmqMessageEventTest, JsonTextAndBinaryPayloadsAreCarriedAsTheSchemaAllows) {
    message_view m;
    m.queue = "orders";
    m.routing_key = "orders.created";
    m.data = R"({"total":9.5})";
    auto doc = boost::json::parse(event_content(m, 1024, false));
    const auto& st = doc.at("stream").as_object();
    EXPECT_EQ(st.at("topic").as_string(), "orders");
    EXPECT_EQ(st.at("key").as_string(), "orders.created");
    EXPECT_FALSE(st.contains("offset"));
    EXPECT_EQ(st.at("message").at("total").as_double(), 9.5);
    EXPECT_TRUE(expect_valid(doc.at("stream"), "v2/trigger-event.schema.json#/$defs/StreamEvent"));

    m.routing_key = "";
    m.data = "plain text";
    doc = boost::json::parse(event_content(m, 1024, false));
    EXPECT_FALSE(doc.at("stream").as_object().contains("key"));
    EXPECT_EQ(doc.at("stream").at("message").as_string(), "plain text");

    m.data = std::string_view("\xff\x00\x01", 3);
    doc = boost::json::parse(event_content(m, 1024, false));
    EXPECT_EQ(doc.at("stream").at("message").at("$base64").as_string(), "/wAB");
    EXPECT_TRUE(expect_valid(doc.at("stream"), "v2/trigger-event.schema.json#/$defs/StreamEvent"));

    m.data = std::string(100, 'x');
    doc = boost::json::parse(event_content(m, 16, false));
    EXPECT_TRUE(doc.at("stream").at("message").is_null());
    doc = boost::json::parse(event_content(m, 1024, true));
    EXPECT_TRUE(doc.at("stream").at("message").is_null());
}

} // namespace
} // namespace wopbridge::testing::rabbitmq_settings_test
