// Module-level tests: the built queue.so loaded through the connector harness, consuming a real,
// throwaway redis-server; messages are produced with the real redis-cli.

#include "support/connector_harness.hpp"
#include "support/listener_module_test.hpp"
#include "support/eventually.hpp"
#include "support/redis_server.hpp"
#include "support/schema_check.hpp"

#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace wopbridge::testing {
namespace {

using namespace std::chrono_literals;

class QueueModuleTest : public ::testing::Test {
  protected:
    void SetUp() override {
        WOPBRIDGE_REQUIRE_REDIS();
        redis_ = std::make_unique<redis_server>();
        harness_ = std::make_unique<connector_harness>("queue");
    }

    void TearDown() override {
        if (harness_) {
            EXPECT_TRUE(harness_->violations().empty());
        }
    }

    // Connector settings: test defaults, overridden/extended by `extra` (key -> JSON value).
    std::string config(const std::map<std::string, std::string>& extra = {}) const {
        return settings_json({{"url", "\"" + redis_->url() + "\""},
                              {"consumer", "\"c1\""},
                              {"blockMs", "100"},
                              {"claimIdleMs", "0"},
                              {"retryDelayMs", "50"}},
                             extra);
    }

    // create + start + subscribe; then (unless told not to) waits until the module created the
    // group, so messages produced afterwards are "new" for it.
    void bring_up(const std::map<std::string, std::string>& extra = {},
                  const std::string& sub_settings = R"({"stream":"orders","group":"g"})",
                  bool wait_for_group = true) {
        subscription_spec sub;
        sub.source = "queue";
        sub.settings_json = sub_settings;
        std::string error;
        ASSERT_EQ(harness_->bring_up(config(extra), sub, &error), WB_OK) << error;
        if (wait_for_group) {
            ASSERT_TRUE(eventually([&] { return pending() >= 0; })) << "group never created";
        }
    }

    // XADD through the real CLI; returns the new id.
    std::string xadd(const std::vector<std::string>& fields, const std::string& stream = "orders") {
        std::vector<std::string> args{"XADD", stream, "*"};
        args.insert(args.end(), fields.begin(), fields.end());
        auto r = redis_->cli(args);
        EXPECT_EQ(r.exit_code, 0);
        EXPECT_NE(r.out.find('-'), std::string::npos) << r.out;
        return r.out;
    }

    // Number of entries in the group's pending list (XPENDING summary, first line).
    int pending(const std::string& stream = "orders", const std::string& group = "g") {
        auto r = redis_->cli({"XPENDING", stream, group});
        if (r.exit_code != 0 || r.out.empty() || r.out[0] < '0' || r.out[0] > '9') {
            return -1; // e.g. NOGROUP: the group does not exist (yet)
        }
        return std::stoi(r.out.substr(0, r.out.find('\n')));
    }

    // Submits per provider event id, by outcome.
    std::map<std::string, int> count(wb_submit_status outcome) const {
        return submits_by_event(*harness_, outcome);
    }

    bool submitted_with(const std::string& provider_id, wb_submit_status outcome) const {
        return count(outcome).count(provider_id) != 0;
    }

