// Ingest rate limits in the HTTP API on the fake clock: per subscription (with an override) and per
// source address (refusals only), answered 429 + Retry-After with the error envelope before the
// bridge is asked to verify anything.
#include "http/api.hpp"
#include "http_fakes.hpp"

#include "support/fake_clock.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace wopbridge::http {
namespace {

namespace json = boost::json;
using testing::fake_bridge;
using testing::manual_scheduler;
using testing::recording_sink;

class HttpRateLimitTest : public ::testing::Test {
  protected:
    HttpRateLimitTest() {
        subscription s = bridge_.subs["sub_1"];
        s.id = "sub_2";
        bridge_.subs["sub_2"] = s;
        s.id = "sub_vip";
        bridge_.subs["sub_vip"] = s;
    }

    void make_api(rate_limit per_sub, rate_limit per_addr,
                  std::map<std::string, rate_limit> overrides = {}) {
        api_options opts;
        opts.clock = &clock_;
        opts.per_subscription = per_sub;
        opts.per_source_address = per_addr;
        opts.subscription_rate_limits = std::move(overrides);
        api_ = std::make_unique<http_api>(opts, bridge_, nullptr, sched_);
    }

    // Status of one ingest; 0 = admitted (handed to the bridge, which the fake leaves pending).
    int ingest(const std::string& sub, const std::string& from = "10.0.0.1") {
        bridge_.last_ingest.reset();
        last_ = std::make_shared<recording_sink>();
        api_->handle(http_request::make("POST", "/v1/ingest/" + sub,
                                        {{"content-type", "application/json"}}, "{}", from),
                     last_);
        sched_.drain();
        if (!last_->response) {
            EXPECT_TRUE(bridge_.last_ingest.has_value());
            return 0;
        }
        return last_->response->status;
    }

    // Answers the ingest the fake bridge holds.
    void answer(submit_status status) {
        ASSERT_TRUE(bridge_.pending_submit);
        submit_result r;
        r.status = status;
        if (status == submit_status::accepted) {
            r.run_id = "run_1";
            r.delivery_id = "dlv_1";
        }
        auto done = std::move(bridge_.pending_submit);
        bridge_.pending_submit = nullptr;
        done(r);
        ASSERT_TRUE(last_->response);
    }

    void expect_too_many(std::string_view which, int retry_after) {
        ASSERT_TRUE(last_->response);
        EXPECT_EQ(last_->response->status, 429);
        EXPECT_EQ(last_->response->header("retry-after").value_or(""), std::to_string(retry_after));
        auto v = json::parse(last_->response->body).as_object();
        EXPECT_EQ(v.at("error").as_string(), "rate_limited");
        EXPECT_TRUE(v.at("message").is_string());
        EXPECT_EQ(v.at("details").at("limit").as_string(), which);
        EXPECT_EQ(v.at("details").at("retryAfter").as_int64(), retry_after);
        for (const auto& kv : v) {
            EXPECT_TRUE(kv.key() == "error" || kv.key() == "message" || kv.key() == "details");
        }
    }

