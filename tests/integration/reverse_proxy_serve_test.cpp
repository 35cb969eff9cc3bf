// `wopbridge serve` behind a real nginx (Debian's nginx-light) with server.trustedProxies, as
// docs/deployment.md#behind-a-reverse-proxy sets it up: a burst of signed webhooks from one client
// is all accepted (the per-address budget counts refusals only), a forged flood is mostly answered
// 429 by that budget and every 429 is counted and logged, and a Twilio webhook whose public URL is
// https:// terminated at the proxy verifies — while the same request sent around the proxy is
// refused with a log line naming the URL that was checked.
#include "support/http_client.hpp"
#include "support/http_multi.hpp"
#include "support/nginx_proxy.hpp"
#include "support/provider_signing.hpp"
#include "support/serve_probe.hpp"
#include "support/serve_process.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

namespace wopbridge::testing::reverse_proxy_serve_test {
namespace {

using http_client::http_call;
using http_client::perform;

constexpr const char* github_secret = "proxy-test-github-secret";
constexpr const char* twilio_token = "proxy-test-twilio-token-0001";
constexpr const char* client_address = "127.0.0.2"; // the provider, as nginx sees it

class ReverseProxyServeTest : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_FALSE(nginx_binary().empty()) << "nginx is not installed (scripts/setup-debian.sh proxy)";
        const std::string d = dir_.path().string();
        // publicUrl is deliberately not the URL the proxy is called at: the forwarded one counts.
        std::ofstream(dir_.file("wopbridge.yaml"))
            << "server:\n  listen: \"127.0.0.1:0\"\n  publicUrl: \"http://wrong.example.test\"\n"
               "  trustedProxies: [127.0.0.1]\n"
               "auth:\n  apiKeys:\n"
               "    - {key: hk_probe, tenant: default, scopes: [webhooks:manage, runs:read]}\n"
               "store: {sqlite: {path: \""
            << d << "/bridge.db\"}}\nhostKeyFile: \"" << d
            << "/host.key\"\n"
               "runs: {local: {workflows: [{id: conformance-noop}]}}\n"
               "connectors:\n  - {name: sms, module: sms, settings: {authToken: \""
            << twilio_token
            << "\"}}\n"
               "subscriptions:\n"
               "  - {id: gh, workflowId: conformance-noop, provider: github, signingSecret: "
            << github_secret
            << "}\n"
               "  - {id: sms-in, connector: sms, workflowId: conformance-noop}\n";
        ASSERT_TRUE(serve_.start(dir_.file("wopbridge.yaml"), dir_.file("serve.log"))) << serve_.error;
        std::filesystem::create_directories(dir_.file("nginx"));
        ASSERT_TRUE(proxy_.start(dir_.file("nginx"), serve_.url().substr(7))) << proxy_.error;
    }
    void TearDown() override {
        proxy_.stop();
        if (serve_.pid() > 0) {
            serve_.signal(SIGTERM);
            EXPECT_EQ(serve_.wait_exit(), 0) << read_text_file(dir_.file("serve.log"));
        }
    }

    // A GitHub delivery as GitHub signs it (`forged`: signed with another secret).
    http_call github_delivery(int n, bool forged) {
        http_call c;
        c.method = "POST";
        c.url = proxy_.http_url() + "/v1/ingest/gh";
        c.body = R"({"action":"opened","number":)" + std::to_string(n) + "}";
        c.headers = {{"content-type", "application/json"},
                     {"x-github-event", "issues"},
                     {"x-github-delivery", (forged ? "f-" : "d-") + std::to_string(n)},
                     {"x-hub-signature-256",
                      "sha256=" + hmac_sha256_hex(forged ? "not-the-secret" : github_secret, c.body)}};
        c.local_address = client_address;
        return c;
    }

    std::map<long, int> statuses(const std::vector<http_reply>& replies) {
        std::map<long, int> out;
        for (const auto& r : replies) {
            ++out[r.status];
        }
        return out;
    }

    temp_dir dir_;
    serve_process serve_;
    nginx_proxy proxy_;
};

