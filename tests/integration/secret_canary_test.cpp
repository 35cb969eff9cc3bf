// Canary secrets and bodies through the real `wopbridge serve`: configured signing secrets, API
// keys, a connector (Slack) signing secret, a registered subscription's secret and an outbound
// webhook secret never appear in any output (log file at trace level, every REST read, error
// bodies, /metrics, discovery, the database files); request bodies never appear in the log, the
// audit records (deliveries and dead-letter pages), /metrics or error bodies. The TriggerEvent
// given to the run legitimately carries the body, so run reads are searched for secrets only.
// The email connector's SMTP AUTH password (and its AUTH PLAIN base64 form) gets the same search
// after real smtplib sessions that authenticate with it and with a wrong one.
#include "support/build_paths.hpp"
#include "support/child_process.hpp"
#include "support/eventually.hpp"
#include "support/http_client.hpp"
#include "support/serve_process.hpp"
#include "support/temp_dir.hpp"
#include "support/webhook_signer.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace wopbridge::testing::secret_canary_test {
namespace {

namespace json = boost::json;

constexpr const char* api_key = "hk_CANARYAPIKEY7f3a9";
constexpr const char* signing_secret = "whsec_Q0FOQVJZU0lHTklOR1NFQ1JFVDAxMjM0NTY3ODlhYg==";
constexpr const char* slack_secret = "CANARYSLACKSECRET4242";
constexpr const char* outbound_secret = "whsec_Q0FOQVJZT1VUQk9VTkRTRUNSRVQwMTIzNDU2Nzg5eA==";
constexpr const char* body_canary = "CANARYBODY";

class SecretCanaryTest : public ::testing::Test {
  protected:
    void SetUp() override {
        std::ofstream out(dir_.file("wopbridge.yaml"));
        out << "server: {listen: \"127.0.0.1:0\"}\n"
               "auth:\n"
               "  apiKeys:\n"
               "    - {key: "
            << api_key
            << ", tenant: default, scopes: [webhooks:manage, runs:read, runs:create]}\n"
               "store: {sqlite: {path: bridge.db}}\n"
               "hostKeyFile: host.key\n"
               "logging: {level: trace}\n"
               "webhooks: {allowLoopbackHttp: true, durable: true}\n"
               "runs: {local: {workflows: [{id: conformance-noop}]}}\n"
               "connectors:\n"
               "  - {name: chat, module: \""
            << WOPBRIDGE_MODULE_DIR << "/slack.so\", settings: {signingSecret: " << slack_secret
            << "}}\n"
            << "subscriptions:\n"
               "  - {id: orders, source: webhook, workflowId: conformance-noop, signingSecret: \""
            << signing_secret
            << "\"}\n"
               "  - {id: chat, connector: chat, workflowId: conformance-noop}\n";
    }

    http_reply call(const std::string& method, const std::string& path,
                    const std::string& body = "", const std::string& key = api_key) {
        http_call c;
        c.method = method;
        c.url = serve_.url() + path;
        c.headers.emplace_back("authorization", std::string("Bearer ") + key);
        if (!body.empty()) {
            c.headers.emplace_back("content-type", "application/json");
        }
        c.body = body;
        auto r = perform(c);
        record(method + " " + path, r);
        return r;
    }

    http_reply ingest(const std::string& sub, const std::string& body, const std::string& secret) {
        http_call c;
        c.method = "POST";
        c.url = serve_.url() + "/v1/ingest/" + sub;
        c.headers = standard_webhook_headers(secret, fresh_webhook_id(), std::time(nullptr), body);
        c.headers.emplace_back("content-type", "application/json");
        c.body = body;
        auto r = perform(c);
        record("ingest " + sub, r);
        return r;
    }

    void record(const std::string& what, const http_reply& r) {
        std::string text = std::to_string(r.status) + "\n";
        for (const auto& [k, v] : r.headers) {
            text += k + ": " + v + "\n";
        }
        text += r.body;
        (r.status >= 400 ? errors_ : reads_).push_back({what, text});
    }

