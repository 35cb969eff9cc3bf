// The real `wopbridge serve` under load: a flood of signed ingests past the in-flight bound is
// answered 503 + Retry-After at once while peak memory (VmHWM) stays under a documented bound, and
// the ingest rate limits answer 429 + Retry-After with the error envelope.
#include "support/eventually.hpp"
#include "support/http_client.hpp"
#include "support/serve_process.hpp"
#include "support/temp_dir.hpp"
#include "support/webhook_signer.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace wopbridge::testing::overload_test {
namespace {

// The suite and the program are built together: the AddressSanitizer runtime in this process means
// the bridge under test runs instrumented too. (Test code itself is not instrumented, so
// __SANITIZE_ADDRESS__ cannot tell.)
bool address_sanitizer_present() { return ::dlsym(RTLD_DEFAULT, "__asan_init") != nullptr; }

constexpr const char* secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

// Peak resident set of the serve process. The bound documented in RELIABILITY.md: a flood of
// 1-MiB-capable ingests with 8 requests in flight stays under this, whatever the offered load.
constexpr long peak_rss_bound_kib = 160 * 1024;

class OverloadTest : public ::testing::Test {
  protected:
    void write_config(const std::string& extra_server, const std::string& extra_sub = "") {
        std::ofstream out(dir_.file("wopbridge.yaml"));
        out << "server: {listen: \"127.0.0.1:0\", maxBodyBytes: 1048576" << extra_server
            << "}\n"
               "auth:\n"
               "  apiKeys:\n"
               "    - {key: hk_ovl, tenant: default, scopes: [webhooks:manage, runs:read]}\n"
               "store: {sqlite: {path: bridge.db}}\n"
               "hostKeyFile: host.key\n"
               "runs: {local: {workflows: [{id: conformance-noop}]}}\n"
               "subscriptions:\n"
               "  - {id: orders, source: webhook, workflowId: conformance-noop, signingSecret: \""
            << secret << "\"" << extra_sub
            << "}\n"
               "  - {id: refunds, source: webhook, workflowId: conformance-noop, signingSecret: \""
            << secret << "\"}\n";
    }

    static http_reply post_signed(const std::string& url, const std::string& sub,
                                  const std::string& body, long timeout_ms = 20000) {
        http_call c;
        c.method = "POST";
        c.url = url + "/v1/ingest/" + sub;
        c.headers = standard_webhook_headers(secret, fresh_webhook_id(), std::time(nullptr), body);
        c.headers.emplace_back("content-type", "application/json");
        c.body = body;
        c.timeout_ms = timeout_ms;
        return perform(c);
    }

    static void expect_envelope(const http_reply& r, std::string_view code) {
        boost::system::error_code ec;
        auto v = boost::json::parse(r.body, ec);
        ASSERT_FALSE(ec) << r.body;
        ASSERT_TRUE(v.is_object()) << r.body;
        for (const auto& kv : v.as_object()) {
            EXPECT_TRUE(kv.key() == "error" || kv.key() == "message" || kv.key() == "details")
                << r.body;
        }
        EXPECT_EQ(v.as_object().at("error").as_string(), code) << r.body;
    }