TEST_F(ReverseProxyServeTest, ABurstOfSignedWebhooksIsAllAcceptedAndAForgedFloodMostlyMeets429) {
    std::vector<http_call> valid;
    for (int i = 0; i < 300; ++i) {
        valid.push_back(github_delivery(i, false));
    }
    auto accepted = statuses(perform_all(valid, 8));
    EXPECT_EQ(accepted[202], 300) << ::testing::PrintToString(accepted);
    serve_probe probe(serve_.url(), "hk_probe");
    EXPECT_EQ(probe.ingest_count("gh", "accepted"), 300);
    EXPECT_EQ(probe.ingest_count("unknown", "rate_limited"), 0);

    std::vector<http_call> forged;
    for (int i = 0; i < 300; ++i) {
        forged.push_back(github_delivery(i, true));
    }
    const auto start = std::chrono::steady_clock::now();
    auto refused = statuses(perform_all(forged, 8));
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(refused[401] + refused[429], 300) << ::testing::PrintToString(refused);
    // The default budget ({rate: 10, burst: 50} refusals per address): at most the burst, the
    // refill while the flood lasted, and what had passed the check but not yet been answered when
    // the bucket ran dry (up to the 8 in flight, twice for the refill's boundaries).
    EXPECT_LE(refused[401], 50 + static_cast<int>(std::ceil(10 * seconds)) + 2 * 8)
        << ::testing::PrintToString(refused) << " in " << seconds << " s";
    EXPECT_GT(refused[429], 150) << ::testing::PrintToString(refused) << " in " << seconds << " s";
    // Every 429 is counted and logged.
    EXPECT_EQ(probe.ingest_count("unknown", "rate_limited"), refused[429]);
    EXPECT_EQ(probe.ingest_count("gh", "signature_invalid"), refused[401]);
    const std::string log = read_text_file(dir_.file("serve.log"));
    EXPECT_NE(log.find("ingest.rate_limited"), std::string::npos) << log;
    EXPECT_NE(log.find(client_address), std::string::npos) << log; // the client's, not the proxy's

    // Another client behind the same proxy is not throttled by the first one's flood.
    auto other = github_delivery(1000, false);
    other.local_address = "127.0.0.3";
    EXPECT_EQ(perform(other).status, 202);
}

TEST_F(ReverseProxyServeTest, ATwilioWebhookToAnHttpsUrlTerminatedAtTheProxyVerifies) {
    const std::multimap<std::string, std::string> params{
        {"AccountSid", "ACproxytest0000000000000000000000"}, {"Body", "through the proxy"},
        {"From", "+15005550006"}, {"MessageSid", "SMproxytest000000000000000000001"},
        {"To", "+15005550001"}};
    const std::string url = proxy_.https_url() + "/v1/ingest/sms-in";
    http_call c;
    c.method = "POST";
    c.url = url;
    c.body = form_encode(params);
    c.headers = {{"content-type", "application/x-www-form-urlencoded"},
                 {"x-twilio-signature", twilio_signature(twilio_token, url, params)}};
    c.ca_file = proxy_.ca_file();
    c.local_address = client_address;
    auto through = perform(c);
    EXPECT_EQ(through.status, 200) << through.error << " " << through.body << "\n"
                                   << read_text_file(dir_.file("serve.log"));

    // Around the proxy, from a peer that is not trusted, the same claims change nothing: the
    // bridge checks its publicUrl, refuses, and says which URL it checked.
    c.url = serve_.url() + "/v1/ingest/sms-in";
    c.ca_file.clear();
    c.headers.emplace_back("x-forwarded-proto", "https");
    c.headers.emplace_back("x-forwarded-for", "198.51.100.1");
    auto around = perform(c);
    EXPECT_EQ(around.status, 403) << around.body;
    const std::string log = read_text_file(dir_.file("serve.log"));
    EXPECT_NE(log.find("checked against the URL http://wrong.example.test/v1/ingest/sms-in"),
              std::string::npos)
        << log;
}

} // namespace
} // namespace wopbridge::testing::reverse_proxy_serve_test
