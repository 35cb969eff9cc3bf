// The conformance test seams (CONTRACT.md §g) over HTTP: every scenario, the `refused` value, and
// the seams' absence without the switch.
#include "http_server_fixture.hpp"

#include <gtest/gtest.h>

namespace wopbridge::http_server_testing::http_server_seams_test {
namespace {

TEST_F(HttpServerTest, ConformanceSeamsWork) {
    auto probe = call("GET", "/v1/host/sample/test/runs/__probe__/events");
    ASSERT_EQ(probe.status, 200);
    EXPECT_EQ(json::parse(probe.body), json::parse(R"({"events":[]})"));
    expect_envelope(
        call("POST", "/v1/host/sample/trigger-bridge/deliver", R"({"scenario":"nope"})"), 400,
        "validation_error");

    auto deliver =
        call("POST", "/v1/host/sample/trigger-bridge/deliver", R"({"scenario":"deliver"})");
    ASSERT_EQ(deliver.status, 200) << deliver.body;
    std::string run_id(json::parse(deliver.body).at("runId").as_string());
    auto events = json::parse(call("GET", "/v1/host/sample/test/runs/" + run_id + "/events").body);
    std::string attempted;
    std::string causation;
    for (const auto& e : events.at("events").as_array()) {
        if (e.at("type") == "trigger.delivery.attempted") {
            attempted = std::string(e.at("eventId").as_string());
        }
        if (e.at("type") == "run.started") {
            causation = std::string(e.at("causationId").as_string());
        }
    }
    EXPECT_FALSE(attempted.empty());
    EXPECT_EQ(causation, attempted);

    auto dedup = call("POST", "/v1/host/sample/trigger-bridge/deliver",
                      R"({"scenario":"dedup","dedupKey":"conf-key-7"})");
    ASSERT_EQ(dedup.status, 200) << dedup.body;
    std::string dedup_sub(json::parse(dedup.body).at("subscriptionId").as_string());
    std::string dedup_run(json::parse(dedup.body).at("runId").as_string());
    auto attempts = json::parse(call("GET", "/v1/host/sample/test/runs/" + dedup_run +
                                                "/events?type=trigger.delivery.attempted")
                                    .body);
    ASSERT_FALSE(attempts.at("events").as_array().empty());
    for (const auto& e : attempts.at("events").as_array()) {
        EXPECT_EQ(e.at("payload").at("dedupKey").as_string(), "conf-key-7");
    }

    auto exhaust =
        call("POST", "/v1/host/sample/trigger-bridge/deliver", R"({"scenario":"exhaust"})");
    ASSERT_EQ(exhaust.status, 200) << exhaust.body;
    std::string carrier(json::parse(exhaust.body).at("runId").as_string());
    auto log = json::parse(call("GET", "/v1/host/sample/test/runs/" + carrier + "/events").body);
    bool dead_lettered = false;
    bool state_changed = false;
    for (const auto& e : log.at("events").as_array()) {
        if (e.at("type") == "trigger.delivery.attempted" &&
            e.at("payload").at("outcome") == "dead-lettered") {
            dead_lettered = true;
        }
        if (e.at("type") == "trigger.subscription.state.changed") {
            EXPECT_TRUE(testing::expect_valid_payload(
                e.at("payload"),
                "run-event-payloads.schema.json#/$defs/triggerSubscriptionStateChanged"));
            state_changed = e.at("payload").at("toState") == "dead-lettered";
        }
    }
    EXPECT_TRUE(dead_lettered) << json::serialize(log);
    EXPECT_TRUE(state_changed) << json::serialize(log);
    auto reset = call("POST", "/v1/host/sample/test/reset", "{}");
    EXPECT_GE(reset.status, 200);
    EXPECT_LT(reset.status, 300);
}

// CONTRACT.md (g) `refused`: a forged post through the real intake is a run-less dead-lettered
// attempt, no state change, the subscription stays active, and a following deliver on it runs.
TEST_F(HttpServerTest, RefusedSeamRecordsTheRefusalAndLeavesTheSubscriptionDeliverable) {
    auto refused =
        call("POST", "/v1/host/sample/trigger-bridge/deliver", R"({"scenario":"refused"})");
    ASSERT_EQ(refused.status, 200) << refused.body;
    auto answer = json::parse(refused.body).as_object();
    EXPECT_EQ(answer.at("outcome"), "dead-lettered");
    EXPECT_EQ(answer.at("subscriptionState"), "active");
    const std::string sub_id(answer.at("subscriptionId").as_string());
    const std::string carrier(answer.at("runId").as_string());
    auto log = json::parse(call("GET", "/v1/host/sample/test/runs/" + carrier + "/events").body);
    int refusals = 0;
    for (const auto& e : log.at("events").as_array()) {
        EXPECT_NE(e.at("type"), "trigger.subscription.state.changed") << json::serialize(log);
        EXPECT_NE(e.at("type"), "run.started") << json::serialize(log);
        if (e.at("type") == "trigger.delivery.attempted") {
            EXPECT_EQ(e.at("payload").at("outcome"), "dead-lettered");
            EXPECT_FALSE(e.at("payload").as_object().contains("runId")) << json::serialize(e);
            EXPECT_TRUE(testing::expect_valid_payload(
                e.at("payload"), "run-event-payloads.schema.json#/$defs/triggerDeliveryAttempted"));
            ++refusals;
        }
    }
    EXPECT_EQ(refusals, 1) << json::serialize(log);
    auto read = call("GET", "/v1/trigger-subscriptions/" + sub_id);
    ASSERT_EQ(read.status, 200) << read.body;
    EXPECT_EQ(json::parse(read.body).at("subscription").at("state"), "active");

    auto deliver = call("POST", "/v1/host/sample/trigger-bridge/deliver",
                        R"({"scenario":"deliver","subscriptionId":")" + sub_id + R"("})");
    ASSERT_EQ(deliver.status, 200) << deliver.body;
    auto delivered = json::parse(deliver.body).as_object();
    EXPECT_EQ(delivered.at("subscriptionId").as_string(), sub_id);
    const std::string run_id(delivered.at("runId").as_string());
    auto run_log = json::parse(call("GET", "/v1/host/sample/test/runs/" + run_id + "/events").body);
    bool started = false;
    for (const auto& e : run_log.at("events").as_array()) {
        started = started || e.at("type") == "run.started";
    }
    EXPECT_TRUE(started) << json::serialize(run_log);
    expect_envelope(call("POST", "/v1/host/sample/trigger-bridge/deliver",
                         R"({"scenario":"exhaust","subscriptionId":")" + sub_id + R"("})"),
                    400, "validation_error");
}

TEST_F(HttpServerTest, SeamsAnswerNotFoundWhenDisabled) {
    stop_all();
    settings_.test_seams = false;
    open_bridge();
    start_server();
    expect_envelope(
        call("POST", "/v1/host/sample/trigger-bridge/deliver", R"({"scenario":"deliver"})"), 404,
        "not_found");
    expect_envelope(call("GET", "/v1/host/sample/test/runs/__probe__/events"), 404, "not_found");
}

} // namespace
} // namespace wopbridge::http_server_testing::http_server_seams_test