    std::unique_ptr<redis_server> redis_;
    std::unique_ptr<connector_harness> harness_;
};

TEST_F(QueueModuleTest, DescriptorIsAListenerOfSourceQueue) {
    expect_queue_listener_descriptor(*harness_, nullptr, "alpha");
}

TEST_F(QueueModuleTest, RefusesBadSettingsWithAReason) {
    EXPECT_EQ(harness_->validate("{}").first, WB_ERR_INVALID);
    auto tls = harness_->validate(R"({"url":"rediss://u:hunter22@h:1"})");
    EXPECT_EQ(tls.first, WB_ERR_INVALID);
    EXPECT_NE(tls.second.find("rediss"), std::string::npos);
    EXPECT_EQ(tls.second.find("hunter22"), std::string::npos);
    EXPECT_EQ(harness_->validate(config({{"maxDeliveries", "5"}})).first, WB_ERR_INVALID);
    EXPECT_EQ(harness_->validate(config()).first, WB_OK);

    ASSERT_EQ(harness_->create(config()), WB_OK);
    ASSERT_EQ(harness_->start(), WB_OK);
    std::string error;
    EXPECT_EQ(harness_->subscribe(queue_sub("a", "{}"), &error), WB_ERR_INVALID);
    EXPECT_NE(error.find("stream"), std::string::npos);
    ASSERT_EQ(harness_->subscribe(queue_sub("a", R"({"stream":"s","group":"g"})"), &error), WB_OK)
        << error;
    // One subscription per stream + group.
    EXPECT_EQ(harness_->subscribe(queue_sub("b", R"({"stream":"s","group":"g"})"), &error),
              WB_ERR_INVALID);
    EXPECT_NE(error.find("already consumed"), std::string::npos);
    EXPECT_EQ(harness_->subscribe(queue_sub("b", R"({"stream":"s","group":"h"})"), &error), WB_OK)
        << error;
}

TEST_F(QueueModuleTest, EachMessageBecomesExactlyOneEventAndIsAcked) {
    bring_up({}, R"({"stream":"orders","group":"g","keyField":"customer"})");
    std::vector<std::string> ids;
    for (int i = 0; i < 3; ++i) {
        ids.push_back(
            xadd({"customer", "c-" + std::to_string(i), "total", std::to_string(10 * i)}));
    }
    ASSERT_TRUE(harness_->wait_for_submits(3, 10s));
    ASSERT_TRUE(eventually([&] { return pending() == 0; }));

    auto submits = harness_->submits();
    ASSERT_EQ(submits.size(), 3u);
    for (std::size_t i = 0; i < 3; ++i) {
        const auto& s = submits[i];
        EXPECT_EQ(s.subscription_id, "sub-1");
        EXPECT_EQ(s.provider_event_id, "orders:" + ids[i]);
        EXPECT_EQ(s.outcome, WB_SUBMIT_ACCEPTED);
        auto doc = boost::json::parse(s.content_json);
        ASSERT_EQ(doc.as_object().size(), 1u);
        const auto& st = doc.at("stream").as_object();
        EXPECT_EQ(st.at("topic").as_string(), "orders");
        EXPECT_EQ(st.at("offset").as_string(), ids[i]);
        EXPECT_EQ(st.at("key").as_string(), "c-" + std::to_string(i));
        EXPECT_EQ(st.at("message").at("total").as_string(), std::to_string(10 * i));
        EXPECT_EQ(st.at("message").at("customer").as_string(), "c-" + std::to_string(i));
        EXPECT_TRUE(
            expect_valid(doc.at("stream"), "v2/trigger-event.schema.json#/$defs/StreamEvent"));
    }
    // Nothing is submitted twice once acked.
    EXPECT_FALSE(harness_->wait_for_submits(4, 300ms));
}

TEST_F(QueueModuleTest, AcksOnlyAfterTheOutcome) {
    bring_up();
    harness_->pause_submit_completion();
    xadd({"n", "1"});
    ASSERT_TRUE(harness_->wait_for_submits(1, 10s));
    // Submitted but not committed: the message must still be pending, and stay so.
    EXPECT_EQ(pending(), 1);
    EXPECT_FALSE(eventually([&] { return pending() != 1; }, 300ms));
    harness_->resume_submit_completion();
    EXPECT_TRUE(eventually([&] { return pending() == 0; }));
    EXPECT_EQ(harness_->submits().size(), 1u);
}

TEST_F(QueueModuleTest, HeldAndDuplicateOutcomesAreAcked) {
    bring_up();
    harness_->set_submit_mode(submit_mode::hold);
    xadd({"n", "1"});
    ASSERT_TRUE(harness_->wait_for_submits(1, 10s));
    EXPECT_TRUE(eventually([&] { return pending() == 0; }));
    EXPECT_EQ(harness_->submits()[0].outcome, WB_SUBMIT_HELD);
}

TEST_F(QueueModuleTest, RefusedMessageStaysPendingAndIsSubmittedAgain) {
    bring_up();
    harness_->set_submit_mode(submit_mode::refuse, "store_unavailable");
    const std::string id = xadd({"n", "1"});
    ASSERT_TRUE(harness_->wait_for_submits(1, 10s));
    EXPECT_EQ(harness_->submits()[0].outcome, WB_SUBMIT_REFUSED);
    EXPECT_FALSE(eventually([&] { return pending() != 1; }, 300ms));

    harness_->set_submit_mode(submit_mode::accept);
    ASSERT_TRUE(eventually([&] { return submitted_with("orders:" + id, WB_SUBMIT_ACCEPTED); }));
    EXPECT_TRUE(eventually([&] { return pending() == 0; }));
    EXPECT_EQ(count(WB_SUBMIT_ACCEPTED)["orders:" + id], 1);
}

TEST_F(QueueModuleTest, RepeatedRefusalsBackOffTheReReadsAndResumeOnAcceptance) {
    // A dead-lettered (or failed) subscription refuses every submit: the consumer must not
    // re-submit its pending messages every retryDelayMs forever, one log line each.
    bring_up();
    harness_->set_submit_mode(submit_mode::refuse, "subscription_not_active");
    const std::string id = xadd({"n", "1"});
    ASSERT_TRUE(harness_->wait_for_submits(1, 10s));
    // retryDelayMs is 50: without a backoff that is ~30 submits in 1.5 s; doubling gives ~5.
    EXPECT_FALSE(eventually([&] { return harness_->submits().size() >= 12; }, 1500ms))
        << harness_->submits().size() << " submits of one refused message";
    EXPECT_EQ(pending(), 1);

    harness_->set_submit_mode(submit_mode::accept);
    ASSERT_TRUE(eventually([&] { return submitted_with("orders:" + id, WB_SUBMIT_ACCEPTED); }));
    EXPECT_TRUE(eventually([&] { return pending() == 0; }));
    // Accepted resets the backoff: the next refusal is re-read after retryDelayMs again.
    harness_->set_submit_mode(submit_mode::refuse, "overloaded");
    const auto before = harness_->submits().size();
    xadd({"n", "2"});
    EXPECT_TRUE(harness_->wait_for_submits(before + 2, 1200ms));
}

TEST_F(QueueModuleTest, MessageRefusedAsInvalidIsSubmittedAgainWithoutPayload) {
    bring_up();
    harness_->set_submit_mode(submit_mode::refuse, "invalid");
    const std::string id = xadd({"n", "1"});
    ASSERT_TRUE(harness_->wait_for_submits(2, 10s));
    harness_->set_submit_mode(submit_mode::accept);
    ASSERT_TRUE(eventually([&] { return submitted_with("orders:" + id, WB_SUBMIT_ACCEPTED); }));
    EXPECT_TRUE(eventually([&] { return pending() == 0; }));
    auto submits = harness_->submits();
    EXPECT_FALSE(boost::json::parse(submits[0].content_json).at("stream").at("message").is_null());
    for (std::size_t i = 1; i < submits.size(); ++i) {
        auto doc = boost::json::parse(submits[i].content_json);
        EXPECT_TRUE(doc.at("stream").at("message").is_null());
        EXPECT_EQ(doc.at("stream").at("offset").as_string(), id);
    }
}

TEST_F(QueueModuleTest, ClaimsTheDeadConsumersPendingEntries) {
    ASSERT_EQ(redis_->cli({"XGROUP", "CREATE", "orders", "g", "$", "MKSTREAM"}).out, "OK");
    const std::string a = xadd({"n", "1"});
    const std::string b = xadd({"n", "2"});
    // A consumer reads both and dies before acking.
    auto read =
        redis_->cli({"XREADGROUP", "GROUP", "g", "dead", "COUNT", "10", "STREAMS", "orders", ">"});
    ASSERT_NE(read.out.find(b), std::string::npos);
    ASSERT_EQ(pending(), 2);

    bring_up({{"claimIdleMs", "200"}});
    ASSERT_TRUE(harness_->wait_for_submits(2, 10s));
    EXPECT_TRUE(eventually([&] { return pending() == 0; }));
    auto accepted = count(WB_SUBMIT_ACCEPTED);
    EXPECT_EQ(accepted["orders:" + a], 1);
    EXPECT_EQ(accepted["orders:" + b], 1);
    const auto lines = harness_->log_lines();
    EXPECT_TRUE(std::any_of(lines.begin(), lines.end(), [](const std::string& l) {
        return l.find("claimed") != std::string::npos;
    }));
}

TEST_F(QueueModuleTest, ClaimOfAnAlreadyCommittedMessageIsAbsorbedByDedup) {
    // A consumer submits, the host commits, and the consumer dies before its XACK. Whoever claims
    // the entry submits it again: the host answers duplicate, the entry is acked, one run.
    bring_up({{"claimIdleMs", "200"}});
    harness_->pause_submit_completion();
    const std::string a = xadd({"n", "1"});
    ASSERT_TRUE(harness_->wait_for_submits(1, 10s));
    EXPECT_EQ(harness_->submits()[0].outcome, WB_SUBMIT_ACCEPTED); // committed in the host
    ASSERT_EQ(harness_->unsubscribe("sub-1"), WB_OK); // gone before the outcome arrived
    harness_->resume_submit_completion();
    EXPECT_EQ(pending(), 1);
    // Hand the entry to a consumer that no longer exists.
    ASSERT_NE(redis_->cli({"XCLAIM", "orders", "g", "dead", "0", a}).out.find(a),
              std::string::npos);

    ASSERT_EQ(harness_->subscribe(queue_sub("sub-1", R"({"stream":"orders","group":"g"})")), WB_OK);
    ASSERT_TRUE(eventually([&] { return submitted_with("orders:" + a, WB_SUBMIT_DUPLICATE); }));
    EXPECT_TRUE(eventually([&] { return pending() == 0; }));
    EXPECT_EQ(count(WB_SUBMIT_ACCEPTED)["orders:" + a], 1);
}

TEST_F(QueueModuleTest, SurvivesARedisRestartWithoutLosingMessages) {
    bring_up();
    std::vector<std::string> ids{xadd({"n", "1"})};
    ASSERT_TRUE(harness_->wait_for_submits(1, 10s));
    ASSERT_TRUE(eventually([&] { return pending() == 0; }));

    // Restart while an outcome is outstanding: its ack must still happen afterwards.
    harness_->pause_submit_completion();
    ids.push_back(xadd({"n", "2"}));
    ASSERT_TRUE(harness_->wait_for_submits(2, 10s));
    redis_->restart();
    EXPECT_EQ(pending(), 1);
    harness_->resume_submit_completion();
    ids.push_back(xadd({"n", "3"}));

    // And a crash.
    ASSERT_TRUE(eventually([&] { return count(WB_SUBMIT_ACCEPTED).size() == 3; }));
    redis_->kill();
    redis_->start();
    ids.push_back(xadd({"n", "4"}));
    ids.push_back(xadd({"n", "5"}));

    ASSERT_TRUE(eventually([&] { return count(WB_SUBMIT_ACCEPTED).size() == ids.size(); }, 20s));
    EXPECT_TRUE(eventually([&] { return pending() == 0; }));
    auto accepted = count(WB_SUBMIT_ACCEPTED);
    for (const auto& id : ids) {
        EXPECT_EQ(accepted["orders:" + id], 1) << id; // repeats, if any, are duplicates
    }
    for (const auto& s : harness_->submits()) {
        EXPECT_NE(s.outcome, WB_SUBMIT_REFUSED);
    }
}

// The group vanishes (XGROUP DESTROY here; a Redis restart without persistence does the same) and
// entries are added before the worker has reconnected: the group is created again after the last
// entry the worker read, not at "$" (which would skip those entries for good).
TEST_F(QueueModuleTest, AGroupThatVanishedIsCreatedAgainAfterTheLastEntryRead) {
    bring_up();
    std::vector<std::string> ids{xadd({"n", "1"}), xadd({"n", "2"})};
    ASSERT_TRUE(eventually([&] { return count(WB_SUBMIT_ACCEPTED).size() == 2; }));
    ASSERT_TRUE(eventually([&] { return pending() == 0; }));

    // One redis-cli process: the entries are in the stream before the worker can reconnect.
    auto r = redis_->cli_script("XGROUP DESTROY orders g\nXADD orders * n 3\nXADD orders * n 4\n");
    ASSERT_EQ(r.exit_code, 0) << r.out;
    std::vector<std::string> lines;
    for (std::size_t at = 0; at <= r.out.size();) {
        const auto nl = std::min(r.out.find('\n', at), r.out.size());
        lines.push_back(r.out.substr(at, nl - at));
        at = nl + 1;
    }
    ASSERT_EQ(lines.size(), 3u) << r.out;
    ids.push_back(lines[1]);
    ids.push_back(lines[2]);

    ASSERT_TRUE(eventually([&] { return count(WB_SUBMIT_ACCEPTED).size() == 4; }, 20s))
        << "entries added while the group was gone were skipped";
    EXPECT_TRUE(eventually([&] { return pending() == 0; }));
    auto accepted = count(WB_SUBMIT_ACCEPTED);
    for (const auto& id : ids) {
        EXPECT_EQ(accepted["orders:" + id], 1) << id;
    }
}

TEST_F(QueueModuleTest, NoCapacityStopsReading) {
    harness_->set_capacity(false);
    bring_up();
    xadd({"n", "1"});
    xadd({"n", "2"});
    EXPECT_FALSE(harness_->wait_for_submits(1, 500ms));
    EXPECT_EQ(pending(), 0); // not even delivered to the consumer
    harness_->set_capacity(true);
    EXPECT_TRUE(harness_->wait_for_submits(2, 10s));
    EXPECT_TRUE(eventually([&] { return pending() == 0; }));
}

TEST_F(QueueModuleTest, InFlightMessagesAreBoundedByMaxInFlight) {
    bring_up({{"maxInFlight", "2"}, {"batchSize", "10"}});
    harness_->pause_submit_completion();
    for (int i = 0; i < 5; ++i) {
        xadd({"n", std::to_string(i)});
    }
    ASSERT_TRUE(harness_->wait_for_submits(2, 10s));
    EXPECT_FALSE(harness_->wait_for_submits(3, 500ms));
    EXPECT_EQ(pending(), 2);
    harness_->resume_submit_completion();
    EXPECT_TRUE(harness_->wait_for_submits(5, 10s));
    EXPECT_TRUE(eventually([&] { return pending() == 0; }));
    EXPECT_EQ(harness_->submits().size(), 5u);
}

TEST_F(QueueModuleTest, StopFinishesInFlightSubmitsAndAcks) {
    bring_up();
    harness_->pause_submit_completion();
    xadd({"n", "1"});
    ASSERT_TRUE(harness_->wait_for_submits(1, 10s));
    EXPECT_EQ(pending(), 1);
    // stop() lets the host complete the outcome; the ack must be done before stop returns.
    ASSERT_EQ(harness_->stop(), WB_OK);
    EXPECT_EQ(pending(), 0);
}

TEST_F(QueueModuleTest, StartFromBeginningReadsExistingMessages) {
    const std::string old = xadd({"n", "old"});
    bring_up({}, R"({"stream":"orders","group":"g","startFrom":"beginning"})");
    ASSERT_TRUE(harness_->wait_for_submits(1, 10s));
    EXPECT_EQ(harness_->submits()[0].provider_event_id, "orders:" + old);
}

TEST_F(QueueModuleTest, StartFromNewSkipsExistingMessages) {
    xadd({"n", "old"});
    bring_up();
    // Wait until the group exists (created by the module), then produce.
    ASSERT_TRUE(eventually([&] { return pending() == 0; }));
    const std::string fresh = xadd({"n", "new"});
    ASSERT_TRUE(harness_->wait_for_submits(1, 10s));
    EXPECT_FALSE(harness_->wait_for_submits(2, 300ms));
    EXPECT_EQ(harness_->submits()[0].provider_event_id, "orders:" + fresh);
}

TEST_F(QueueModuleTest, OversizeMessageIsSubmittedWithoutPayloadAndAcked) {
    bring_up({{"maxMessageBytes", "16"}});
    const std::string id = xadd({"blob", std::string(100, 'x')});
    ASSERT_TRUE(harness_->wait_for_submits(1, 10s));
    auto doc = boost::json::parse(harness_->submits()[0].content_json);
    EXPECT_TRUE(doc.at("stream").at("message").is_null());
    EXPECT_EQ(doc.at("stream").at("offset").as_string(), id);
    EXPECT_TRUE(eventually([&] { return pending() == 0; }));
}

TEST_F(QueueModuleTest, UnsubscribeStopsConsuming) {
    bring_up();
    xadd({"n", "1"});
    ASSERT_TRUE(harness_->wait_for_submits(1, 10s));
    ASSERT_TRUE(eventually([&] { return pending() == 0; }));
    ASSERT_EQ(harness_->unsubscribe("sub-1"), WB_OK);
    xadd({"n", "2"});
    EXPECT_FALSE(harness_->wait_for_submits(2, 400ms));
    EXPECT_EQ(pending(), 0);
}

TEST_F(QueueModuleTest, WaitsForRedisThatIsNotUpYet) {
    redis_->stop();
    bring_up({}, R"({"stream":"orders","group":"g"})", false);
    redis_->start();
    ASSERT_TRUE(eventually([&] { return pending() == 0; })); // the module created the group
    xadd({"n", "1"});
    EXPECT_TRUE(harness_->wait_for_submits(1, 10s));
}

class QueueAuthTest : public QueueModuleTest {
  protected:
    void SetUp() override {
        WOPBRIDGE_REQUIRE_REDIS();
        redis_ = std::make_unique<redis_server>(redis_server_options{.password = "pw-Zebra-77"});
        harness_ = std::make_unique<connector_harness>("queue");
    }
};

TEST_F(QueueAuthTest, AuthenticatesAndSelectsTheDatabase) {
    bring_up(
        {{"url", "\"redis://:pw-Zebra-77@127.0.0.1:" + std::to_string(redis_->port()) + "/2\""}},
        R"({"stream":"orders","group":"g"})", false);
    ASSERT_TRUE(eventually([&] {
        return redis_->cli({"-n", "2", "EXISTS", "orders"}).out == "1";
    }));
    EXPECT_EQ(redis_->cli({"EXISTS", "orders"}).out, "0");
    auto id = redis_->cli({"-n", "2", "XADD", "orders", "*", "secret-content", "v"}).out;
    ASSERT_TRUE(harness_->wait_for_submits(1, 10s));
    EXPECT_EQ(harness_->submits()[0].provider_event_id, "orders:" + id);
}

TEST_F(QueueAuthTest, WrongPasswordIsLoggedWithoutTheSecret) {
    bring_up(
        {{"url", "\"redis://:wrong-Secret-1@127.0.0.1:" + std::to_string(redis_->port()) + "\""}},
        R"({"stream":"orders","group":"g"})", false);
    ASSERT_TRUE(eventually([&] {
        auto lines = harness_->log_lines();
        return std::any_of(lines.begin(), lines.end(), [](const std::string& l) {
            return l.find("WRONGPASS") != std::string::npos;
        });
    }));
    for (const auto& line : harness_->log_lines()) {
        EXPECT_EQ(line.find("wrong-Secret-1"), std::string::npos) << line;
        EXPECT_EQ(line.find("pw-Zebra-77"), std::string::npos) << line;
    }
}

TEST_F(QueueModuleTest, ExampleConfigIsAcceptedByTheModule) {
    const std::string path = std::string(WOPBRIDGE_SOURCE_DIR) + "/examples/queue/wopbridge.yaml";
    const auto settings = settings_from_config(path, "redis-orders");
    auto verdict = harness_->validate(settings);
    EXPECT_EQ(verdict.first, WB_OK) << verdict.second;
    ASSERT_EQ(harness_->create(settings), WB_OK);
    std::string error;
    const auto sub = settings_from_config(path, "orders", true);
    EXPECT_EQ(harness_->subscribe(queue_sub("orders", sub), &error), WB_OK) << error;
}

} // namespace
} // namespace wopbridge::testing
