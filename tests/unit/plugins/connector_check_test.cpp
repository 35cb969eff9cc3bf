#include "plugins/connector_check.hpp"

#include "support/build_paths.hpp"
#include "support/temp_dir.hpp"

#include "wopbridge/signatures.hpp"

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

namespace wopbridge {
namespace {

std::string module(const std::string& name) {
    return std::string(WOPBRIDGE_MODULE_DIR) + "/" + name + ".so";
}

std::string test_module(const std::string& name) {
    return std::string(WOPBRIDGE_TEST_MODULE_DIR) + "/" + name + ".so";
}

class ConnectorCheckTest : public ::testing::Test {
  protected:
    connector_check_report check(const std::string& path, const std::string& config = "{}",
                                 const std::string& sub = "{}",
                                 const probe_request* probe = nullptr) {
        connector_check_options o;
        o.module = path;
        o.config_json = config;
        o.subscription_settings_json = sub;
        o.phase_timeout_ms = 60'000;
        if (probe != nullptr) {
            o.has_probe_request = true;
            o.probe = *probe;
        }
        return run_connector_check(o);
    }

    static const check_line* find(const connector_check_report& r, const std::string& name) {
        for (const auto& l : r.checks) {
            if (l.name == name) {
                return &l;
            }
        }
        return nullptr;
    }

    static void expect(const connector_check_report& r, const std::string& name,
                       check_result result, const std::string& reason_part = "") {
        const check_line* l = find(r, name);
        ASSERT_NE(l, nullptr) << "no line " << name << "\n" << format_check_text(r);
        EXPECT_EQ(l->result, result) << format_check_text(r);
        EXPECT_NE(l->reason.find(reason_part), std::string::npos)
            << l->reason << "\n"
            << format_check_text(r);
    }

    static void expect_clean(const connector_check_report& r) {
        EXPECT_EQ(r.exit_code(), 0) << format_check_text(r);
        EXPECT_EQ(r.count(check_result::fail), 0u) << format_check_text(r);
        for (const char* name :
             {"abi.load", "abi.entry-symbol", "abi.version", "abi.descriptor", "abi.exports",
              "describe.schemas", "describe.config-schema", "describe.idempotent",
              "validate.accepts-config", "validate.refuses-invalid", "lifecycle.create",
              "lifecycle.start", "lifecycle.subscribe", "lifecycle.subscribe-idempotent",
              "lifecycle.unsubscribe-unknown", "lifecycle.stop", "lifecycle.destroy",
              "lifecycle.host-protocol", "contain.malformed-settings"}) {
            expect(r, name, check_result::pass);
        }
    }

    // Runs the built program; returns the exit status and fills `output` with stdout.
    static int run_program(const std::string& args, std::string& output) {
        const std::string cmd = std::string(WOPBRIDGE_PROGRAM) + " connector-check " + args;
        FILE* p = ::popen(cmd.c_str(), "r");
        if (p == nullptr) {
            return -1;
        }
        std::array<char, 4096> buf{};
        std::size_t n;
        while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) {
            output.append(buf.data(), n);
        }
        const int st = ::pclose(p);
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    }

