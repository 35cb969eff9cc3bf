// The kafka connector's settings, event content and offset tracking, without a broker.
#include "kafka/message_event.hpp"
#include "kafka/offset_tracker.hpp"
#include "kafka/settings.hpp"

#include "support/schema_check.hpp"

#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

#include <algorithm>

// Named, so its using-directive stays in this file in a unity build.
namespace wopbridge::testing::kafka_settings_test {
namespace {

using namespace wopbridge::kafka;

bool has(const std::vector<std::pair<std::string, std::string>>& props, const std::string& k,
         const std::string& v) {
    return std::find(props.begin(), props.end(), std::make_pair(k, v)) != props.end();
}

TEST(KafkaSettingsTest, ReadsEverySettingAndFillsDefaults) {
    std::string error;
    auto s = parse_connector_settings(
        R"({"bootstrapServers":"k1:9092, k2:9092","securityProtocol":"sasl_ssl",)"
        R"("saslMechanism":"SCRAM-SHA-512","saslUsername":"bridge","saslPassword":"pw",)"
        R"("sslCaLocation":"/ca.pem","maxInFlight":32,"pollWaitMs":100,"retryDelayMs":50,)"
        R"("sessionTimeoutMs":6000,"properties":{"fetch.wait.max.ms":"50","check.crcs":true}})",
        error);
    ASSERT_TRUE(s) << error;
    EXPECT_EQ(s->max_in_flight, 32u);
    EXPECT_EQ(s->session_timeout_ms, 6000);
    EXPECT_EQ(s->client_id.rfind("wopbridge-", 0), 0u);
    const auto props = s->client_properties();
    EXPECT_TRUE(has(props, "enable.auto.commit", "false"));
    EXPECT_TRUE(has(props, "enable.auto.offset.store", "false"));
    EXPECT_TRUE(has(props, "security.protocol", "sasl_ssl"));
    EXPECT_TRUE(has(props, "sasl.mechanisms", "SCRAM-SHA-512"));
    EXPECT_TRUE(has(props, "heartbeat.interval.ms", "2000"));
    EXPECT_TRUE(has(props, "fetch.wait.max.ms", "50"));
    EXPECT_TRUE(has(props, "check.crcs", "true"));
    EXPECT_EQ(s->sensitive_values().size(), 3u);

    auto sub = parse_subscription_settings(
        R"({"topics":["orders","refunds.v2"],"groupId":"bridge-1","startFrom":"beginning"})",
        error);
    ASSERT_TRUE(sub) << error;
    EXPECT_EQ(sub->topics.size(), 2u);
    EXPECT_TRUE(sub->from_beginning);
    auto plain = parse_subscription_settings(R"({"topics":["orders"]})", error);
    ASSERT_TRUE(plain) << error;
    EXPECT_EQ(plain->group_id, "wopbridge");
    EXPECT_FALSE(plain->from_beginning);
}

TEST(KafkaSettingsTest, RefusesBadSettingsWithoutNamingSecrets) {
    std::string error;
    EXPECT_FALSE(parse_connector_settings("{}", error));
    EXPECT_NE(error.find("bootstrapServers"), std::string::npos);
    EXPECT_FALSE(parse_connector_settings(R"({"bootstrapServers":"no-port"})", error));
    EXPECT_FALSE(parse_connector_settings(
        R"({"bootstrapServers":"k:1","saslUsername":"u","saslPassword":"hunter22"})", error));
    EXPECT_EQ(error.find("hunter22"), std::string::npos);
    EXPECT_FALSE(parse_connector_settings(
        R"({"bootstrapServers":"k:1","securityProtocol":"sasl_plaintext"})", error));
    EXPECT_FALSE(
        parse_connector_settings(R"({"bootstrapServers":"k:1","sslCaLocation":"/ca"})", error));
    EXPECT_FALSE(parse_connector_settings(
        R"({"bootstrapServers":"k:1","securityProtocol":"ssl","sslKeyLocation":"/k"})", error));
    EXPECT_FALSE(parse_connector_settings(R"({"bootstrapServers":"k:1","maxAttempts":3})", error));
    EXPECT_NE(error.find("maxAttempts"), std::string::npos);
    // The contract's own properties cannot be passed through.
    for (const char* p : {"enable.auto.commit", "enable.auto.offset.store", "group.id",
                          "sasl.password", "plugin.library.paths", "auto.commit.interval.ms"}) {
        EXPECT_FALSE(parse_connector_settings(
            std::string(R"({"bootstrapServers":"k:1","properties":{")") + p + R"(":"x"}})",
            error))
            << p;
        EXPECT_NE(error.find(p), std::string::npos) << error;
    }

    EXPECT_FALSE(parse_subscription_settings("{}", error));
    EXPECT_NE(error.find("topics"), std::string::npos);
    EXPECT_FALSE(parse_subscription_settings(R"({"topics":[]})", error));
    EXPECT_FALSE(parse_subscription_settings(R"({"topics":["a b"]})", error));
    EXPECT_FALSE(parse_subscription_settings(R"({"topics":["a"],"startFrom":"end"})", error));
    EXPECT_FALSE(parse_subscription_settings(R"({"topics":"orders"})", error));
}

TEST(KafkaSettingsTest, RedactsSecretsAndPaths) {
    EXPECT_EQ(redact("bad ssl.ca.location /etc/ca-Secret.pem: no", {"/etc/ca-Secret.pem"}),
              "bad ssl.ca.location <redacted>: no");
    EXPECT_EQ(redact("pw pw", {"pw"}), "<redacted> <redacted>");
}

TEST(KafkaOffsetTrackerTest, CommitsOnlyUpToTheFirstOutstandingRecord) {
    offset_tracker t;
    EXPECT_FALSE(t.committable());
    EXPECT_TRUE(t.received(10));
    EXPECT_TRUE(t.received(11));
    EXPECT_TRUE(t.received(13)); // a gap (compaction, a transaction marker)
    EXPECT_EQ(t.committable(), 10);
    t.done(11); // later one first: nothing passes 10
    t.done(13);
    EXPECT_EQ(t.committable(), 10);
    EXPECT_EQ(t.outstanding(), 3u);
    t.done(10);
    EXPECT_EQ(t.committable(), 14);
    EXPECT_EQ(t.outstanding(), 0u);
    EXPECT_FALSE(t.received(12)); // read again after a rebalance: ignored
    EXPECT_TRUE(t.received(14));
    EXPECT_EQ(t.committable(), 14);
}

TEST(KafkaMessageEventTest, ProviderIdIsTopicPartitionAndOffset) {
    EXPECT_EQ(provider_event_id("orders", 2, 42), "orders/2/42");
}

TEST(KafkaMessageEventTest, JsonTextAndBinaryPayloadsAreCarriedAsTheSchemaAllows) {
    record_view r;
    r.topic = "orders";
    r.partition = 1;
    r.offset = 7;
    r.key = "c-42";
    r.data = R"({"total":9.5})";
    auto doc = boost::json::parse(event_content(r, 1024, false));
    const auto& st = doc.at("stream").as_object();
    EXPECT_EQ(st.at("topic").as_string(), "orders");
    EXPECT_EQ(st.at("partition").as_int64(), 1);
    EXPECT_EQ(st.at("offset").as_string(), "7");
    EXPECT_EQ(st.at("key").as_string(), "c-42");
    EXPECT_EQ(st.at("message").at("total").as_double(), 9.5);
    EXPECT_TRUE(expect_valid(doc.at("stream"), "v2/trigger-event.schema.json#/$defs/StreamEvent"));

    r.key.reset();
    r.data = "plain text";
    doc = boost::json::parse(event_content(r, 1024, false));
    EXPECT_FALSE(doc.at("stream").as_object().contains("key"));
    EXPECT_EQ(doc.at("stream").at("message").as_string(), "plain text");

    r.data = std::string_view("\xff\x00\x01", 3);
    r.key = std::string_view("\xfe", 1);
    doc = boost::json::parse(event_content(r, 1024, false));
    EXPECT_EQ(doc.at("stream").at("message").at("$base64").as_string(), "/wAB");
    EXPECT_TRUE(expect_valid(doc.at("stream"), "v2/trigger-event.schema.json#/$defs/StreamEvent"));

    r.data = std::string(100, 'x');
    doc = boost::json::parse(event_content(r, 16, false));
    EXPECT_TRUE(doc.at("stream").at("message").is_null());
    doc = boost::json::parse(event_content(r, 1024, true));
    EXPECT_TRUE(doc.at("stream").at("message").is_null());
    EXPECT_EQ(doc.at("stream").at("offset").as_string(), "7");
}

} // namespace
} // namespace wopbridge::testing::kafka_settings_test