    temp_dir dir_;
};

TEST_F(OverloadTest, AFloodPastTheInFlightBoundIsAnsweredFast503sWithBoundedMemory) {
    // One address sends the whole flood: its own limit (on by default, 100 then 50/s) would answer
    // 429 to the part that gets past the in-flight bound, more of it the faster the machine.
    write_config(", maxInFlightRequests: 8, threads: 2, rateLimits: {perSourceAddress: off}");
    serve_process serve;
    ASSERT_TRUE(serve.start(dir_.file("wopbridge.yaml"), dir_.file("serve.log"))) << serve.error;
    const long rss_before = proc_status_kib(serve.pid(), "VmRSS");

    // 256 KiB bodies: a server that queued them without limit would hold hundreds of MiB.
    std::string body = R"({"pad":")" + std::string(256 * 1024, 'x') + R"("})";
    constexpr int clients = 48;
    constexpr int per_client = 16;
    std::mutex mu;
    std::map<long, int> statuses;
    std::vector<double> latency_503;
    std::vector<std::string> bad;
    std::vector<std::thread> threads;
    for (int t = 0; t < clients; ++t) {
        threads.emplace_back([&] {
            for (int i = 0; i < per_client; ++i) {
                auto r = post_signed(serve.url(), "orders", body);
                std::lock_guard lock(mu);
                ++statuses[r.status];
                if (r.status == 503) {
                    latency_503.push_back(r.seconds);
                    if (!r.header("retry-after") ||
                        r.body.find("\"retryAfter\"") == std::string::npos) {
                        bad.push_back(r.body);
                    }
                } else if (r.status != 202) {
                    bad.push_back(std::to_string(r.status) + " " + r.error + " " + r.body);
                }
            }
        });
    }
    for (auto& t : threads) {
        t.join();
    }
    const long peak = proc_status_kib(serve.pid(), "VmHWM");
    EXPECT_TRUE(bad.empty()) << bad.size() << " unexpected answers, first: " << bad.front();
    EXPECT_GT(statuses[202], 0);
    ASSERT_GT(statuses[503], 0) << "the flood never reached the bound";
    std::sort(latency_503.begin(), latency_503.end());
    const double median = latency_503[latency_503.size() / 2];
    const double p95 = latency_503[latency_503.size() * 95 / 100];
    std::printf("[ overload ] 202=%d 503=%d; 503 latency median %.1f ms p95 %.1f ms max %.1f ms; "
                "VmRSS before %ld KiB, VmHWM %ld KiB (bound %ld KiB)\n",
                statuses[202], statuses[503], median * 1000, p95 * 1000, latency_503.back() * 1000,
                rss_before, peak, peak_rss_bound_kib);
    // A 503 is written before the body is read: it does not wait behind the accepted work.
    EXPECT_LT(median, 0.25);
    EXPECT_GT(peak, 0);
    if (address_sanitizer_present()) {
        // AddressSanitizer keeps freed memory in quarantine (256 MiB) and adds shadow memory: the
        // process's RSS measures the sanitizer, not the bridge. Normal builds check the bound.
        std::printf("[ overload ] RSS bound not checked under AddressSanitizer\n");
    } else {
        EXPECT_LT(peak, peak_rss_bound_kib);
    }

    // Still serving, and what was accepted is committed.
    http_call health;
    health.url = serve.url() + "/healthz";
    EXPECT_EQ(perform(health).status, 200);
    auto again = post_signed(serve.url(), "orders", R"({"after":"flood"})");
    EXPECT_EQ(again.status, 202) << again.body;
    serve.signal(SIGTERM);
    EXPECT_EQ(serve.wait_exit(), 0);
}

TEST_F(OverloadTest, RateLimitsAnswer429WithRetryAfterThroughServe) {
    write_config(", rateLimits: {perSubscription: {rate: 0.01, burst: 3}}",
                 ", rateLimit: {rate: 0.01, burst: 5}");
    serve_process serve;
    ASSERT_TRUE(serve.start(dir_.file("wopbridge.yaml"), dir_.file("serve.log"))) << serve.error;

    // `orders` has its own override (burst 5); `refunds` the server default (burst 3).
    for (int i = 0; i < 5; ++i) {
        EXPECT_EQ(post_signed(serve.url(), "orders", R"({"n":1})").status, 202) << i;
    }
    auto limited = post_signed(serve.url(), "orders", R"({"n":1})");
    EXPECT_EQ(limited.status, 429) << limited.body;
    expect_envelope(limited, "rate_limited");
    ASSERT_TRUE(limited.header("retry-after").has_value());
    EXPECT_GE(std::stoi(std::string(*limited.header("retry-after"))), 1);
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(post_signed(serve.url(), "refunds", R"({"n":1})").status, 202) << i;
    }
    EXPECT_EQ(post_signed(serve.url(), "refunds", R"({"n":1})").status, 429);

    // Management routes are not limited.
    http_call c;
    c.url = serve.url() + "/v1/trigger-subscriptions/orders";
    c.headers = {{"authorization", "Bearer hk_ovl"}};
    EXPECT_EQ(perform(c).status, 200);
    serve.signal(SIGTERM);
    EXPECT_EQ(serve.wait_exit(), 0);
}

} // namespace
} // namespace wopbridge::testing::overload_test
