// POST/GET/DELETE /v1/webhooks end to end: the real bridge (durable outbound webhooks, loopback
// http allowed) behind the real http::server, and a real receiving server for the deliveries.
#include "store/store.hpp"
#include "support/api_bridge_fixture.hpp"
#include "support/eventually.hpp"
#include "support/http_client.hpp"
#include "support/http_test_server.hpp"
#include "support/scripted_run_starter.hpp"
#include "support/temp_dir.hpp"
#include "support/webhook_signer.hpp"

#include <wopbridge/signatures.hpp>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace wopbridge::outbound_http_test {
namespace {

namespace json = boost::json;
using testing::eventually;
using testing::http_call;
using testing::http_headers;
using testing::http_reply;

class OutboundHttpTest : public testing::api_bridge_fixture {
protected:
    void SetUp() override {
        settings_.public_url = "http://127.0.0.1:1";
        settings_.default_retry = {3, backoff_kind::fixed, 100, 100, false};
        settings_.local_workflows = {"conformance-noop"};
        settings_.webhooks_durable = true;
        settings_.webhooks_allow_loopback_http = true;
        auto starter = std::make_unique<testing::scripted_run_starter>(settings_.local_workflows);
        http::api_options ao;
        ao.keys = {{"hk_acme", "acme", {"webhooks:manage", "runs:read", "runs:create"}},
                   {"hk_globex", "globex", {"webhooks:manage"}},
                   {"hk_readonly", "acme", {"runs:read"}}};
        start_stack(std::move(starter), ao, 2);
    }


    testing::http_test_server receiver_{[](const testing::http_request&) {
        return testing::http_response{};
    }};
};

TEST_F(OutboundHttpTest, RegisterListAndDeleteAWebhook) {
    std::string url = receiver_.base_url() + "/hook";
    auto r = call("POST", "/v1/webhooks",
                  R"({"url":")" + url + R"(","events":["run.started"],"tenantId":"acme","tags":["t"]})");
    ASSERT_EQ(r.status, 201) << r.body;
    auto v = json::parse(r.body).as_object();
    EXPECT_EQ(v.size(), 3U);
    std::string id(v.at("webhookId").as_string());
    std::string secret(v.at("secret").as_string());
    ASSERT_EQ(secret.size(), 64U);
    EXPECT_EQ(secret.find_first_not_of("0123456789abcdef"), std::string::npos);
    EXPECT_EQ(v.at("secretFingerprint").as_string(),
              sig::to_hex(sig::sha256(secret)).substr(0, 8));

    auto list = call("GET", "/v1/webhooks");
    ASSERT_EQ(list.status, 200);
    EXPECT_EQ(list.body.find(secret), std::string::npos) << "the secret is shown once";
    auto hooks = json::parse(list.body).at("webhooks").as_array();
    ASSERT_EQ(hooks.size(), 1U);
    EXPECT_EQ(hooks[0].at("webhookId").as_string(), id);
    EXPECT_EQ(hooks[0].at("state").as_string(), "active");
    EXPECT_TRUE(json::parse(call("GET", "/v1/webhooks", "", "hk_globex").body)
                    .at("webhooks")
                    .as_array()
                    .empty());
    EXPECT_EQ(call("GET", "/v1/webhooks/" + id + "/dead-letters").status, 200);

    EXPECT_EQ(call("DELETE", "/v1/webhooks/" + id, "", "hk_globex").status, 404);
    EXPECT_EQ(call("DELETE", "/v1/webhooks/" + id).status, 204);
    EXPECT_EQ(call("DELETE", "/v1/webhooks/" + id).status, 404);
}

TEST_F(OutboundHttpTest, RegistrationRefusals) {
    EXPECT_EQ(call("POST", "/v1/webhooks", R"({"url":"https://10.0.0.1/x","events":["run.started"]})")
                  .status,
              400);
    EXPECT_EQ(call("POST", "/v1/webhooks",
                   R"({"url":"http://hooks.example.com/x","events":["run.started"]})")
                  .status,
              400);
    EXPECT_EQ(call("POST", "/v1/webhooks",
                   R"({"url":"https://169.254.169.254/x","events":["run.started"]})")
                  .status,
              400);
    EXPECT_EQ(call("POST", "/v1/webhooks", R"({"url":"https://hooks.example.com/x","events":[]})")
                  .status,
              400);
    EXPECT_EQ(call("POST", "/v1/webhooks",
                   R"({"url":"https://hooks.example.com/x","events":["run.started"],"tenantId":"globex"})")
                  .status,
              403);
    EXPECT_EQ(call("POST", "/v1/webhooks",
                   R"({"url":"https://hooks.example.com/x","events":["run.started"]})",
                   "hk_readonly")
                  .status,
              403);
    EXPECT_EQ(call("POST", "/v1/webhooks",
                   R"({"url":"https://hooks.example.com/x","events":["run.started"],"extra":1})")
                  .status,
              400);
}

TEST_F(OutboundHttpTest, ARunStartedByAnInboundEventReachesTheSubscriberSigned) {
    auto caps = json::parse(call("GET", "/.well-known/openwop", "", "").body);
    EXPECT_EQ(caps.at("webhooks"),
              json::parse(R"({"supported":true,"signatureAlgorithms":["v1"],"durable":true})"));
    auto reg = call("POST", "/v1/webhooks",
                    R"({"url":")" + receiver_.base_url() + R"(/hook","events":["run.started"]})");
    ASSERT_EQ(reg.status, 201) << reg.body;
    std::string secret(json::parse(reg.body).at("secret").as_string());

    auto sub = call("POST", "/v1/trigger-subscriptions",
                    R"({"source":"webhook","workflowId":"conformance-noop"})");
    ASSERT_EQ(sub.status, 201) << sub.body;
    auto sv = json::parse(sub.body);
    std::string ingest_url(sv.at("binding").at("ingestUrl").as_string());
    std::string path = ingest_url.substr(ingest_url.find("/v1/ingest/"));
    std::string signing(sv.at("binding").at("signingSecret").as_string());
    std::string body = R"({"order":42})";
    auto ts = std::chrono::duration_cast<std::chrono::seconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count();
    auto in = call("POST", path, body, "",
                   testing::standard_webhook_headers(signing, testing::fresh_webhook_id(), ts,
                                                     body));
    ASSERT_LT(in.status, 300) << in.body;

    ASSERT_TRUE(eventually([&] { return !receiver_.requests().empty(); }));
    auto got = receiver_.requests().front();
    EXPECT_EQ(got.header("x-openwop-event-type"), "run.started");
    auto sent_ts = got.header("x-openwop-timestamp");
    EXPECT_EQ(got.header("x-openwop-signature"),
              "sha256=" + sig::to_hex(sig::hmac_sha256(secret, sent_ts + "." + got.body)));
    auto delivered = json::parse(got.body).as_object();
    EXPECT_EQ(delivered.at("workspaceId").as_string(), "acme");
    EXPECT_EQ(delivered.at("event").at("type").as_string(), "run.started");
    EXPECT_EQ(delivered.at("runId"), delivered.at("event").at("runId"));
}

} // namespace
} // namespace wopbridge::outbound_http_test
