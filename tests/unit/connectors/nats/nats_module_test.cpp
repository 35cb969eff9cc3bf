// Module-level tests: the built nats.so loaded through the connector harness, consuming a real,
// throwaway `nats-server -js`; messages are published and consumers inspected with the real C
// client (nats.c).

#include "support/connector_harness.hpp"
#include "support/listener_module_test.hpp"
#include "support/eventually.hpp"
#include "support/nats_server.hpp"
#include "support/schema_check.hpp"

#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace wopbridge::testing {
namespace {

using namespace std::chrono_literals;

class NatsModuleTest : public ::testing::Test {
  protected:
    void SetUp() override {
        WOPBRIDGE_REQUIRE_NATS();
        broker_ = std::make_unique<nats_server>(options());
        client_ = std::make_unique<nats_client>(broker_->client_url());
        ASSERT_TRUE(client_->ok()) << client_->error;
        ASSERT_TRUE(client_->add_stream("ORDERS", "orders.>")) << client_->error;
        harness_ = std::make_unique<connector_harness>("nats");
    }

    void TearDown() override {
        if (harness_) {
            EXPECT_TRUE(harness_->violations().empty());
        }
    }

    virtual nats_server_options options() const { return {}; }

    // Connector settings: test defaults, overridden/extended by `extra` (key -> JSON value).
    std::string config(const std::map<std::string, std::string>& extra = {}) const {
        return settings_json({{"url", "\"" + broker_->url() + "\""},
                              {"fetchWaitMs", "100"},
                              {"reconnectWaitMs", "100"},
                              {"retryDelayMs", "50"}},
                             extra);
    }

    // create + start + subscribe; then (unless told not to) waits until the module created the
    // durable consumer, so messages published afterwards are "new" for it.
    void bring_up(const std::map<std::string, std::string>& extra = {},
                  const std::string& sub_settings = R"({"stream":"ORDERS","durable":"d"})",
                  bool wait_for_consumer = true) {
        std::string error;
        ASSERT_EQ(harness_->bring_up(config(extra), queue_sub("sub-1", sub_settings), &error), WB_OK)
            << error;
        if (wait_for_consumer) {
            ASSERT_TRUE(eventually([&] { return state().has_value(); })) << "consumer never made";
        }
    }

    std::uint64_t publish(const std::string& data, const std::string& subject = "orders.created",
                          const std::vector<std::pair<std::string, std::string>>& headers = {}) {
        auto seq = client_->publish(subject, data, headers);
        EXPECT_TRUE(seq) << client_->error;
        return seq.value_or(0);
    }

    std::optional<consumer_state> state(const std::string& durable = "d") {
        return client_->consumer("ORDERS", durable);
    }
    // Delivered to a consumer and not acked.
    std::int64_t ack_pending(const std::string& durable = "d") {
        auto s = state(durable);
        return s ? s->num_ack_pending : -1;
    }
    // Everything delivered and acked.
    bool all_acked(const std::string& durable = "d") {
        auto s = state(durable);
        return s && s->num_ack_pending == 0 && s->num_pending == 0;
    }

    std::map<std::string, int> count(wb_submit_status outcome) const {
        return submits_by_event(*harness_, outcome);
    }

    bool submitted_with(const std::string& provider_id, wb_submit_status outcome) const {
        return count(outcome).count(provider_id) != 0;
    }

    bool logged(const std::string& text) const {
        return logged_line(*harness_, text);
    }

    static std::string id(std::uint64_t seq) { return "ORDERS:" + std::to_string(seq); }

