// Connector subscriptions registered over the API work exactly like the config file's (issue 16):
// served from the 201 on, again after a restart, no longer after a DELETE; an unknown connector
// instance or settings the module refuses are answered 400 and store nothing. Through the real
// `wopbridge serve` with the hello connector module and libcurl.
#include "support/eventually.hpp"
#include "support/http_client.hpp"
#include "support/provider_signing.hpp"
#include "support/serve_probe.hpp"
#include "support/serve_process.hpp"
#include "support/temp_dir.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <csignal>
#include <ctime>
#include <fstream>
#include <string>

namespace wopbridge::testing::connector_registration_test {
namespace {

namespace json = boost::json;

constexpr const char* secret = "registered-over-the-api-0123456789";

class ConnectorRegistrationTest : public ::testing::Test {
protected:
    void SetUp() override {
        std::ofstream(dir_.file("wopbridge.yaml"))
            << probe_config_prelude(dir_.path().string(), "http://127.0.0.1:8080")
            << "runs: {local: {workflows: [{id: my-workflow}]}}\n"
               "connectors:\n"
               "  - {name: hello-1, module: hello, settings: {greeting: hi}}\n";
        start();
    }

    void TearDown() override { stop(); }

    void start() {
        serve_ = std::make_unique<serve_process>();
        ASSERT_TRUE(serve_->start(dir_.file("wopbridge.yaml"), dir_.file("serve.log")))
            << serve_->error;
        probe_ = std::make_unique<serve_probe>(serve_->url(), "hk_probe");
    }

    void stop() {
        if (serve_ && serve_->pid() > 0) {
            serve_->signal(SIGTERM);
            EXPECT_EQ(serve_->wait_exit(), 0) << read_text_file(dir_.file("serve.log"));
        }
        serve_.reset();
    }

    http_reply api(const std::string& method, const std::string& path, const std::string& body = {}) {
        http_call c;
        c.method = method;
        c.url = serve_->url() + path;
        c.headers = {{"authorization", "Bearer hk_probe"}, {"content-type", "application/json"}};
        c.body = body;
        return perform(c);
    }

    http_reply signed_post(const std::string& sub_id, const std::string& event_id) {
        const std::string ts = std::to_string(std::time(nullptr));
        const std::string body = R"({"event":")" + event_id + R"("})";
        http_call c;
        c.method = "POST";
        c.url = serve_->url() + "/v1/ingest/" + sub_id;
        c.headers = {{"content-type", "application/json"},
                     {"x-hello-id", event_id},
                     {"x-hello-timestamp", ts},
                     {"x-hello-signature", "sha256=" + hmac_sha256_hex(secret, ts + "." + body)}};
        c.body = body;
        return perform(c);
    }

    std::string register_hello(const std::string& settings_json) {
        auto r = api("POST", "/v1/trigger-subscriptions",
                     R"({"source":"webhook","workflowId":"my-workflow","verification":{"mode":"none"},)"
                     R"("connector":"hello-1","settings":)" +
                         settings_json + "}");
        EXPECT_EQ(r.status, 201) << r.body;
        if (r.status != 201) {
            return {};
        }
        return std::string(json::parse(r.body).at("subscription").at("subscriptionId").as_string());
    }

    std::size_t stored_subscriptions() {
        auto r = api("GET", "/v1/trigger-subscriptions");
        EXPECT_EQ(r.status, 200) << r.body;
        return r.status == 200 ? json::parse(r.body).at("subscriptions").as_array().size() : 0;
    }

    temp_dir dir_;
    std::unique_ptr<serve_process> serve_;
    std::unique_ptr<serve_probe> probe_;
};

TEST_F(ConnectorRegistrationTest, ARegisteredSubscriptionIsServedAtOnceAndAfterARestart) {
    const std::string id = register_hello(R"({"secret":")" + std::string(secret) + R"("})");
    ASSERT_FALSE(id.empty());
    auto first = signed_post(id, "evt-api-1");
    EXPECT_EQ(first.status, 202) << first.body;
    EXPECT_TRUE(probe_->runs_started(id, 1));
    // The module verifies with the registered settings: a wrong signature starts nothing.
    http_call forged;
    forged.method = "POST";
    forged.url = serve_->url() + "/v1/ingest/" + id;
    forged.headers = {{"x-hello-id", "evt-forged"},
                      {"x-hello-timestamp", std::to_string(std::time(nullptr))},
                      {"x-hello-signature", "sha256=00"}};
    forged.body = "{}";
    EXPECT_EQ(perform(forged).status, 401);

    stop();
    start();
    auto after = signed_post(id, "evt-api-2");
    EXPECT_EQ(after.status, 202) << after.body << "\n" << read_text_file(dir_.file("serve.log"));
    EXPECT_TRUE(probe_->runs_started(id, 2));
}

TEST_F(ConnectorRegistrationTest, ADeletedSubscriptionIsNoLongerServed) {
    const std::string id = register_hello(R"({"secret":")" + std::string(secret) + R"("})");
    ASSERT_FALSE(id.empty());
    ASSERT_EQ(api("DELETE", "/v1/trigger-subscriptions/" + id).status, 204);
    EXPECT_EQ(signed_post(id, "evt-after-delete").status, 404);
}

TEST_F(ConnectorRegistrationTest, AnUnknownConnectorIsRefusedAndNothingIsStored) {
    auto r = api("POST", "/v1/trigger-subscriptions",
                 R"({"source":"webhook","workflowId":"my-workflow","connector":"nope"})");
    ASSERT_EQ(r.status, 400) << r.body;
    auto e = json::parse(r.body).as_object();
    EXPECT_EQ(e.at("error"), "validation_error");
    EXPECT_EQ(e.at("details").at("field"), "connector");
    EXPECT_NE(std::string(e.at("message").as_string()).find("loaded: hello-1"), std::string::npos)
        << r.body;
    EXPECT_EQ(stored_subscriptions(), 0u);
}

TEST_F(ConnectorRegistrationTest, SettingsTheModuleRefusesAreRefusedAndNothingIsStored) {
    auto r = api("POST", "/v1/trigger-subscriptions",
                 R"({"source":"webhook","workflowId":"my-workflow","connector":"hello-1",)"
                 R"("settings":{"secret":"short"}})");
    ASSERT_EQ(r.status, 400) << r.body;
    auto e = json::parse(r.body).as_object();
    EXPECT_EQ(e.at("details").at("field"), "settings");
    EXPECT_NE(std::string(e.at("message").as_string()).find("the connector refused"),
              std::string::npos)
        << r.body;
    EXPECT_EQ(stored_subscriptions(), 0u);
}

} // namespace
} // namespace wopbridge::testing::connector_registration_test
