#include "outbound/delivery_request.hpp"

#include <wopbridge/signatures.hpp>

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <map>

namespace wopbridge::outbound {
namespace {

class DeliveryRequestTest : public ::testing::Test {
protected:
    static std::map<std::string, std::string> as_map(
        const std::vector<std::pair<std::string, std::string>>& h) {
        return {h.begin(), h.end()};
    }
};

// CONTRACT.md (e) worked example.
TEST_F(DeliveryRequestTest, ContractWorkedExample) {
    const std::string secret = "f8a3c0ffee00112233445566778899aabbccddeeff00112233445566778899aa";
    const std::string body =
        R"({"runId":"run_abc","workspaceId":"workspace-123","event":{"type":"run.completed"}})";
    signing_input in;
    in.webhook_id = "wh_1";
    in.event_type = "run.completed";
    in.timestamp_s = 1767225600;
    in.secret = secret;
    in.version = "1.2.3";
    auto h = as_map(delivery_headers(in, body));
    EXPECT_EQ(h["X-openwop-Signature"],
              "sha256=21e8f1b18fda6e4aec59555c61c034c69b7831466ec1f23933a27208635767f3");
    EXPECT_EQ(h["X-openwop-Signature-Algorithm"], "v1");
    EXPECT_EQ(h["X-openwop-Timestamp"], "1767225600");
    EXPECT_EQ(h["X-openwop-Webhook-Id"], "wh_1");
    EXPECT_EQ(h["X-openwop-Event-Type"], "run.completed");
    EXPECT_EQ(h["User-Agent"], "openwop-webhook-dispatcher/1.2.3");
    EXPECT_EQ(h["Content-Type"], "application/json");
    EXPECT_EQ(h.count("webhook-signature"), 0U);
    EXPECT_EQ(secret_fingerprint(secret), "e76bdf08");
}

TEST_F(DeliveryRequestTest, StandardWebhooksHeadersWhenTheSubscriberSuppliedAWhsecSecret) {
    signing_input in;
    in.webhook_id = "wh_1";
    in.event_type = "run.completed";
    in.delivery_id = "obd_0123456789abcdef01234567";
    in.timestamp_s = 1767225600;
    in.secret = std::string(64, 'a');
    in.standard_secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const std::string body = R"({"x":1})";
    auto h = as_map(delivery_headers(in, body));
    EXPECT_EQ(h["webhook-id"], in.delivery_id);
    EXPECT_EQ(h["webhook-timestamp"], h["X-openwop-Timestamp"]);
    EXPECT_EQ(sig::verify_standard_webhooks({in.standard_secret}, h["webhook-id"],
                                            h["webhook-timestamp"], h["webhook-signature"], body,
                                            in.timestamp_s),
              sig::verdict::valid);
    EXPECT_EQ(h["X-openwop-Signature-Algorithm"], "v1");
}

TEST_F(DeliveryRequestTest, BodyIsTheClosedEnvelopeAroundTheVerbatimEvent) {
    run_event e;
    e.event_id = "evt_1";
    e.run_id = "run_1";
    e.type = "run.completed";
    e.payload_json = R"({"exitCode":0})";
    e.timestamp = 1767225600000;
    e.sequence = 3;
    auto v = boost::json::parse(delivery_body("acme", e)).as_object();
    EXPECT_EQ(v.size(), 3U);
    EXPECT_EQ(v["runId"], "run_1");
    EXPECT_EQ(v["workspaceId"], "acme");
    auto& ev = v["event"].as_object();
    EXPECT_EQ(ev["eventId"], "evt_1");
    EXPECT_EQ(ev["sequence"], 3);
    EXPECT_EQ(ev["type"], "run.completed");
    EXPECT_EQ(ev["payload"].as_object()["exitCode"], 0);
}

} // namespace
} // namespace wopbridge::outbound
