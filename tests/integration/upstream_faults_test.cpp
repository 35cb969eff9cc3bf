// The upstream run host misbehaving, at process level against a real HTTP server: 429 with
// Retry-After, answers slower than the attempt timeout, 5xx and a host that is down. Backoff honours
// Retry-After, the breaker moves the subscription to `failed` and a probe brings it back, and a
// hanging host does not hold the deliveries of other subscriptions.
#include "support/bridge_reads.hpp"
#include "support/eventually.hpp"
#include "support/http_client.hpp"
#include "support/idempotent_runs_host.hpp"
#include "support/serve_process.hpp"
#include "support/temp_dir.hpp"
#include "support/webhook_signer.hpp"

#include "core/clock.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <string>
#include <vector>

namespace wopbridge::testing::upstream_faults_test {
namespace {

constexpr const char* secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
constexpr const char* api_key = "hk_up";

millis wall_ms(std::chrono::system_clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

class UpstreamFaultsTest : public ::testing::Test {
protected:
    void write_config(const std::string& base_url, const std::string& delivery) {
        std::ofstream out(dir_.file("wopbridge.yaml"));
        out << sqlite_serve_prelude(api_key)
            << "runs: {upstream: {baseUrl: \""
            << base_url << "\", timeout: 10s}}\n"
            << "delivery: " << delivery << "\n"
            << "subscriptions:\n"
               "  - {id: orders, source: webhook, workflowId: wf-orders, signingSecret: \""
            << secret
            << "\"}\n"
               "  - {id: refunds, source: webhook, workflowId: wf-refunds, signingSecret: \""
            << secret << "\"}\n";
    }

    bool start() { return serve_.start(dir_.file("wopbridge.yaml"), dir_.file("serve.log")); }

    http_reply post(const std::string& subscription) {
        std::string id = fresh_webhook_id();
        return perform(signed_ingest_call(serve_.url(), subscription, secret, id, R"({"n":1})"));
    }

    std::optional<delivery_row> delivery(const std::string& subscription, const std::string& id) {
        bool ok = false;
        for (auto& d : read_all_deliveries(serve_.url(), api_key, subscription, ok)) {
            if (d.delivery_id == id) {
                return d;
            }
        }
        return std::nullopt;
    }

    void TearDown() override {
        serve_.signal(SIGTERM);
        serve_.wait_exit();
    }

    temp_dir dir_;
    serve_process serve_;
};

TEST_F(UpstreamFaultsTest, RetryAfterFromA429DelaysTheNextAttempt) {
    idempotent_runs_host host([](const runs_host_call& c) -> std::optional<http_response> {
        if (c.nth_for_key == 1) {
            return http_response{429, {{"Retry-After", "2"}, {"Content-Type", "application/json"}},
                                 R"({"error":"rate_limited"})"};
        }
        return std::nullopt;
    });
    // The policy alone would retry after 50 ms: only Retry-After explains a 2 s wait.
    write_config(host.base_url(), "{retryPolicy: {backoff: fixed, baseDelay: 50ms, jitter: false}, "
                                  "attemptTimeout: 2s, lease: 5s}");
    ASSERT_TRUE(start()) << serve_.error;
    auto r = post("orders");
    ASSERT_EQ(r.status, 202) << r.body;
    const std::string id = json_string_field(r.body, "deliveryId");

    std::optional<delivery_row> waiting;
    ASSERT_TRUE(eventually([&] {
        waiting = delivery("orders", id);
        return waiting && waiting->attempts == 1 && waiting->status == "pending";
    }));
    ASSERT_TRUE(eventually([&] { return host.calls_for(id).size() == 2; }));
    const auto calls = host.calls_for(id);
    const auto gap = wall_ms(calls[1].at) - wall_ms(calls[0].at);
    EXPECT_GE(gap, 1900) << "Retry-After: 2 was not honoured";
    millis due = 0;
    ASSERT_TRUE(parse_iso8601(waiting->due_at, due));
    EXPECT_GE(due - wall_ms(calls[0].at), 1900) << "dueAt does not carry Retry-After";
    ASSERT_TRUE(eventually([&] {
        auto d = delivery("orders", id);
        return d && d->status == "delivered" && d->attempts == 2;
    }));
    EXPECT_EQ(host.runs_created(), 1);
}

TEST_F(UpstreamFaultsTest, ASlowUpstreamPastTheAttemptTimeoutRetriesIntoTheSameRun) {
    // The first start is accepted by the host but answered after 5 s; the attempt times out at
    // 500 ms and the retry (same Idempotency-Key) gets the same run at once.
    idempotent_runs_host host([](const runs_host_call& c) -> std::optional<http_response> {
        if (c.nth_for_key == 1) {
            http_response slow;
            slow.status = 0;
            slow.delay = std::chrono::seconds(5);
            return slow;
        }
        return std::nullopt;
    });
    write_config(host.base_url(), "{retryPolicy: {backoff: fixed, baseDelay: 100ms, jitter: false}, "
                                  "attemptTimeout: 500ms, lease: 5s}");
    ASSERT_TRUE(start()) << serve_.error;
    const auto t0 = std::chrono::steady_clock::now();
    auto r = post("orders");
    ASSERT_EQ(r.status, 202) << r.body;
    const std::string id = json_string_field(r.body, "deliveryId");
    std::optional<delivery_row> d;
    ASSERT_TRUE(eventually([&] {
        d = delivery("orders", id);
        return d && d->status == "delivered";
    }));
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(4))
        << "the slow answer was waited for";
    EXPECT_EQ(d->attempts, 2);
    EXPECT_EQ(host.calls_for(id).size(), 2u);
    EXPECT_EQ(host.runs_created(), 1);
    auto run = read_run(serve_.url(), api_key, json_string_field(r.body, "runId"));
    EXPECT_EQ(run.upstream_run_id, "up_run_1");
}

TEST_F(UpstreamFaultsTest, ADownUpstreamOpensTheBreakerAndAProbeReactivates) {
    idempotent_runs_host host([](const runs_host_call& c) -> std::optional<http_response> {
        if (c.nth_for_key == 1) {
            return http_response{502, {{"Content-Type", "application/json"}},
                                 R"({"error":"bad_gateway"})"};
        }
        return std::nullopt;
    });
    write_config(host.base_url(),
                 "{retryPolicy: {maxAttempts: 50, backoff: fixed, baseDelay: 100ms, jitter: false}, "
                 "attemptTimeout: 1s, lease: 5s, breaker: {failureThreshold: 3, probeInterval: 1s}}");
    ASSERT_TRUE(start()) << serve_.error;
    // A 5xx first, then the host goes down: connections refused.
    auto r = post("orders");
    ASSERT_EQ(r.status, 202) << r.body;
    const std::string id = json_string_field(r.body, "deliveryId");
    ASSERT_TRUE(eventually([&] { return host.calls_for(id).size() == 1; }));
    host.go_down();
    ASSERT_TRUE(eventually([&] {
        return read_subscription_state(serve_.url(), api_key, "orders") == "failed";
    })) << "the breaker did not open";
    // The other subscription is untouched by this one's breaker.
    EXPECT_EQ(read_subscription_state(serve_.url(), api_key, "refunds"), "active");
    auto failed = delivery("orders", id);
    ASSERT_TRUE(failed.has_value());
    EXPECT_GE(failed->attempts, 3);
    EXPECT_EQ(failed->status, "pending");

    // The host comes back: the next probe delivers and reactivates the subscription.
    host.come_up();
    ASSERT_TRUE(eventually([&] {
        return read_subscription_state(serve_.url(), api_key, "orders") == "active";
    })) << "no probe reactivated the subscription";
    auto d = delivery("orders", id);
    ASSERT_TRUE(d.has_value());
    EXPECT_EQ(d->status, "delivered");
    EXPECT_EQ(host.runs_created(), 1);
    // Active again: new events flow at once.
    auto next = post("orders");
    ASSERT_EQ(next.status, 202) << next.body;
    EXPECT_TRUE(eventually([&] {
        auto n = delivery("orders", json_string_field(next.body, "deliveryId"));
        return n && n->status == "delivered";
    }));
}

TEST_F(UpstreamFaultsTest, AHangingUpstreamDoesNotHoldOtherSubscriptions) {
    // wf-orders starts hang for 20 s; wf-refunds starts answer at once.
    idempotent_runs_host host([](const runs_host_call& c) -> std::optional<http_response> {
        if (c.workflow_id == "wf-orders") {
            http_response hang;
            hang.status = 0;
            hang.delay = std::chrono::seconds(20);
            return hang;
        }
        return std::nullopt;
    });
    write_config(host.base_url(), "{retryPolicy: {backoff: fixed, baseDelay: 5s, jitter: false}, "
                                  "attemptTimeout: 10s, lease: 15s, maxInFlight: 16}");
    ASSERT_TRUE(start()) << serve_.error;
    constexpr int hanging = 8;
    for (int i = 0; i < hanging; ++i) {
        ASSERT_EQ(post("orders").status, 202);
    }
    ASSERT_TRUE(eventually([&] {
        int n = 0;
        for (const auto& c : host.calls()) {
            n += c.workflow_id == "wf-orders" ? 1 : 0;
        }
        return n == hanging;
    })) << "the hanging starts were not all sent";

    // While every orders start hangs, refunds deliver promptly, one after another.
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 10; ++i) {
        auto r = post("refunds");
        ASSERT_EQ(r.status, 202) << r.body;
        const std::string id = json_string_field(r.body, "deliveryId");
        ASSERT_TRUE(eventually(
            [&] {
                auto d = delivery("refunds", id);
                return d && d->status == "delivered";
            },
            std::chrono::seconds(5)))
            << "refunds delivery " << i << " was held behind the hanging upstream";
    }
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(8));
    bool ok = false;
    for (const auto& d : read_all_deliveries(serve_.url(), api_key, "orders", ok)) {
        EXPECT_NE(d.status, "delivered"); // still hanging: nothing pretended to succeed
    }
    EXPECT_EQ(read_subscription_state(serve_.url(), api_key, "refunds"), "active");
}

} // namespace
} // namespace wopbridge::testing::upstream_faults_test
