#include "contract/wire.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <set>

namespace wopbridge {
namespace {

namespace json = boost::json;

std::set<std::string> keys(const json::object& o) {
    std::set<std::string> out;
    for (const auto& kv : o) {
        out.insert(std::string(kv.key()));
    }
    return out;
}

class WireTest : public ::testing::Test {};

TEST_F(WireTest, RunEventIsTheClosedEnvelope) {
    run_event e;
    e.event_id = "evt_1";
    e.run_id = "run_1";
    e.type = "run.started";
    e.payload_json = R"({"workflowId":"w"})";
    e.timestamp = 1767225600123;
    e.sequence = 1;
    e.causation_id = "evt_0";
    auto o = wire::run_event(e);
    EXPECT_EQ(keys(o), (std::set<std::string>{"eventId", "runId", "type", "payload", "timestamp",
                                              "sequence", "causationId"}));
    EXPECT_EQ(o.at("timestamp").as_string(), "2026-01-01T00:00:00.123Z");
    EXPECT_EQ(o.at("payload").at("workflowId").as_string(), "w");
    e.causation_id.clear();
    EXPECT_FALSE(wire::run_event(e).contains("causationId"));
}

TEST_F(WireTest, SubscriptionNeverCarriesSecretsOrSettings) {
    subscription s;
    s.id = "sub_1";
    s.webhook_id = "wh_1";
    s.sealed_secret = "whsec_sealed";
    s.secret_fingerprint = std::string(64, 'a');
    s.connector_settings_json = R"({"token":"t"})";
    auto text = json::serialize(wire::subscription(s));
    EXPECT_EQ(text.find("whsec_"), std::string::npos);
    EXPECT_EQ(text.find("token"), std::string::npos);
    auto o = wire::subscription(s);
    EXPECT_EQ(keys(o), (std::set<std::string>{"subscriptionId", "source", "state", "dedupEnabled",
                                              "retryPolicy", "webhookId", "secretFingerprint"}));
    EXPECT_LE(o.at("secretFingerprint").as_string().size(), 32u);
    s.state = sub_state::dead_lettered;
    EXPECT_EQ(wire::subscription(s).at("state").as_string(), "dead-lettered");
}

TEST_F(WireTest, VerificationDeadLetterHasNoStateChange) {
    dead_letter d;
    d.subscription_id = "sub_1";
    d.attempt_event_id = "evt_1";
    d.attempt = {"sub_1", "dk", 1, attempt_outcome::dead_lettered, "run_x"};
    d.reason = dead_letter_reason::verification_failed;
    d.caused_state_change = state_change{};
    auto o = wire::dead_letter(d);
    EXPECT_FALSE(o.contains("stateChange"));
    EXPECT_FALSE(o.at("attempt").as_object().contains("runId"));
    EXPECT_EQ(o.at("reason").as_string(), "verification_failed");
}

TEST_F(WireTest, StateNamesRoundTrip) {
    for (auto s : {sub_state::active, sub_state::paused, sub_state::failed,
                   sub_state::dead_lettered}) {
        EXPECT_EQ(wire::parse_state(wire::name(s)), s);
    }
    EXPECT_EQ(wire::name(state_reason::retry_exhausted), "retry-exhausted");
    EXPECT_EQ(wire::name(dead_letter_reason::retries_exhausted), "retries_exhausted");
    EXPECT_TRUE(wire::is_terminal_run_event("run.dead_lettered"));
    EXPECT_FALSE(wire::is_terminal_run_event("run.started"));
}

} // namespace
} // namespace wopbridge