    wopbridge::testing::fake_clock clock_;
    fake_bridge bridge_;
    manual_scheduler sched_;
    std::unique_ptr<http_api> api_;
    std::shared_ptr<recording_sink> last_;
};

TEST_F(HttpRateLimitTest, PerSubscriptionBucketAnswers429WithRetryAfterAndRefills) {
    make_api(rate_limit{0.5, 2}, rate_limit{});
    EXPECT_EQ(ingest("sub_1"), 0);
    EXPECT_EQ(ingest("sub_1", "10.0.0.2"), 0);
    EXPECT_EQ(ingest("sub_1", "10.0.0.3"), 429); // another address does not help
    expect_too_many("perSubscription", 2);
    EXPECT_FALSE(bridge_.last_ingest.has_value());
    EXPECT_EQ(ingest("sub_2"), 0); // another subscription has its own bucket
    clock_.advance(2000);
    EXPECT_EQ(ingest("sub_1"), 0);
}

TEST_F(HttpRateLimitTest, ASubscriptionOverrideReplacesTheDefault) {
    make_api(rate_limit{1, 1}, rate_limit{}, {{"sub_vip", rate_limit{100, 5}}});
    for (int i = 0; i < 5; ++i) {
        EXPECT_EQ(ingest("sub_vip"), 0) << i;
    }
    EXPECT_EQ(ingest("sub_vip"), 429);
    expect_too_many("perSubscription", 1);
    EXPECT_EQ(ingest("sub_1"), 0);
    EXPECT_EQ(ingest("sub_1"), 429);

    api_->set_subscription_rate_limits({{"sub_1", rate_limit{100, 10}}}); // a config reload
    EXPECT_EQ(ingest("sub_1"), 0);
}

// The address budget counts refusals: what verified costs nothing, so a valid burst (a provider
// retrying a backlog, every provider behind one proxy) is never throttled.
TEST_F(HttpRateLimitTest, PerSourceAddressCountsRefusalsNotWhatVerified) {
    make_api(rate_limit{}, rate_limit{1, 3});
    for (int i = 0; i < 20; ++i) {
        ASSERT_EQ(ingest("sub_1"), 0);
        answer(submit_status::accepted);
        EXPECT_EQ(last_->response->status, 202);
    }
    ASSERT_EQ(ingest("sub_2"), 0);
    answer(submit_status::signature_invalid); // 1
    EXPECT_EQ(ingest("sub_nope"), 404);       // 2: probing unknown ids spends the same tokens
    ASSERT_EQ(ingest("sub_1"), 0);
    answer(submit_status::invalid);           // 3: a malformed post
    EXPECT_EQ(ingest("sub_1"), 429);
    expect_too_many("perSourceAddress", 1);
    EXPECT_EQ(ingest("sub_nope"), 429); // the bridge is not asked, the id not read
    // Counted as an ingest outcome (not attributed: the id is not read) and logged by the bridge.
    ASSERT_EQ(bridge_.rate_limited.size(), 2U);
    EXPECT_EQ(bridge_.rate_limited[0], "|perSourceAddress|10.0.0.1");
    EXPECT_EQ(ingest("sub_1", "10.0.0.9"), 0); // another address has its own budget
    answer(submit_status::accepted);
    clock_.advance(1000);
    EXPECT_EQ(ingest("sub_1"), 0);
}

TEST_F(HttpRateLimitTest, ThePerSubscriptionLimitIsCountedWithItsSubscription) {
    make_api(rate_limit{1, 1}, rate_limit{});
    EXPECT_EQ(ingest("sub_1"), 0);
    EXPECT_EQ(ingest("sub_1"), 429);
    ASSERT_EQ(bridge_.rate_limited.size(), 1U);
    EXPECT_EQ(bridge_.rate_limited[0], "sub_1|perSubscription|10.0.0.1");
}

// Behind a trusted proxy the forwarded client address is the one limited; from any other peer
// the header is the client's own text and changes nothing.
TEST_F(HttpRateLimitTest, TheBudgetIsTheForwardedClientsWhenThePeerIsATrustedProxy) {
    api_options opts;
    opts.clock = &clock_;
    opts.per_source_address = rate_limit{1, 1};
    opts.trusted_proxies = {*parse_address_block("127.0.0.1")};
    api_ = std::make_unique<http_api>(opts, bridge_, nullptr, sched_);
    auto via = [&](const std::string& peer, const std::string& xff) {
        last_ = std::make_shared<recording_sink>();
        api_->handle(http_request::make("POST", "/v1/ingest/sub_nope",
                                        {{"content-type", "application/json"},
                                         {"x-forwarded-for", xff}},
                                        "{}", peer),
                     last_);
        sched_.drain();
        return last_->response ? last_->response->status : 0;
    };
    EXPECT_EQ(via("127.0.0.1", "198.51.100.7"), 404);
    EXPECT_EQ(via("127.0.0.1", "198.51.100.7"), 429);
    EXPECT_EQ(via("127.0.0.1", "198.51.100.8"), 404); // another client behind the same proxy
    EXPECT_EQ(via("10.0.0.5", "198.51.100.9"), 404);  // not a trusted peer: its own address
    EXPECT_EQ(via("10.0.0.5", "198.51.100.10"), 429); // ... whatever it claims
}

TEST_F(HttpRateLimitTest, ManagementRoutesAreNotRateLimited) {
    make_api(rate_limit{0.01, 1}, rate_limit{0.01, 1});
    for (int i = 0; i < 20; ++i) {
        auto sink = std::make_shared<recording_sink>();
        api_->handle(http_request::make("GET", "/healthz", {}, "", "10.0.0.1"), sink);
        sched_.drain();
        ASSERT_TRUE(sink->response);
        EXPECT_EQ(sink->response->status, 200);
    }
    EXPECT_EQ(ingest("sub_1"), 0);
    EXPECT_EQ(ingest("sub_1"), 429);
}

} // namespace
} // namespace wopbridge::http