    std::unique_ptr<nats_server> broker_;
    std::unique_ptr<nats_client> client_;
    std::unique_ptr<connector_harness> harness_;
};

TEST_F(NatsModuleTest, DescriptorIsAListenerOfSourceQueue) {
    expect_queue_listener_descriptor(*harness_, "nats", "alpha");
}

TEST_F(NatsModuleTest, RefusesBadSettingsWithAReason) {
    EXPECT_EQ(harness_->validate("{}").first, WB_ERR_INVALID);
    EXPECT_EQ(harness_->validate(config({{"maxDeliveries", "5"}})).first, WB_ERR_INVALID);
    EXPECT_EQ(harness_->validate(config()).first, WB_OK);
    // A url too short to hold a scheme is refused, not thrown on.
    auto short_url = harness_->validate(R"({"url":"x"})");
    EXPECT_EQ(short_url.first, WB_ERR_INVALID);
    EXPECT_NE(short_url.second.find("url"), std::string::npos) << short_url.second;
    // A TLS file that does not exist is refused at create, naming the setting, not the path.
    std::string error;
    EXPECT_EQ(harness_->create(config({{"tlsCa", "\"/nonexistent/ca-Secret.pem\""}}), &error),
              WB_ERR_INVALID);
    EXPECT_NE(error.find("tlsCa"), std::string::npos) << error;
    EXPECT_EQ(error.find("ca-Secret"), std::string::npos) << error;
}

TEST_F(NatsModuleTest, OneSubscriptionPerStreamAndDurable) {
    ASSERT_EQ(harness_->create(config()), WB_OK);
    ASSERT_EQ(harness_->start(), WB_OK);
    std::string error;
    EXPECT_EQ(harness_->subscribe(queue_sub("a", "{}"), &error), WB_ERR_INVALID);
    EXPECT_NE(error.find("stream"), std::string::npos);
    ASSERT_EQ(harness_->subscribe(queue_sub("a", R"({"stream":"ORDERS","durable":"d"})"), &error),
              WB_OK)
        << error;
    EXPECT_EQ(harness_->subscribe(queue_sub("b", R"({"stream":"ORDERS","durable":"d"})"), &error),
              WB_ERR_INVALID);
    EXPECT_NE(error.find("already consumed"), std::string::npos);
    EXPECT_EQ(harness_->subscribe(queue_sub("b", R"({"stream":"ORDERS","durable":"e"})"), &error),
              WB_OK)
        << error;
}

TEST_F(NatsModuleTest, EachMessageBecomesExactlyOneEventAndIsAcked) {
    bring_up({}, R"({"stream":"ORDERS","durable":"d","keyHeader":"Customer"})");
    std::vector<std::uint64_t> seqs;
    for (int i = 0; i < 3; ++i) {
        seqs.push_back(publish(R"({"total":)" + std::to_string(10 * i) + "}", "orders.created",
                               {{"Customer", "c-" + std::to_string(i)}}));
    }
    ASSERT_TRUE(harness_->wait_for_submits(3, 10s));
    ASSERT_TRUE(eventually([&] { return all_acked(); }));
    auto submits = harness_->submits();
    ASSERT_EQ(submits.size(), 3u);
    for (std::size_t i = 0; i < 3; ++i) {
        const auto& s = submits[i];
        EXPECT_EQ(s.subscription_id, "sub-1");
        EXPECT_EQ(s.provider_event_id, id(seqs[i]));
        EXPECT_EQ(s.outcome, WB_SUBMIT_ACCEPTED);
        EXPECT_FALSE(s.verified);
        auto doc = boost::json::parse(s.content_json);
        ASSERT_EQ(doc.as_object().size(), 1u);
        const auto& st = doc.at("stream").as_object();
        EXPECT_EQ(st.at("topic").as_string(), "orders.created");
        EXPECT_EQ(st.at("offset").as_string(), std::to_string(seqs[i]));
        EXPECT_EQ(st.at("key").as_string(), "c-" + std::to_string(i));
        EXPECT_EQ(st.at("message").at("total").as_int64(), 10 * static_cast<int>(i));
        EXPECT_TRUE(
            expect_valid(doc.at("stream"), "v2/trigger-event.schema.json#/$defs/StreamEvent"));
    }
    EXPECT_FALSE(harness_->wait_for_submits(4, 300ms));
}

TEST_F(NatsModuleTest, AcksOnlyAfterTheOutcome) {
    bring_up();
    harness_->pause_submit_completion();
    publish("1");
    ASSERT_TRUE(harness_->wait_for_submits(1, 10s));
    // Submitted but not committed: JetStream must still hold it unacked, and keep doing so.
    EXPECT_EQ(ack_pending(), 1);
    EXPECT_FALSE(eventually([&] { return ack_pending() != 1; }, 300ms));
    harness_->resume_submit_completion();
    EXPECT_TRUE(eventually([&] { return all_acked(); }));
    EXPECT_EQ(harness_->submits().size(), 1u);
}

TEST_F(NatsModuleTest, HeldAndDuplicateOutcomesAreAcked) {
    bring_up();
    harness_->set_submit_mode(submit_mode::hold);
    publish("1");
    ASSERT_TRUE(harness_->wait_for_submits(1, 10s));
    EXPECT_TRUE(eventually([&] { return all_acked(); }));
    EXPECT_EQ(harness_->submits()[0].outcome, WB_SUBMIT_HELD);
}

TEST_F(NatsModuleTest, ASlowCommitIsKeptInProgressAndNotRedelivered) {
    // ackWait 1 s; the commit takes 2.5 s: +WPI keeps the message ours, no redelivery.
    bring_up({}, R"({"stream":"ORDERS","durable":"d","ackWaitMs":1000})");
    harness_->pause_submit_completion();
    publish("1");
    ASSERT_TRUE(harness_->wait_for_submits(1, 10s));
    EXPECT_FALSE(eventually([&] { return ack_pending() != 1; }, 2500ms));
    auto s = state();
    ASSERT_TRUE(s);
    EXPECT_EQ(s->num_redelivered, 0);
    harness_->resume_submit_completion();
    EXPECT_TRUE(eventually([&] { return all_acked(); }));
    EXPECT_EQ(harness_->submits().size(), 1u);
}

TEST_F(NatsModuleTest, RefusedMessageGoesBackToJetStreamAndIsSubmittedAgain) {
    bring_up();
    harness_->set_submit_mode(submit_mode::refuse, "store_unavailable");
    const auto seq = publish("1");
    ASSERT_TRUE(harness_->wait_for_submits(1, 10s));
    EXPECT_EQ(harness_->submits()[0].outcome, WB_SUBMIT_REFUSED);
    EXPECT_FALSE(eventually([&] { return all_acked(); }, 300ms));

    harness_->set_submit_mode(submit_mode::accept);
    ASSERT_TRUE(eventually([&] { return submitted_with(id(seq), WB_SUBMIT_ACCEPTED); }));
    EXPECT_TRUE(eventually([&] { return all_acked(); }));
    EXPECT_EQ(count(WB_SUBMIT_ACCEPTED)[id(seq)], 1);
}

TEST_F(NatsModuleTest, RepeatedRefusalsBackOffAndResumeOnAcceptance) {
    bring_up();
    harness_->set_submit_mode(submit_mode::refuse, "subscription_not_active");
    const auto seq = publish("1");
    ASSERT_TRUE(harness_->wait_for_submits(1, 10s));
    // retryDelayMs is 50: without a backoff that is ~30 submits in 1.5 s; doubling gives ~5.
    EXPECT_FALSE(eventually([&] { return harness_->submits().size() >= 12; }, 1500ms))
        << harness_->submits().size() << " submits of one refused message";
    harness_->set_submit_mode(submit_mode::accept);
    ASSERT_TRUE(eventually([&] { return submitted_with(id(seq), WB_SUBMIT_ACCEPTED); }));
    EXPECT_TRUE(eventually([&] { return all_acked(); }));
    EXPECT_TRUE(logged("submit refused (subscription_not_active)"));
}

TEST_F(NatsModuleTest, MessageRefusedAsInvalidIsSubmittedAgainWithoutPayload) {
    bring_up();
    harness_->set_submit_mode(submit_mode::refuse, "invalid");
    // The first refusal is held back until the mode changed: the module answers it with its
    // payload-less submit at once, and that one, refused too, would end the message.
    harness_->pause_submit_completion();
    const auto seq = publish(R"({"n":1})");
    ASSERT_TRUE(harness_->wait_for_submits(1, 10s));
    harness_->set_submit_mode(submit_mode::accept);
    harness_->resume_submit_completion();
    ASSERT_TRUE(eventually([&] { return submitted_with(id(seq), WB_SUBMIT_ACCEPTED); }));
    EXPECT_TRUE(eventually([&] { return all_acked(); }));
    auto submits = harness_->submits();
    ASSERT_GE(submits.size(), 2u);
    EXPECT_FALSE(boost::json::parse(submits[0].content_json).at("stream").at("message").is_null());
    auto last = boost::json::parse(submits.back().content_json);
    EXPECT_TRUE(last.at("stream").at("message").is_null());
    EXPECT_EQ(last.at("stream").at("offset").as_string(), std::to_string(seq));
}

TEST_F(NatsModuleTest, MessageTheHostNeverTakesIsTerminatedNotRedelivered) {
    bring_up();
    harness_->set_submit_mode(submit_mode::refuse, "invalid");
    publish(R"({"n":1})");
    ASSERT_TRUE(harness_->wait_for_submits(2, 10s));
    ASSERT_TRUE(eventually([&] { return all_acked(); })) << "terminated counts as acknowledged";
    EXPECT_TRUE(logged("terminated"));
    EXPECT_FALSE(harness_->wait_for_submits(3, 500ms));
}

TEST_F(NatsModuleTest, OversizeMessageIsSubmittedWithoutPayloadAndAcked) {
    bring_up({{"maxMessageBytes", "16"}});
    const auto seq = publish(std::string(100, 'x'));
    ASSERT_TRUE(harness_->wait_for_submits(1, 10s));
    auto doc = boost::json::parse(harness_->submits()[0].content_json);
    EXPECT_TRUE(doc.at("stream").at("message").is_null());
    EXPECT_EQ(doc.at("stream").at("offset").as_string(), std::to_string(seq));
    EXPECT_TRUE(eventually([&] { return all_acked(); }));
}

TEST_F(NatsModuleTest, NoCapacityStopsFetching) {
    harness_->set_capacity(false);
    bring_up();
    publish("1");
    publish("2");
    EXPECT_FALSE(harness_->wait_for_submits(1, 500ms));
    auto s = state();
    ASSERT_TRUE(s);
    EXPECT_EQ(s->num_ack_pending, 0); // not even delivered to us
    EXPECT_EQ(s->num_pending, 2u);
    harness_->set_capacity(true);
    EXPECT_TRUE(harness_->wait_for_submits(2, 10s));
    EXPECT_TRUE(eventually([&] { return all_acked(); }));
}

TEST_F(NatsModuleTest, InFlightMessagesAreBoundedByMaxInFlight) {
    bring_up({{"maxInFlight", "2"}, {"batchSize", "10"}});
    harness_->pause_submit_completion();
    for (int i = 0; i < 5; ++i) {
        publish(std::to_string(i));
    }
    ASSERT_TRUE(harness_->wait_for_submits(2, 10s));
    EXPECT_FALSE(harness_->wait_for_submits(3, 500ms));
    EXPECT_EQ(ack_pending(), 2);
    harness_->resume_submit_completion();
    EXPECT_TRUE(harness_->wait_for_submits(5, 10s));
    EXPECT_TRUE(eventually([&] { return all_acked(); }));
    EXPECT_EQ(harness_->submits().size(), 5u);
}

TEST_F(NatsModuleTest, StopFinishesInFlightSubmitsAndAcks) {
    bring_up();
    harness_->pause_submit_completion();
    publish("1");
    ASSERT_TRUE(harness_->wait_for_submits(1, 10s));
    EXPECT_EQ(ack_pending(), 1);
    // stop() lets the host complete the outcome; the ack is flushed before stop returns.
    ASSERT_EQ(harness_->stop(), WB_OK);
    EXPECT_TRUE(all_acked());
}

TEST_F(NatsModuleTest, StartFromBeginningReadsExistingMessages) {
    const auto old = publish("old");
    bring_up({}, R"({"stream":"ORDERS","durable":"d","startFrom":"beginning"})");
    ASSERT_TRUE(harness_->wait_for_submits(1, 10s));
    EXPECT_EQ(harness_->submits()[0].provider_event_id, id(old));
}

TEST_F(NatsModuleTest, StartFromNewSkipsExistingMessages) {
    publish("old");
    bring_up();
    const auto fresh = publish("new");
    ASSERT_TRUE(harness_->wait_for_submits(1, 10s));
    EXPECT_FALSE(harness_->wait_for_submits(2, 300ms));
    EXPECT_EQ(harness_->submits()[0].provider_event_id, id(fresh));
}

TEST_F(NatsModuleTest, UnackedMessagesOfADeadConsumerAreRedeliveredAfterAckWait) {
    // Another member of the durable fetched two messages and died without acking them.
    bring_up({}, R"({"stream":"ORDERS","durable":"d","ackWaitMs":1000})");
    ASSERT_EQ(harness_->unsubscribe("sub-1"), WB_OK);
    const auto a = publish("a");
    const auto b = publish("b");
    ASSERT_TRUE(client_->fetch_and_forget("ORDERS", "d", 2)) << client_->error;
    EXPECT_EQ(ack_pending(), 2);
    ASSERT_EQ(harness_->subscribe(queue_sub("sub-1", R"({"stream":"ORDERS","durable":"d",)"
                                                    R"("ackWaitMs":1000})")),
              WB_OK);
    ASSERT_TRUE(harness_->wait_for_submits(2, 10s));
    EXPECT_TRUE(eventually([&] { return all_acked(); }));
    auto accepted = count(WB_SUBMIT_ACCEPTED);
    EXPECT_EQ(accepted[id(a)], 1);
    EXPECT_EQ(accepted[id(b)], 1);
}

TEST_F(NatsModuleTest, RedeliveryOfACommittedMessageIsAbsorbedByDedup) {
    // Committed in the host, but the ack never reached JetStream (the subscription went away
    // first): the redelivery is answered duplicate, acked, one run.
    bring_up({}, R"({"stream":"ORDERS","durable":"d","ackWaitMs":1000})");
    harness_->pause_submit_completion();
    const auto a = publish("a");
    ASSERT_TRUE(harness_->wait_for_submits(1, 10s));
    ASSERT_EQ(harness_->unsubscribe("sub-1"), WB_OK); // gone before the outcome arrived
    harness_->resume_submit_completion();
    EXPECT_EQ(ack_pending(), 1);
    ASSERT_EQ(harness_->subscribe(queue_sub("sub-1", R"({"stream":"ORDERS","durable":"d",)"
                                                    R"("ackWaitMs":1000})")),
              WB_OK);
    ASSERT_TRUE(eventually([&] { return submitted_with(id(a), WB_SUBMIT_DUPLICATE); }));
    EXPECT_TRUE(eventually([&] { return all_acked(); }));
    EXPECT_EQ(count(WB_SUBMIT_ACCEPTED)[id(a)], 1);
}

TEST_F(NatsModuleTest, SurvivesABrokerRestartWithoutLosingMessages) {
    bring_up();
    std::vector<std::uint64_t> seqs{publish("1")};
    ASSERT_TRUE(harness_->wait_for_submits(1, 10s));
    ASSERT_TRUE(eventually([&] { return all_acked(); }));

    // Restart while an outcome is outstanding: its ack must still happen afterwards.
    harness_->pause_submit_completion();
    seqs.push_back(publish("2"));
    ASSERT_TRUE(harness_->wait_for_submits(2, 10s));
    broker_->stop();
    ASSERT_TRUE(eventually([&] { return logged("connection lost"); })) << "no outage logged";
    harness_->resume_submit_completion();
    broker_->start();
    ASSERT_TRUE(eventually([&] { return logged("connection regained"); }));
    seqs.push_back(publish("3"));

    // And a crash.
    ASSERT_TRUE(eventually([&] { return count(WB_SUBMIT_ACCEPTED).size() == 3; }, 20s));
    broker_->kill();
    broker_->start();
    seqs.push_back(publish("4"));
    seqs.push_back(publish("5"));

    ASSERT_TRUE(eventually([&] { return count(WB_SUBMIT_ACCEPTED).size() == seqs.size(); }, 30s));
    EXPECT_TRUE(eventually([&] { return all_acked(); }, 30s));
    auto accepted = count(WB_SUBMIT_ACCEPTED);
    for (const auto seq : seqs) {
        EXPECT_EQ(accepted[id(seq)], 1) << seq; // repeats, if any, are duplicates
    }
}

// A durable deleted under the worker (an operator's `nats consumer rm`): pulls from it only time
// out, so the worker looks at the consumer every few idle seconds, finds it gone and binds again
// (also when its first look came before the deletion: on a loaded machine it can),
// creating it anew. Outcomes of the messages it held from the old subscription arrive afterwards:
// their acks go through the subscription they came from, which each held message keeps alive
// (under ASan, a use after free here is what this test catches). Later messages flow through the
// new durable.
TEST_F(NatsModuleTest, DeletedDurableIsBoundAgainAndHeldMessagesOutliveTheOldSubscription) {
    bring_up();
    harness_->pause_submit_completion();
    std::vector<std::uint64_t> seqs;
    for (int i = 0; i < 20; ++i) {
        seqs.push_back(publish(std::to_string(i)));
    }
    ASSERT_TRUE(harness_->wait_for_submits(20, 10s));
    ASSERT_TRUE(client_->delete_consumer("ORDERS", "d")) << client_->error;
    ASSERT_TRUE(eventually([&] { return logged("the durable consumer is gone; binding again"); },
                           30s));
    ASSERT_TRUE(eventually([&] { return state().has_value(); }, 10s)) << "not created again";
    harness_->resume_submit_completion();
    ASSERT_TRUE(eventually([&] { return count(WB_SUBMIT_ACCEPTED).size() == 20; }));
    seqs.push_back(publish("after"));
    ASSERT_TRUE(eventually([&] { return count(WB_SUBMIT_ACCEPTED).size() == 21; }, 10s));
    EXPECT_TRUE(eventually([&] { return all_acked(); }));
    auto accepted = count(WB_SUBMIT_ACCEPTED);
    for (const auto seq : seqs) {
        EXPECT_EQ(accepted[id(seq)], 1) << seq;
    }
}

TEST_F(NatsModuleTest, WaitsForABrokerThatIsNotUpYet) {
    broker_->stop();
    bring_up({}, R"({"stream":"ORDERS","durable":"d"})", false);
    ASSERT_TRUE(eventually([&] { return logged("no server reachable yet"); }));
    broker_->start();
    client_ = std::make_unique<nats_client>(broker_->client_url());
    ASSERT_TRUE(eventually([&] { return state().has_value(); }));
    publish("1");
    EXPECT_TRUE(harness_->wait_for_submits(1, 10s));
}

TEST_F(NatsModuleTest, TwoInstancesOnOneDurableShareTheMessages) {
    bring_up();
    connector_harness other("nats");
    ASSERT_EQ(other.bring_up(config(), queue_sub("sub-1", R"({"stream":"ORDERS","durable":"d"})")),
              WB_OK);
    std::vector<std::uint64_t> seqs;
    for (int i = 0; i < 40; ++i) {
        seqs.push_back(publish(std::to_string(i)));
    }
    ASSERT_TRUE(
        eventually([&] { return harness_->submits().size() + other.submits().size() >= 40; }));
    EXPECT_TRUE(eventually([&] { return all_acked(); }));
    std::map<std::string, int> seen;
    for (const auto& s : harness_->submits()) {
        ++seen[s.provider_event_id];
    }
    for (const auto& s : other.submits()) {
        ++seen[s.provider_event_id];
    }
    EXPECT_EQ(seen.size(), seqs.size());
    for (const auto seq : seqs) {
        EXPECT_EQ(seen[id(seq)], 1) << seq; // each message went to exactly one member
    }
}

TEST_F(NatsModuleTest, ExampleConfigIsAcceptedByTheModule) {
    const std::string path = std::string(WOPBRIDGE_SOURCE_DIR) + "/examples/nats/wopbridge.yaml";
    const auto settings = settings_from_config(path, "nats-orders");
    auto verdict = harness_->validate(settings);
    EXPECT_EQ(verdict.first, WB_OK) << verdict.second;
    ASSERT_EQ(harness_->create(settings), WB_OK);
    std::string error;
    const auto sub = settings_from_config(path, "orders", true);
    EXPECT_EQ(harness_->subscribe(queue_sub("orders", sub), &error), WB_OK) << error;
}

class NatsAuthTest : public NatsModuleTest {
  protected:
    nats_server_options options() const override {
        return {.user = "bridge", .password = "pw-Zebra-77", .token = {}, .defer_start = false};
    }
};

TEST_F(NatsAuthTest, AuthenticatesWithUserAndPassword) {
    bring_up({{"user", "\"bridge\""}, {"password", "\"pw-Zebra-77\""}});
    const auto seq = publish("1");
    ASSERT_TRUE(harness_->wait_for_submits(1, 10s));
    EXPECT_EQ(harness_->submits()[0].provider_event_id, id(seq));
}

TEST_F(NatsAuthTest, WrongPasswordIsLoggedWithoutTheSecret) {
    bring_up({{"user", "\"bridge\""}, {"password", "\"wrong-Secret-1\""}},
             R"({"stream":"ORDERS","durable":"d"})", false);
    ASSERT_TRUE(eventually([&] { return logged("no server reachable yet"); }));
    EXPECT_FALSE(harness_->wait_for_submits(1, 300ms));
    for (const auto& line : harness_->log_lines()) {
        EXPECT_EQ(line.find("wrong-Secret-1"), std::string::npos) << line;
        EXPECT_EQ(line.find("pw-Zebra-77"), std::string::npos) << line;
    }
}

class NatsTokenTest : public NatsModuleTest {
  protected:
    nats_server_options options() const override {
        return {.user = {}, .password = {}, .token = "tok-Quokka-5", .defer_start = false};
    }
};

TEST_F(NatsTokenTest, AuthenticatesWithAToken) {
    bring_up({{"token", "\"tok-Quokka-5\""}});
    const auto seq = publish("1");
    ASSERT_TRUE(harness_->wait_for_submits(1, 10s));
    EXPECT_EQ(harness_->submits()[0].provider_event_id, id(seq));
    for (const auto& line : harness_->log_lines()) {
        EXPECT_EQ(line.find("tok-Quokka-5"), std::string::npos) << line;
    }
}

} // namespace
} // namespace wopbridge::testing
