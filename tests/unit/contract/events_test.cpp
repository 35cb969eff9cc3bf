#include "contract/events.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <set>

namespace wopbridge {
namespace {
namespace json = boost::json;

class EventsTest : public ::testing::Test {
protected:
    static json::object parse(const std::string& s) { return json::parse(s).as_object(); }
    static std::set<std::string> keys(const json::object& o) {
        std::set<std::string> out;
        for (auto& kv : o) {
            out.insert(std::string(kv.key()));
        }
        return out;
    }
};

TEST_F(EventsTest, StateChangedCarriesOnlyTheAllowListedFields) {
    auto o = parse(events::state_changed_payload({"sub_1", source_kind::email, sub_state::active,
                                                  sub_state::dead_lettered,
                                                  state_reason::retry_exhausted}));
    EXPECT_EQ(keys(o), (std::set<std::string>{"subscriptionId", "source", "fromState", "toState",
                                              "reason"}));
    EXPECT_EQ(o["source"], "email");
    EXPECT_EQ(o["fromState"], "active");
    EXPECT_EQ(o["toState"], "dead-lettered");
    EXPECT_EQ(o["reason"], "retry-exhausted");
}

TEST_F(EventsTest, StateChangedOmitsAnAbsentReason) {
    auto o = parse(events::state_changed_payload(
        {"sub_1", source_kind::webhook, sub_state::active, sub_state::failed, state_reason::none}));
    EXPECT_FALSE(o.contains("reason"));
}

TEST_F(EventsTest, DeliveryAttemptedHasRunIdOnlyWhenDelivered) {
    delivery_attempt a{"sub_1", "dk_x", 2, attempt_outcome::delivered, "run_1"};
    auto o = parse(events::delivery_attempted_payload(a));
    EXPECT_EQ(keys(o), (std::set<std::string>{"subscriptionId", "dedupKey", "attempt", "outcome", "runId"}));
    EXPECT_EQ(o["attempt"], 2);
    EXPECT_EQ(o["outcome"], "delivered");
    a.outcome = attempt_outcome::retrying;
    o = parse(events::delivery_attempted_payload(a));
    EXPECT_FALSE(o.contains("runId"));
    EXPECT_EQ(o["outcome"], "retrying");
}

TEST_F(EventsTest, RunStartedHasTheContractShape) {
    auto o = parse(events::run_started_payload({"wf", "acme", "sub_1", "dlv_1"}));
    EXPECT_EQ(keys(o), (std::set<std::string>{"workflowId", "inputs", "transport", "owner", "metadata"}));
    EXPECT_EQ(o["transport"], "rest");
    EXPECT_TRUE(o["inputs"].as_object().empty());
    EXPECT_EQ(o["owner"].as_object().at("tenant"), "acme");
    EXPECT_EQ(o["metadata"].as_object().at("deliveryId"), "dlv_1");
}

TEST_F(EventsTest, NoPayloadHasAForbiddenKey) {
    const std::set<std::string> forbidden = {"body", "headers", "payload", "secret", "credentials",
                                             "token", "apiKey"};
    std::vector<std::string> payloads = {
        events::state_changed_payload({"s", source_kind::form, sub_state::active, sub_state::paused,
                                       state_reason::operator_paused}),
        events::delivery_attempted_payload({"s", "k", 1, attempt_outcome::delivered, "r"}),
        events::run_started_payload({"w", "t", "s", "d"}),
        events::run_completed_payload("r", 0),
        events::run_failed_payload("r", "interrupted", 3),
    };
    for (const auto& p : payloads) {
        for (const auto& k : keys(parse(p))) {
            EXPECT_FALSE(forbidden.count(k)) << p;
        }
    }
}

TEST_F(EventsTest, TriggerEventMergesThePerSourceObject) {
    events::trigger_event_fields f{source_kind::webhook, "sub_1", "dlv_1", 1767225600000, "dk_1", true};
    auto out = events::trigger_event_json(f, R"({"webhook":{"method":"POST","body":{"a":1}}})");
    ASSERT_TRUE(out.has_value());
    auto o = parse(*out);
    EXPECT_EQ(o["source"], "webhook");
    EXPECT_EQ(o["deliveryId"], "dlv_1");
    EXPECT_EQ(o["receivedAt"], "2026-01-01T00:00:00.000Z");
    EXPECT_EQ(o["contentTrust"], "untrusted");
    EXPECT_EQ(o["verified"], true);
    EXPECT_EQ(o["webhook"].as_object().at("body").as_object().at("a"), 1);
}

TEST_F(EventsTest, TriggerEventRefusesContentThatIsNotOnePerSourceObject) {
    events::trigger_event_fields f;
    EXPECT_FALSE(events::trigger_event_json(f, "not json"));
    EXPECT_FALSE(events::trigger_event_json(f, "[]"));
    EXPECT_FALSE(events::trigger_event_json(f, R"({"webhook":{},"email":{}})"));
    EXPECT_FALSE(events::trigger_event_json(f, R"({"webhook":"x"})"));
}

} // namespace
} // namespace wopbridge
