#include "runs/run_starter.hpp"

#include "support/http_test_server.hpp"

#include <boost/json.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <ctime>
#include <mutex>

namespace wopbridge {
namespace {

using testing::fake_runs_host;
using testing::http_response;

class UpstreamRunStarterTest : public ::testing::Test {
protected:
    fake_runs_host host_;

    std::unique_ptr<run_starter> make(millis timeout_ms = 5000) {
        return make_upstream_run_starter({host_.base_url(), "tok-secret", timeout_ms});
    }
    static run_start_request request(std::string delivery_id = "dlv_1") {
        run_start_request r;
        r.run_id = "run_1";
        r.delivery_id = std::move(delivery_id);
        r.tenant = "acme";
        r.workflow_id = "support-triage";
        r.subscription_id = "sub_1";
        r.trigger_event_json = R"({"source":"webhook","subscriptionId":"sub_1"})";
        r.causation_event_id = "evt_1";
        return r;
    }
    static run_start_result start_and_wait(run_starter& s, const run_start_request& r) {
        std::mutex mu;
        std::condition_variable cv;
        std::optional<run_start_result> out;
        s.start(r, [&](run_start_result res) {
            std::lock_guard lock(mu);
            out = std::move(res);
            cv.notify_all();
        });
        std::unique_lock lock(mu);
        EXPECT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return out.has_value(); }));
        return out.value_or(run_start_result{});
    }
    static http_response envelope(int status, std::string code,
                                  std::vector<std::pair<std::string, std::string>> headers = {}) {
        headers.emplace_back("Content-Type", "application/json");
        return {status, headers,
                R"({"error":")" + code + R"(","message":"private detail from the body"})"};
    }
};

TEST_F(UpstreamRunStarterTest, StartsARunAndRepeatsAreIdempotent) {
    auto s = make();
    EXPECT_TRUE(s->starts_before_commit());
    auto a = start_and_wait(*s, request("dlv_same"));
    auto b = start_and_wait(*s, request("dlv_same"));
    auto c = start_and_wait(*s, request("dlv_other"));
    EXPECT_EQ(a.outcome, run_start_result::kind::started);
    EXPECT_EQ(a.upstream_run_id, "up_run_1");
    EXPECT_EQ(b.upstream_run_id, a.upstream_run_id);
    EXPECT_EQ(c.upstream_run_id, "up_run_2");
    EXPECT_EQ(host_.runs_created(), 2);

    auto reqs = host_.requests();
    ASSERT_EQ(reqs.size(), 3u);
    EXPECT_EQ(reqs[0].method, "POST");
    EXPECT_EQ(reqs[0].target, "/v1/runs");
    EXPECT_EQ(reqs[0].header("authorization"), "Bearer tok-secret");
    EXPECT_EQ(reqs[0].header("idempotency-key"), "dlv_same");
    EXPECT_EQ(reqs[0].header("content-type"), "application/json");
    auto body = boost::json::parse(reqs[0].body).as_object();
    EXPECT_EQ(body.at("workflowId"), "support-triage");
    EXPECT_EQ(body.at("tenantId"), "acme");
    EXPECT_EQ(body.at("inputs").at("trigger").at("source"), "webhook");
    EXPECT_EQ(body.at("metadata").at("subscriptionId"), "sub_1");
    EXPECT_EQ(body.at("metadata").at("deliveryId"), "dlv_same");
    EXPECT_EQ(body.at("metadata").at("causationId"), "evt_1");
}

TEST_F(UpstreamRunStarterTest, ServiceUnavailableRetriesAfterSeconds) {
    host_.script(envelope(503, "unavailable", {{"Retry-After", "7"}}));
    auto s = make();
    auto r = start_and_wait(*s, request());
    EXPECT_EQ(r.outcome, run_start_result::kind::retry);
    EXPECT_EQ(r.retry_after_ms, 7000);
    EXPECT_EQ(r.reason, "upstream answered 503 unavailable");
    // The next attempt with the same key succeeds.
    EXPECT_EQ(start_and_wait(*s, request()).outcome, run_start_result::kind::started);
}

