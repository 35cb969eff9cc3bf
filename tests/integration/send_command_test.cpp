// `wopbridge send` (issue 19, the local dev loop): one test event per provider shape, signed with
// the secret the config holds, against the real serve. The bridge verifies every signature, so a
// 2xx proves the event was signed the way the provider signs it; a wrong secret is refused.
#include "support/build_paths.hpp"
#include "support/child_process.hpp"
#include "support/serve_process.hpp"
#include "support/temp_dir.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <string>

namespace wopbridge::testing::send_command_test {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr const char* whsec = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

class SendCommandTest : public ::testing::Test {
protected:
    void SetUp() override {
        write_config(whsec);
        ASSERT_TRUE(serve_.start(config_, dir_.file("serve.log"))) << serve_.error;
    }

    void TearDown() override {
        serve_.signal(SIGTERM);
        EXPECT_EQ(serve_.wait_exit(), 0) << read_text_file(dir_.file("serve.log"));
    }

    void write_config(const std::string& webhook_secret) {
        std::ofstream(config_) << sqlite_serve_prelude("hk_send")
                               << "runs: {local: {workflows: [{id: wf}]}}\n"
                                  "connectors:\n"
                                  "  - {name: slack, module: slack, settings: {signingSecret: "
                                  "slack-signing-secret-0123456789}}\n"
                                  "  - {name: sms, module: sms, settings: {authToken: "
                                  "twilio-auth-token-0123456789}}\n"
                                  "  - {name: forms, module: forms}\n"
                                  "subscriptions:\n"
                                  "  - {id: orders, source: webhook, workflowId: wf, "
                                  "signingSecret: \""
                               << webhook_secret
                               << "\"}\n"
                                  "  - {id: support, connector: slack, workflowId: wf}\n"
                                  // The URL Twilio is configured with (a proxy in front).
                                  "  - {id: texts, connector: sms, workflowId: wf, settings: "
                                  "{publicUrl: \"https://hooks.example.test/v1/ingest/texts\"}}\n"
                                  "  - {id: contact, connector: forms, workflowId: wf, settings: "
                                  "{allowedOrigins: [\"https://www.example.test\"], tokenSecret: "
                                  "form-token-secret-0123456789}}\n";
    }

    program_run send(const std::vector<std::string>& extra) {
        std::vector<std::string> argv = {WOPBRIDGE_PROGRAM, "send", "--config", config_};
        argv.insert(argv.end(), extra.begin(), extra.end());
        return run_program(argv, 30, {{"WOPBRIDGE_URL", serve_.url()}}, true);
    }

    temp_dir dir_;
    std::string config_ = dir_.file("wopbridge.yaml");
    serve_process serve_;
};

TEST_F(SendCommandTest, EachProviderShapeIsSignedAsItsProviderSignsIt) {
    auto webhook = send({"orders", "--data", R"({"order":42})"});
    EXPECT_EQ(webhook.exit_code, 0) << webhook.stdout_text;
    EXPECT_THAT(webhook.stdout_text, StartsWith("202 "));
    EXPECT_THAT(webhook.stdout_text, HasSubstr("\"runId\""));

    auto slack = send({"support"});
    EXPECT_EQ(slack.exit_code, 0) << slack.stdout_text;
    EXPECT_THAT(slack.stdout_text, StartsWith("200"));

    auto sms = send({"texts"});
    EXPECT_EQ(sms.exit_code, 0) << sms.stdout_text;
    EXPECT_THAT(sms.stdout_text, StartsWith("200"));
    EXPECT_THAT(sms.stdout_text, HasSubstr("<Response"));

    const std::string fields = dir_.file("fields.txt");
    std::ofstream(fields) << "name=Grace&message=from+a+file";
    auto form = send({"contact", "--file", fields});
    EXPECT_EQ(form.exit_code, 0) << form.stdout_text;
    EXPECT_THAT(form.stdout_text, StartsWith("202 "));

    const std::string log = read_text_file(dir_.file("serve.log"));
    EXPECT_EQ(log.find("signature_invalid"), std::string::npos) << log;
}

TEST_F(SendCommandTest, ASecretTheBridgeDoesNotHoldIsRefusedAndUsageErrorsExitTwo) {
    // The sender reads another file whose secret differs from the one the bridge serves.
    const std::string served = config_;
    config_ = dir_.file("stale.yaml");
    write_config("whsec_c2VuZGVyLWhhcy1hLWRpZmZlcmVudC1zZWNyZXQ=");
    auto refused = send({"orders"});
    EXPECT_EQ(refused.exit_code, 1) << refused.stdout_text;
    EXPECT_THAT(refused.stdout_text, StartsWith("401 "));
    config_ = served;

    EXPECT_EQ(send({"nope"}).exit_code, 2);
    auto missing = send({"orders", "--file", dir_.file("absent.json")});
    EXPECT_EQ(missing.exit_code, 2);
    EXPECT_THAT(missing.stdout_text, HasSubstr("cannot read"));
}

} // namespace
} // namespace wopbridge::testing::send_command_test