    testing::temp_dir dir_;
};

TEST_F(ConnectorCheckTest, HelloWithSecretRefusesUnsignedProbe) {
    const auto r = check(module("hello"), "{}", R"({"secret":"0123456789abcdef0123"})");
    expect_clean(r);
    expect(r, "http.refuses-unsigned", check_result::pass, "401");
    expect(r, "http.respond-deadline", check_result::pass);
    expect(r, "submit.after-commit", check_result::skip, "--probe-request");
}

TEST_F(ConnectorCheckTest, HelloWithoutSecretExercisesSubmitPath) {
    const auto r = check(module("hello"));
    expect_clean(r);
    expect(r, "http.refuses-unsigned", check_result::skip, "verified=false");
    expect(r, "http.respond-after-outcome", check_result::pass);
    expect(r, "submit.after-commit", check_result::pass);
    expect(r, "submit.duplicate", check_result::pass);
    expect(r, "submit.refused-not-active", check_result::pass, "409");
    expect(r, "submit.refused-overloaded", check_result::pass, "Retry-After");
    expect(r, "http.host-protocol", check_result::pass);
}

TEST_F(ConnectorCheckTest, SlackPassesWithSignedProbeRequest) {
    const std::string secret = "kit-signing-secret";
    const std::string body =
        R"({"type":"event_callback","event_id":"Ev0KIT","team_id":"T1",)"
        R"("event":{"type":"app_mention","channel":"C1","text":"hi"}})";
    const std::string ts = std::to_string(
        std::chrono::duration_cast<std::chrono::seconds>(
            std::chrono::system_clock::now().time_since_epoch())
            .count());
    const std::string text = "POST /v1/ingest/slack-sub\ncontent-type: application/json\n"
                             "x-slack-request-timestamp: " +
                             ts + "\nx-slack-signature: " + sig::sign_slack_v0(secret, ts, body) +
                             "\n\n" + body;
    probe_request probe;
    std::string error;
    ASSERT_TRUE(parse_probe_request(text, probe, error)) << error;
    const auto r = check(module("slack"), R"({"signingSecret":"kit-signing-secret"})", "{}",
                         &probe);
    expect_clean(r);
    expect(r, "http.refuses-unsigned", check_result::pass, "401");
    expect(r, "submit.after-commit", check_result::pass);
    expect(r, "submit.duplicate", check_result::pass);
    expect(r, "submit.refused-not-active", check_result::pass);
    expect(r, "submit.refused-overloaded", check_result::pass);
}

TEST_F(ConnectorCheckTest, SmsPasses) {
    const auto r = check(module("sms"), R"({"authToken":"kit-auth-token"})");
    expect_clean(r);
    expect(r, "http.refuses-unsigned", check_result::pass, "403");
}

TEST_F(ConnectorCheckTest, FormsPasses) {
    const auto r = check(module("forms"), "{}", R"({"allowedOrigins":["https://example.com"]})");
    expect_clean(r);
    expect(r, "http.refuses-unsigned", check_result::pass);
}

TEST_F(ConnectorCheckTest, EmailPassesListeningOnPortZero) {
    const auto r = check(module("email"), R"({"listen":"127.0.0.1:0"})");
    expect_clean(r);
    expect(r, "http.refuses-unsigned", check_result::pass);
}

TEST_F(ConnectorCheckTest, QueueStopsCleanlyWithoutReachableRedis) {
    const auto r = check(module("queue"), R"({"url":"redis://127.0.0.1:1","blockMs":100})",
                         R"({"stream":"kit-stream"})");
    expect_clean(r);
    expect(r, "http.refuses-unsigned", check_result::skip, "WB_CAP_HTTP_INGEST");
}

TEST_F(ConnectorCheckTest, NatsStopsCleanlyWithoutReachableBroker) {
    const auto r = check(module("nats"), R"({"url":"nats://127.0.0.1:1","fetchWaitMs":100})",
                         R"({"stream":"KIT"})");
    expect_clean(r);
    expect(r, "http.refuses-unsigned", check_result::skip, "WB_CAP_HTTP_INGEST");
}

TEST_F(ConnectorCheckTest, KafkaStopsCleanlyWithoutReachableBroker) {
    const auto r = check(module("kafka"), R"({"bootstrapServers":"127.0.0.1:1","pollWaitMs":100})",
                         R"({"topics":["kit"]})");
    expect_clean(r);
    expect(r, "http.refuses-unsigned", check_result::skip, "WB_CAP_HTTP_INGEST");
}

TEST_F(ConnectorCheckTest, RabbitmqStopsCleanlyWithoutReachableBroker) {
    const auto r = check(module("rabbitmq"),
                         R"({"url":"amqp://127.0.0.1:1/","connectTimeoutMs":100})",
                         R"({"queue":"kit"})");
    expect_clean(r);
    expect(r, "http.refuses-unsigned", check_result::skip, "WB_CAP_HTTP_INGEST");
}

TEST_F(ConnectorCheckTest, BadAbiMajorFailsVersionGate) {
    const auto r = check(test_module("bad_abi_major"));
    expect(r, "abi.version", check_result::fail, "ABI major 2, host supports 1");
    expect(r, "abi.load", check_result::pass);
    expect(r, "abi.descriptor", check_result::skip);
    EXPECT_EQ(r.exit_code(), 1);
}

TEST_F(ConnectorCheckTest, NewerMinorFailsVersionGate) {
    const auto r = check(test_module("newer_minor"));
    expect(r, "abi.version", check_result::fail, "is newer than host's");
    EXPECT_EQ(r.exit_code(), 1);
}

TEST_F(ConnectorCheckTest, NoEntrySymbolFailsEntryGateAndExports) {
    const auto r = check(test_module("no_entry_symbol"));
    expect(r, "abi.entry-symbol", check_result::fail, "missing entry symbol");
    const check_line* exports = find(r, "abi.exports");
    ASSERT_NE(exports, nullptr);
    if (exports->result != check_result::skip) { // nm is optional
        EXPECT_EQ(exports->result, check_result::fail);
        // The SDK's version script hides the misspelt symbol: nothing is exported at all.
        EXPECT_NE(exports->reason.find("has no wopbridge_connector_entry_v1"), std::string::npos);
    }
    EXPECT_EQ(r.exit_code(), 1);
}

TEST_F(ConnectorCheckTest, InvalidDescriptorFailsDescriptorGate) {
    const auto r = check(test_module("invalid_descriptor"));
    expect(r, "abi.descriptor", check_result::fail, "bad status value 'beta'");
    expect(r, "abi.version", check_result::pass);
    expect(r, "lifecycle.*", check_result::skip);
    EXPECT_EQ(r.exit_code(), 1);
}

TEST_F(ConnectorCheckTest, AModuleThatNeedsSettingsIsSkippedNotFailedWithoutConfig) {
    for (const char* name : {"slack", "sms"}) {
        connector_check_options o;
        o.module = module(name);
        o.config_given = false;
        o.subscription_settings_given = false;
        o.phase_timeout_ms = 60'000;
        const auto r = run_connector_check(o);
        EXPECT_EQ(r.exit_code(), 0) << name << "\n" << format_check_text(r);
        EXPECT_EQ(r.count(check_result::fail), 0u) << name << "\n" << format_check_text(r);
        expect(r, "validate.accepts-config", check_result::skip, "pass --config");
        expect(r, "lifecycle.*", check_result::skip, "pass --config");
    }
    connector_check_options forms;
    forms.module = module("forms");
    forms.subscription_settings_given = false;
    const auto r = run_connector_check(forms);
    EXPECT_EQ(r.count(check_result::fail), 0u) << format_check_text(r);
    expect(r, "lifecycle.subscribe", check_result::skip, "pass --subscription-settings");
}

TEST_F(ConnectorCheckTest, AnUnsignedCopyOfTheProbeSubmittedAsVerifiedFails) {
    // good_echo trusts every request (its descriptor says so): the kit must notice.
    probe_request probe;
    probe.target = "/v1/ingest/echo-sub";
    probe.headers = {{"content-type", "application/json"}, {"x-signature", "whatever"}};
    probe.body = R"({"n":1})";
    const auto r = check(test_module("good_echo"), "{}", "{}", &probe);
    expect(r, "http.unsigned-copy-not-verified", check_result::fail, "submitted as verified");
    const auto hello = check(module("hello"), "{}", "{}", &probe);
    expect(hello, "http.unsigned-copy-not-verified", check_result::pass, "verified=false");
}

TEST_F(ConnectorCheckTest, RejectsConfigFailsValidate) {
    const auto r = check(test_module("rejects_config"));
    expect(r, "validate.accepts-config", check_result::fail,
           "config rejected: api_key is required");
    expect(r, "lifecycle.*", check_result::skip);
    EXPECT_EQ(r.exit_code(), 1);
}

TEST_F(ConnectorCheckTest, ThrowsInCallbackFailsSubscribe) {
    const auto r = check(test_module("throws_in_callback"));
    expect(r, "lifecycle.subscribe", check_result::fail, "WB_ERR_INTERNAL");
    expect(r, "contain.malformed-settings", check_result::pass, "WB_ERR_INTERNAL");
    EXPECT_EQ(r.exit_code(), 1);
}

TEST_F(ConnectorCheckTest, ThrowingRequestHandlerIsAnswered500AndFlagged) {
    const auto r = check(test_module("throws_in_callback"), "{}", R"({"ok":true})");
    expect(r, "lifecycle.subscribe", check_result::pass);
    expect(r, "http.refuses-unsigned", check_result::fail, "answered 500");
    expect(r, "http.refuses-unsigned", check_result::fail, "exception in on_http_request");
    EXPECT_EQ(r.exit_code(), 1);
}

TEST_F(ConnectorCheckTest, CrashBecomesFailLineNamingTheCheck) {
    const auto r = check(test_module("crashes_in_subscribe"));
    expect(r, "lifecycle.subscribe", check_result::fail, "crashed the process with signal 11");
    expect(r, "contain.malformed-settings", check_result::fail, "crashed");
    expect(r, "lifecycle.create", check_result::pass);
    EXPECT_EQ(r.exit_code(), 1);
}

TEST_F(ConnectorCheckTest, AnswerBeforeCommitIsFlagged) {
    probe_request probe;
    probe.target = "/v1/ingest/early-sub";
    probe.body = "x";
    const auto r = check(test_module("responds_early"), "{}", "{}", &probe);
    expect(r, "http.refuses-unsigned", check_result::pass, "401");
    expect(r, "submit.after-commit", check_result::fail, "before the submit outcome");
    expect(r, "http.host-protocol", check_result::fail, "responded before the submit outcome");
    EXPECT_EQ(r.exit_code(), 1);
}

TEST_F(ConnectorCheckTest, ParsesProbeRequestFile) {
    probe_request p;
    std::string error;
    ASSERT_TRUE(parse_probe_request("POST /v1/ingest/a?x=1 HTTP/1.1\r\nX-Sig: abc \r\n"
                                    "Content-Type: text/plain\r\n\r\nline1\nline2\n",
                                    p, error))
        << error;
    EXPECT_EQ(p.method, "POST");
    EXPECT_EQ(p.target, "/v1/ingest/a?x=1");
    ASSERT_EQ(p.headers.size(), 2u);
    EXPECT_EQ(p.headers[0].first, "x-sig");
    EXPECT_EQ(p.headers[0].second, "abc");
    EXPECT_EQ(p.body, "line1\nline2\n");
    EXPECT_FALSE(parse_probe_request("garbage", p, error));
    EXPECT_FALSE(parse_probe_request("POST /x\nno-colon\n\n", p, error));
}

TEST_F(ConnectorCheckTest, ProgramPrintsLinesAndExitCodes) {
    const std::string sub_file = dir_.file("sub.json");
    std::ofstream(sub_file) << R"({"secret":"0123456789abcdef0123"})";
    std::string out;
    EXPECT_EQ(run_program(module("hello") + " --subscription-settings @" + sub_file, out), 0)
        << out;
    EXPECT_NE(out.find("PASS  abi.load"), std::string::npos) << out;
    EXPECT_NE(out.find("PASS  http.refuses-unsigned"), std::string::npos) << out;
    EXPECT_NE(out.find(" 0 failed"), std::string::npos) << out;

    out.clear();
    EXPECT_EQ(run_program(test_module("bad_abi_major") + " --json", out), 1) << out;
    EXPECT_NE(out.find(R"("result":"FAIL","name":"abi.version")"), std::string::npos) << out;

    out.clear();
    EXPECT_EQ(run_program(module("hello") + " --config '{not json' 2>/dev/null", out), 2);
    out.clear();
    EXPECT_EQ(run_program("2>/dev/null", out), 2);
}

} // namespace
} // namespace wopbridge