TEST_F(UpstreamRunStarterTest, RetryAfterAcceptsAnHttpDate) {
    std::time_t t = std::time(nullptr) + 30;
    std::tm tm{};
    gmtime_r(&t, &tm);
    char date[64];
    std::strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    host_.script(envelope(429, "rate_limited", {{"Retry-After", date}}));
    auto s = make();
    auto r = start_and_wait(*s, request());
    EXPECT_EQ(r.outcome, run_start_result::kind::retry);
    EXPECT_GE(r.retry_after_ms, 27000);
    EXPECT_LE(r.retry_after_ms, 31000);
}

TEST_F(UpstreamRunStarterTest, ClientErrorsArePermanentWithoutBodyText) {
    host_.script(envelope(400, "validation_error"));
    auto s = make();
    auto r = start_and_wait(*s, request());
    EXPECT_EQ(r.outcome, run_start_result::kind::permanent);
    EXPECT_EQ(r.reason, "upstream answered 400 validation_error");
    EXPECT_THAT(r.reason, ::testing::Not(::testing::HasSubstr("private")));
}

TEST_F(UpstreamRunStarterTest, TransientStatusesRetry) {
    host_.script(envelope(408, "timeout"));
    host_.script(envelope(429, "rate_limited"));
    host_.script(envelope(500, "internal"));
    host_.script(envelope(409, "idempotency_in_flight"));
    host_.script(envelope(409, "idempotency_key_mismatch"));
    auto s = make();
    for (int i = 0; i < 4; ++i) {
        auto r = start_and_wait(*s, request());
        EXPECT_EQ(r.outcome, run_start_result::kind::retry) << i;
        EXPECT_EQ(r.retry_after_ms, 0) << i;
    }
    EXPECT_EQ(start_and_wait(*s, request()).outcome, run_start_result::kind::permanent);
}

TEST_F(UpstreamRunStarterTest, RedirectsAreNotFollowed) {
    host_.script({302, {{"Location", host_.base_url() + "/elsewhere"}}, ""});
    auto s = make();
    auto r = start_and_wait(*s, request());
    EXPECT_EQ(r.outcome, run_start_result::kind::permanent);
    EXPECT_THAT(r.reason, ::testing::HasSubstr("302"));
    EXPECT_EQ(host_.requests().size(), 1u);
}

TEST_F(UpstreamRunStarterTest, SlowResponseTimesOutAsRetry) {
    http_response slow{201, {}, R"({"runId":"late"})"};
    slow.delay = std::chrono::seconds(30);
    host_.script(slow);
    auto s = make(200);
    auto begin = std::chrono::steady_clock::now();
    auto r = start_and_wait(*s, request());
    EXPECT_EQ(r.outcome, run_start_result::kind::retry);
    EXPECT_EQ(r.reason, "upstream request timed out");
    EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(5));
}

TEST_F(UpstreamRunStarterTest, ConnectionRefusedRetries) {
    std::string dead_url;
    {
        testing::http_test_server gone([](const testing::http_request&) { return http_response{}; });
        dead_url = gone.base_url();
    }
    auto s = make_upstream_run_starter({dead_url, "", 2000});
    auto r = start_and_wait(*s, request());
    EXPECT_EQ(r.outcome, run_start_result::kind::retry);
    EXPECT_THAT(r.reason, ::testing::StartsWith("upstream unreachable"));
}

TEST_F(UpstreamRunStarterTest, ManyConcurrentStartsShareOneWorker) {
    auto s = make();
    std::mutex mu;
    std::condition_variable cv;
    int done = 0;
    for (int i = 0; i < 20; ++i) {
        s->start(request("dlv_" + std::to_string(i)), [&](run_start_result r) {
            std::lock_guard lock(mu);
            done += r.outcome == run_start_result::kind::started ? 1 : 0;
            cv.notify_all();
        });
    }
    std::unique_lock lock(mu);
    EXPECT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return done == 20; }));
    lock.unlock();
    s->stop();
    EXPECT_EQ(host_.runs_created(), 20);
    EXPECT_EQ(s->prepare(request()).outcome, run_start_result::kind::retry); // stopped
}

} // namespace
} // namespace wopbridge
