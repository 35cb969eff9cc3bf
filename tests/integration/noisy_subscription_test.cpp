// Noisy-subscription isolation on the real `wopbridge serve` (upstream run starter against a
// loopback runs host): a subscription whose workflow start always fails (500) and retries without
// backoff does not hold back the deliveries of a quiet subscription. Measured as a bounded
// comparison, not a timing threshold: every quiet delivery completes while the noisy subscription
// is still retrying, and the quiet batch takes at most a small multiple of its time without the
// noise.
#include "support/eventually.hpp"
#include "support/http_client.hpp"
#include "support/http_test_server.hpp"
#include "support/serve_process.hpp"
#include "support/temp_dir.hpp"
#include "support/webhook_signer.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace wopbridge::testing::noisy_subscription_test {
namespace {

constexpr const char* secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
constexpr int quiet_batch = 40;
constexpr int noisy_batch = 200;

class NoisySubscriptionTest : public ::testing::Test {
  protected:
    NoisySubscriptionTest()
        : host_([this](const http_request& r) {
              http_response res;
              if (r.body.find("\"workflowId\":\"noisy\"") != std::string::npos) {
                  ++noisy_attempts_;
                  res.status = 500;
                  res.body = R"({"error":"internal_error","message":"always fails"})";
              } else {
                  ++quiet_started_;
                  res.status = 201;
                  res.body = R"({"runId":"up_)" + std::to_string(quiet_started_.load()) + "\"}";
              }
              res.headers = {{"content-type", "application/json"}};
              return res;
          }) {}

    void write_config() {
        std::ofstream out(dir_.file("wopbridge.yaml"));
        out << "server: {listen: \"127.0.0.1:0\", "
               "rateLimits: {perSourceAddress: {rate: 100000, burst: 100000}}}\n"
               // a load from loopback: the default per-address limit is raised explicitly
               "auth: {apiKeys: [{key: hk_noisy, tenant: default, scopes: [webhooks:manage]}]}\n"
               "store: {sqlite: {path: bridge.db}}\n"
               "hostKeyFile: host.key\n"
               "runs: {upstream: {baseUrl: \""
            << host_.base_url()
            << "\", timeout: 5s}}\n"
               "delivery: {maxInFlight: 16, breaker: {failureThreshold: 1000000, probeInterval: "
               "1s},"
               " retryPolicy: {maxAttempts: 1000, backoff: none}}\n"
               "subscriptions:\n"
               "  - {id: quiet, source: webhook, workflowId: quiet, signingSecret: \""
            << secret
            << "\"}\n"
               "  - {id: noisy, source: webhook, workflowId: noisy, signingSecret: \""
            << secret << "\"}\n";
    }

    void post(const std::string& sub, int n) {
        for (int i = 0; i < n; ++i) {
            http_call c;
            c.method = "POST";
            c.url = serve_.url() + "/v1/ingest/" + sub;
            const std::string body = R"({"i":)" + std::to_string(i) + "}";
            c.headers =
                standard_webhook_headers(secret, fresh_webhook_id(), std::time(nullptr), body);
            c.headers.emplace_back("content-type", "application/json");
            c.body = body;
            ASSERT_EQ(perform(c).status, 202) << sub << " " << i;
        }
    }

    // Seconds until `quiet_batch` more quiet runs have started.
    double quiet_batch_seconds() {
        const int target = quiet_started_.load() + quiet_batch;
        const auto t0 = std::chrono::steady_clock::now();
        post("quiet", quiet_batch);
        EXPECT_TRUE(
            eventually([&] { return quiet_started_.load() >= target; }, std::chrono::seconds(60)))
            << quiet_started_.load() << " of " << target;
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }

    std::atomic<int> noisy_attempts_{0};
    std::atomic<int> quiet_started_{0};
    http_test_server host_;
    temp_dir dir_;
    serve_process serve_;
};

TEST_F(NoisySubscriptionTest, AnAlwaysFailingSubscriptionDoesNotSlowTheOthers) {
    write_config();
    ASSERT_TRUE(serve_.start(dir_.file("wopbridge.yaml"), dir_.file("serve.log"))) << serve_.error;

    const double alone = quiet_batch_seconds();

    post("noisy", noisy_batch);
    ASSERT_TRUE(eventually([&] { return noisy_attempts_.load() >= 2 * noisy_batch; }))
        << "the noisy subscription is not retrying";
    const int noisy_before = noisy_attempts_.load();
    const double with_noise = quiet_batch_seconds();
    const int noisy_during = noisy_attempts_.load() - noisy_before;

    // The noise was there the whole time: still retrying after the quiet batch completed.
    EXPECT_TRUE(eventually([&] { return noisy_attempts_.load() > noisy_before + noisy_during; }))
        << "the noisy subscription stopped retrying";
    http_call c;
    c.url = serve_.url() + "/v1/trigger-subscriptions/noisy";
    c.headers = {{"authorization", "Bearer hk_noisy"}};
    auto sub = perform(c);
    EXPECT_NE(sub.body.find("\"state\":\"active\""), std::string::npos) << sub.body;

    std::printf("[ noisy ] %d quiet deliveries: %.3f s alone, %.3f s beside %d failing deliveries "
                "(%d failed attempts meanwhile)\n",
                quiet_batch, alone, with_noise, noisy_batch, noisy_during);
    EXPECT_GT(noisy_during, 0);
    EXPECT_LE(with_noise, 4 * alone + 2.0);

    serve_.signal(SIGTERM);
    EXPECT_EQ(serve_.wait_exit(), 0);
}

} // namespace
} // namespace wopbridge::testing::noisy_subscription_test