    struct output {
        std::string what;
        std::string text;
    };
    temp_dir dir_;
    serve_process serve_;
    std::vector<output> errors_; // every error answer, headers included
    std::vector<output> reads_;  // every other answer
};

TEST_F(SecretCanaryTest, SecretsAndBodiesAppearInNoOutput) {
    ASSERT_TRUE(serve_.start(dir_.file("wopbridge.yaml"), dir_.file("serve.log"))) << serve_.error;

    // --- inputs carrying canaries -------------------------------------------------------------
    const std::string body = std::string(R"({"note":")") + body_canary + R"(-accepted"})";
    auto ok = ingest("orders", body, signing_secret);
    ASSERT_EQ(ok.status, 202) << ok.body;
    const std::string run_id(json::parse(ok.body).at("runId").as_string());
    EXPECT_EQ(ingest("orders", std::string(R"({"note":")") + body_canary + R"(-forged"})",
                     "whsec_c2VjcmV0c2VjcmV0c2VjcmV0")
                  .status,
              401);
    EXPECT_EQ(call("POST", "/v1/trigger-subscriptions",
                   std::string(R"({"source":")") + body_canary + "-mgmt")
                  .status,
              400);
    EXPECT_EQ(call("GET", "/v1/trigger-subscriptions", "", "hk_CANARYWRONGKEY").status, 401);
    auto reg = call("POST", "/v1/trigger-subscriptions",
                    R"({"source":"webhook","workflowId":"conformance-noop"})");
    ASSERT_EQ(reg.status, 201) << reg.body;
    const auto reg_json = json::parse(reg.body);
    const std::string minted(reg_json.at("binding").at("signingSecret").as_string());
    const std::string minted_sub(reg_json.at("subscription").at("subscriptionId").as_string());
    reads_.pop_back(); // the one answer that carries the minted secret, by contract
    EXPECT_EQ(
        ingest(minted_sub, std::string(R"({"n":")") + body_canary + "-minted\"}", minted).status,
        202);
    auto hook = call("POST", "/v1/webhooks",
                     std::string(R"({"url":"http://127.0.0.1:9/hook?token=CANARYURLTOKEN",)") +
                         R"("events":["run.completed"],"secret":")" + outbound_secret + "\"}");
    ASSERT_EQ(hook.status, 201) << hook.body;
    reads_.pop_back(); // echoes the outbound secret once, by contract
    const std::string webhook_id(json::parse(hook.body).at("webhookId").as_string());

    // A forged Slack request carrying a canary body (the connector's secret is the canary).
    {
        http_call c;
        c.method = "POST";
        c.url = serve_.url() + "/v1/ingest/chat";
        c.headers = {{"content-type", "application/json"},
                     {"x-slack-request-timestamp", std::to_string(std::time(nullptr))},
                     {"x-slack-signature",
                      "v0=0000000000000000000000000000000000000000000000000000000000000000"}};
        c.body = std::string(R"({"type":"event_callback","event":{"type":"message","text":")") +
                 body_canary + R"(-slack"}})";
        auto r = perform(c);
        EXPECT_GE(r.status, 400) << r.body;
        record("slack ingest", r);
    }

    // --- every read ---------------------------------------------------------------------------
    ASSERT_TRUE(eventually([&] {
        auto r = call("GET", "/v1/runs/" + run_id);
        return r.body.find("\"completed\"") != std::string::npos;
    })) << "run did not complete";
    call("GET", "/v1/runs/" + run_id + "/events/poll?timeout=0");
    auto list = call("GET", "/v1/trigger-subscriptions");
    ASSERT_EQ(list.status, 200);
    const auto listed = json::parse(list.body);
    for (const auto& s : listed.at("subscriptions").as_array()) {
        const std::string id(s.at("subscriptionId").as_string());
        call("GET", "/v1/trigger-subscriptions/" + id);
        call("GET", "/v1/trigger-subscriptions/" + id + "/deliveries");
        call("GET", "/v1/trigger-subscriptions/" + id + "/dead-letters");
    }
    call("GET", "/v1/webhooks");
    call("GET", "/v1/webhooks/" + webhook_id + "/dead-letters");
    call("GET", "/.well-known/openwop");
    call("GET", "/v1/openapi.json");
    auto metrics = call("GET", "/metrics");
    ASSERT_EQ(metrics.status, 200);
    call("GET", "/v1/runs/run_missing");
    call("PATCH", "/v1/trigger-subscriptions/orders", R"({"state":"CANARYBODY-state"})");

    serve_.signal(SIGTERM);
    ASSERT_EQ(serve_.wait_exit(), 0);
    const std::string log = read_text_file(dir_.file("serve.log"));
    ASSERT_NE(log.find("wopbridge.started"), std::string::npos);
    std::string database;
    for (const auto& e : std::filesystem::directory_iterator(dir_.path())) {
        if (e.path().filename().string().rfind("bridge.db", 0) == 0) {
            database += read_text_file(e.path().string());
        }
    }
    ASSERT_FALSE(database.empty());

    // --- the search ---------------------------------------------------------------------------
    const std::vector<std::string> secrets = {"CANARYAPIKEY",
                                              "CANARYWRONGKEY",
                                              "CANARYSIGNINGSECRET",
                                              "Q0FOQVJZU0lHTklOR1NFQ1JF",
                                              slack_secret,
                                              "CANARYOUTBOUNDSECRET",
                                              "Q0FOQVJZT1VUQk9VTkRTRUNSRV",
                                              "CANARYURLTOKEN",
                                              minted,
                                              minted.substr(6)};
    auto search = [](const std::string& where, const std::string& text,
                     const std::vector<std::string>& needles) {
        for (const auto& n : needles) {
            EXPECT_EQ(text.find(n), std::string::npos) << "'" << n << "' found in " << where;
        }
    };
    search("the serve log", log, secrets);
    search("the serve log", log, {body_canary});
    // Every secret is sealed or absent at rest, the outbound webhook URL's query token included
    // (reads never show the query; deliveries get the whole URL).
    search("the database files", database, secrets);
    for (const auto& o : errors_) {
        search("error answer to " + o.what, o.text, secrets);
        search("error answer to " + o.what, o.text, {body_canary});
    }
    for (const auto& o : reads_) {
        search("answer to " + o.what, o.text, secrets);
        // Run reads legitimately carry the TriggerEvent; every other read is content-free.
        if (o.what.find("/v1/runs/") == std::string::npos) {
            search("answer to " + o.what, o.text, {body_canary});
        }
    }
    EXPECT_GE(errors_.size(), 6u);
    EXPECT_GE(reads_.size(), 15u);
}

TEST_F(SecretCanaryTest, SmtpAuthPasswordAppearsInNoOutput) {
    constexpr const char* python = "/usr/bin/python3";
    if (::access(python, X_OK) != 0) {
        GTEST_SKIP() << python << " is not installed";
    }
    constexpr const char* password = "CANARYSMTPPASSWORD9";
    constexpr const char* wrong_password = "CANARYWRONGSMTPPASS";
    std::ofstream(dir_.file("wopbridge.yaml"))
        << "server: {listen: \"127.0.0.1:0\"}\n"
           "auth:\n"
           "  apiKeys:\n"
           "    - {key: "
        << api_key
        << ", tenant: default, scopes: [webhooks:manage, runs:read]}\n"
           "store: {sqlite: {path: bridge.db}}\n"
           "hostKeyFile: host.key\n"
           "logging: {level: trace}\n"
           "runs: {local: {workflows: [{id: conformance-noop}]}}\n"
           "connectors:\n"
           "  - name: email\n"
           "    module: email\n"
           "    settings: {listen: \"127.0.0.1:0\", hostname: mx.example.test,\n"
           "               auth: {username: mailer, password: "
        << password
        << "}}\n"
           "subscriptions:\n"
           "  - {id: mail, source: email, connector: email, workflowId: conformance-noop,\n"
           "     settings: {addresses: [support@example.test]}}\n";
    ASSERT_TRUE(serve_.start(dir_.file("wopbridge.yaml"), dir_.file("serve.log"))) << serve_.error;
    std::string log = read_text_file(dir_.file("serve.log"));
    auto at = log.find("smtp.listening");
    ASSERT_NE(at, std::string::npos) << log;
    at = log.find(':', log.find("port", at));
    const int smtp_port = std::stoi(log.substr(at + 1));

    auto send = [&](const std::string& pass, const std::string& id) {
        json::object spec{{"host", "127.0.0.1"},
                          {"port", smtp_port},
                          {"from", "ada@example.com"},
                          {"rcpt", json::array{"support@example.test"}},
                          {"subject", "canary"},
                          {"text", std::string(body_canary) + "-mail\n"},
                          {"messageId", "<" + id + "@example.com>"},
                          {"auth", json::object{{"user", "mailer"}, {"password", pass}}}};
        auto run = run_program({python,
                                std::string(WOPBRIDGE_SOURCE_DIR) + "/tests/scripts/smtp_send.py",
                                json::serialize(spec)});
        EXPECT_EQ(run.exit_code, 0) << run.stdout_text;
        boost::system::error_code ec;
        auto v = json::parse(run.last_line, ec);
        return ec || !v.is_object() ? json::object{} : v.as_object();
    };
    auto good = send(password, "canary-1");
    EXPECT_EQ(good["auth"], 235) << json::serialize(good);
    EXPECT_EQ(good["data"], 250) << json::serialize(good);
    auto bad = send(wrong_password, "canary-2");
    EXPECT_EQ(bad["auth"], 535) << json::serialize(bad);

    for (const char* path : {"/v1/trigger-subscriptions", "/v1/trigger-subscriptions/mail",
                             "/v1/trigger-subscriptions/mail/deliveries",
                             "/v1/trigger-subscriptions/mail/dead-letters", "/v1/ops/subscriptions",
                             "/.well-known/openwop", "/metrics"}) {
        EXPECT_LT(call("GET", path).status, 400) << path;
    }
    call("PATCH", "/v1/trigger-subscriptions/mail", R"({"state":"CANARYBODY-state"})");

    serve_.signal(SIGTERM);
    ASSERT_EQ(serve_.wait_exit(), 0);
    log = read_text_file(dir_.file("serve.log"));
    std::string database;
    for (const auto& e : std::filesystem::directory_iterator(dir_.path())) {
        if (e.path().filename().string().rfind("bridge.db", 0) == 0) {
            database += read_text_file(e.path().string());
        }
    }
    ASSERT_FALSE(database.empty());
    // The passwords, and the AUTH PLAIN responses that carried them ("\0mailer\0<password>" in base64).
    const std::vector<std::string> secrets = {password, wrong_password,
                                              "AG1haWxlcgBDQU5BUllTTVRQUEFTU1dPUkQ5",
                                              "AG1haWxlcgBDQU5BUllXUk9OR1NNVFBQQVNT"};
    for (const auto& n : secrets) {
        EXPECT_EQ(log.find(n), std::string::npos) << "'" << n << "' found in the serve log";
        EXPECT_EQ(database.find(n), std::string::npos) << "'" << n << "' found in the database";
        for (const auto& o : errors_) {
            EXPECT_EQ(o.text.find(n), std::string::npos) << "'" << n << "' in " << o.what;
        }
        for (const auto& o : reads_) {
            EXPECT_EQ(o.text.find(n), std::string::npos) << "'" << n << "' in " << o.what;
        }
    }
    EXPECT_EQ(log.find(body_canary), std::string::npos) << "the message body is in the serve log";
    EXPECT_EQ(reads_.size(), 7u);
}

} // namespace
} // namespace wopbridge::testing::secret_canary_test
