// Module-level tests: the built kafka.so loaded through the connector harness, a member of a
// consumer group on librdkafka's own mock cluster (hosted by this process, real protocol on
// loopback TCP); records are produced and the group's committed offsets read with the real client.

#include "support/connector_harness.hpp"
#include "support/listener_module_test.hpp"
#include "support/eventually.hpp"
#include "support/kafka_mock.hpp"
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

constexpr const char* topic = "orders";
constexpr int partitions = 3;

const std::string beginning = R"({"topics":["orders"],"groupId":"g","startFrom":"beginning"})";

class KafkaModuleTest : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_TRUE(cluster_.create_topic(topic, partitions));
        producer_ = std::make_unique<kafka_producer>(cluster_.bootstrap());
        group_ = std::make_unique<kafka_group_reader>(cluster_.bootstrap(), "g");
        harness_ = std::make_unique<connector_harness>("kafka");
    }

    void TearDown() override {
        if (harness_) {
            EXPECT_TRUE(harness_->violations().empty());
        }
    }

    // Connector settings: test defaults, overridden/extended by `extra` (key -> JSON value).
    std::string config(const std::map<std::string, std::string>& extra = {}) const {
        return settings_json({{"bootstrapServers", "\"" + cluster_.bootstrap() + "\""},
                              {"pollWaitMs", "50"},
                              {"commitIntervalMs", "20"},
                              {"sessionTimeoutMs", "6000"},
                              {"reconnectBackoffMaxMs", "500"},
                              {"retryDelayMs", "50"}},
                             extra);
    }

    void bring_up(const std::map<std::string, std::string>& extra = {},
                  const std::string& sub = beginning) {
        std::string error;
        ASSERT_EQ(harness_->bring_up(config(extra), queue_sub("sub-1", sub), &error), WB_OK)
            << error;
    }

    produced_record produce(const std::string& value, const std::string& key = {},
                            int partition = -1) {
        auto r = producer_->produce(topic, value, key, partition);
        EXPECT_TRUE(r) << producer_->error;
        return r.value_or(produced_record{});
    }

    std::int64_t committed(int partition) {
        auto c = group_->committed(topic, partitions);
        return c && c->count(partition) ? c->at(partition) : -2;
    }

    bool all_committed() { return group_->all_committed(topic, partitions); }

    // How many partitions the member's latest "consuming: assigned" line names (0: none yet, or
    // revoked since).
    static int latest_assigned(const connector_harness& h) {
        int n = 0;
        for (const auto& l : h.log_lines()) {
            if (l.find("consuming: assigned") != std::string::npos) {
                n = l.find("[") == std::string::npos
                        ? 0
                        : 1 + static_cast<int>(std::count(l.begin(), l.end(), ','));
            } else if (l.find("revoked") != std::string::npos) {
                n = 0;
            }
        }
        return n;
    }

    static std::string lines_of(const connector_harness& h) {
        std::string out;
        for (const auto& l : h.log_lines()) {
            out += l + "\n";
        }
        return out;
    }

    std::map<std::string, int> count(wb_submit_status outcome) const {
        return submits_by_event(*harness_, outcome);
    }

    bool logged(const std::string& text, const connector_harness* h = nullptr) const {
        return logged_line(h ? *h : *harness_, text);
    }

    kafka_mock cluster_;
    std::unique_ptr<kafka_producer> producer_;
    std::unique_ptr<kafka_group_reader> group_;
    std::unique_ptr<connector_harness> harness_;
};

TEST_F(KafkaModuleTest, DescriptorIsAListenerOfSourceQueue) {
    expect_queue_listener_descriptor(*harness_, "kafka", nullptr);
}

TEST_F(KafkaModuleTest, RefusesBadSettingsWithAReason) {
    EXPECT_EQ(harness_->validate("{}").first, WB_ERR_INVALID);
    EXPECT_EQ(harness_->validate(config()).first, WB_OK);
    auto v = harness_->validate(config({{"properties", R"({"enable.auto.commit":"true"})"}}));
    EXPECT_EQ(v.first, WB_ERR_INVALID);
    EXPECT_NE(v.second.find("enable.auto.commit"), std::string::npos) << v.second;
    // librdkafka itself refuses an unknown property or a bad value, naming it.
    v = harness_->validate(config({{"properties", R"({"fetch.wait.maxi.ms":"5"})"}}));
    EXPECT_EQ(v.first, WB_ERR_INVALID);
    EXPECT_NE(v.second.find("fetch.wait.maxi.ms"), std::string::npos) << v.second;
    v = harness_->validate(config({{"properties", R"({"fetch.wait.max.ms":"-5"})"}}));
    EXPECT_EQ(v.first, WB_ERR_INVALID);
    // A TLS file that does not exist is refused at create, never naming the path.
    std::string error;
    EXPECT_EQ(harness_->create(config({{"securityProtocol", "\"ssl\""},
                                       {"sslCaLocation", "\"/nonexistent/ca-Secret.pem\""}}),
                               &error),
              WB_ERR_INVALID);
    EXPECT_FALSE(error.empty());
    EXPECT_EQ(error.find("ca-Secret"), std::string::npos) << error;
}

TEST_F(KafkaModuleTest, OneSubscriptionPerGroup) {
    ASSERT_EQ(harness_->create(config()), WB_OK);
    ASSERT_EQ(harness_->start(), WB_OK);
    std::string error;
    EXPECT_EQ(harness_->subscribe(queue_sub("a", "{}"), &error), WB_ERR_INVALID);
    EXPECT_NE(error.find("topics"), std::string::npos);
    ASSERT_EQ(harness_->subscribe(queue_sub("a", beginning), &error), WB_OK) << error;
    EXPECT_EQ(harness_->subscribe(queue_sub("b", beginning), &error), WB_ERR_INVALID);
    EXPECT_NE(error.find("already consumed"), std::string::npos);
    EXPECT_EQ(harness_->subscribe(queue_sub("b", R"({"topics":["orders"],"groupId":"h"})"), &error),
              WB_OK)
        << error;
}

TEST_F(KafkaModuleTest, EachRecordBecomesExactlyOneEventAndIsCommitted) {
    bring_up();
    std::vector<produced_record> recs;
    for (int i = 0; i < 6; ++i) {
        recs.push_back(produce(R"({"total":)" + std::to_string(10 * i) + "}",
                               "c-" + std::to_string(i), i % partitions));
    }
    ASSERT_TRUE(harness_->wait_for_submits(6, 20s)) << harness_->submits().size();
    ASSERT_TRUE(eventually([&] { return all_committed(); }));
    auto accepted = count(WB_SUBMIT_ACCEPTED);
    EXPECT_EQ(accepted.size(), 6u);
    for (const auto& r : recs) {
        EXPECT_EQ(accepted[r.id()], 1) << r.id();
    }
    for (const auto& s : harness_->submits()) {
        EXPECT_EQ(s.subscription_id, "sub-1");
        EXPECT_FALSE(s.verified);
        auto doc = boost::json::parse(s.content_json);
        ASSERT_EQ(doc.as_object().size(), 1u);
        const auto& st = doc.at("stream").as_object();
        EXPECT_EQ(st.at("topic").as_string(), topic);
        const auto p = st.at("partition").as_int64();
        const std::string off(st.at("offset").as_string());
        EXPECT_EQ(s.provider_event_id, std::string(topic) + "/" + std::to_string(p) + "/" + off);
        const auto n = st.at("message").at("total").as_int64() / 10;
        EXPECT_EQ(st.at("key").as_string(), "c-" + std::to_string(n));
        EXPECT_EQ(p, n % partitions);
        EXPECT_TRUE(
            expect_valid(doc.at("stream"), "v2/trigger-event.schema.json#/$defs/StreamEvent"));
    }
    EXPECT_EQ(committed(0), 2);
    EXPECT_FALSE(harness_->wait_for_submits(7, 300ms));
}

TEST_F(KafkaModuleTest, CommitsOnlyAfterTheOutcome) {
    bring_up();
    harness_->pause_submit_completion();
    produce("1", {}, 0);
    ASSERT_TRUE(harness_->wait_for_submits(1, 20s));
    // Submitted but not committed in the bridge: the group's offset must not move.
    EXPECT_FALSE(eventually([&] { return committed(0) > 0; }, 500ms));
    harness_->resume_submit_completion();
    EXPECT_TRUE(eventually([&] { return committed(0) == 1; }));
    EXPECT_EQ(harness_->submits().size(), 1u);
}

TEST_F(KafkaModuleTest, HeldAndDuplicateOutcomesAreCommitted) {
    bring_up();
    harness_->set_submit_mode(submit_mode::hold);
    produce("1", {}, 1);
    ASSERT_TRUE(harness_->wait_for_submits(1, 20s));
    EXPECT_TRUE(eventually([&] { return committed(1) == 1; }));
    EXPECT_EQ(harness_->submits()[0].outcome, WB_SUBMIT_HELD);
}

TEST_F(KafkaModuleTest, RefusedRecordIsHeldBackAndSubmittedAgainWithoutPassingItsOffset) {
    bring_up({{"retryDelayMs", "300"}});
    harness_->set_submit_mode(submit_mode::refuse, "overloaded");
    const auto first = produce("1", {}, 0);
    ASSERT_TRUE(harness_->wait_for_submits(1, 20s));
    EXPECT_EQ(harness_->submits()[0].outcome, WB_SUBMIT_REFUSED);
    EXPECT_TRUE(eventually([&] { return logged("submit refused (overloaded); partitions paused"); }));
    harness_->set_submit_mode(submit_mode::accept);
    const auto second = produce("2", {}, 0);
    ASSERT_TRUE(eventually([&] { return count(WB_SUBMIT_ACCEPTED).size() == 2; }));
    EXPECT_EQ(count(WB_SUBMIT_ACCEPTED)[first.id()], 1);
    EXPECT_EQ(count(WB_SUBMIT_ACCEPTED)[second.id()], 1);
    EXPECT_TRUE(eventually([&] { return committed(0) == 2; }));
}

TEST_F(KafkaModuleTest, RepeatedRefusalsBackOffAndResumeOnAcceptance) {
    bring_up();
    harness_->set_submit_mode(submit_mode::refuse, "subscription_not_active");
    const auto rec = produce("1", {}, 0);
    ASSERT_TRUE(harness_->wait_for_submits(1, 20s));
    // retryDelayMs is 50: without a backoff that is ~30 submits in 1.5 s; doubling gives ~5.
    EXPECT_FALSE(eventually([&] { return harness_->submits().size() >= 12; }, 1500ms))
        << harness_->submits().size() << " submits of one refused record";
    EXPECT_LE(committed(0), rec.offset); // never past the refused record
    harness_->set_submit_mode(submit_mode::accept);
    ASSERT_TRUE(eventually([&] { return count(WB_SUBMIT_ACCEPTED)[rec.id()] == 1; }, 40s));
    EXPECT_TRUE(eventually([&] { return committed(0) == 1; }));
}

TEST_F(KafkaModuleTest, RecordRefusedAsInvalidIsSubmittedAgainWithoutPayloadThenSkipped) {
    bring_up();
    harness_->set_submit_mode(submit_mode::refuse, "invalid");
    produce(R"({"n":1})", {}, 0);
    ASSERT_TRUE(harness_->wait_for_submits(2, 20s));
    auto submits = harness_->submits();
    EXPECT_FALSE(boost::json::parse(submits[0].content_json).at("stream").at("message").is_null());
    EXPECT_TRUE(boost::json::parse(submits[1].content_json).at("stream").at("message").is_null());
    // The host can never take it: committed past, so it does not block its partition.
    EXPECT_TRUE(eventually([&] { return committed(0) == 1; }));
    EXPECT_TRUE(eventually([&] { return logged("refused as invalid even without its payload; skipped"); }));
    EXPECT_FALSE(harness_->wait_for_submits(3, 300ms));
}

TEST_F(KafkaModuleTest, OversizeRecordIsSubmittedWithoutPayloadAndCommitted) {
    bring_up({{"maxMessageBytes", "16"}});
    const auto rec = produce(std::string(100, 'x'), {}, 2);
    ASSERT_TRUE(harness_->wait_for_submits(1, 20s));
    auto doc = boost::json::parse(harness_->submits()[0].content_json);
    EXPECT_TRUE(doc.at("stream").at("message").is_null());
    EXPECT_EQ(harness_->submits()[0].provider_event_id, rec.id());
    EXPECT_TRUE(eventually([&] { return committed(2) == 1; }));
}

TEST_F(KafkaModuleTest, NoCapacityPausesThePartitions) {
    harness_->set_capacity(false);
    bring_up();
    produce("1", {}, 0);
    produce("2", {}, 1);
    EXPECT_FALSE(harness_->wait_for_submits(1, 1s));
    harness_->set_capacity(true);
    EXPECT_TRUE(harness_->wait_for_submits(2, 20s));
    EXPECT_TRUE(eventually([&] { return all_committed(); }));
}

TEST_F(KafkaModuleTest, InFlightRecordsAreBoundedByMaxInFlight) {
    bring_up({{"maxInFlight", "2"}});
    harness_->pause_submit_completion();
    std::vector<std::string> values;
    for (int i = 0; i < 12; ++i) {
        values.push_back(std::to_string(i));
    }
    ASSERT_EQ(producer_->produce_all(topic, values).size(), values.size()) << producer_->error;
    ASSERT_TRUE(harness_->wait_for_submits(2, 20s));
    // A record polled as the pause takes effect may come on top; never the backlog.
    EXPECT_FALSE(harness_->wait_for_submits(5, 500ms)) << harness_->submits().size();
    harness_->resume_submit_completion();
    EXPECT_TRUE(eventually([&] { return count(WB_SUBMIT_ACCEPTED).size() == values.size(); }, 20s));
    EXPECT_TRUE(eventually([&] { return all_committed(); }));
    EXPECT_EQ(harness_->submits().size(), values.size());
}

TEST_F(KafkaModuleTest, StopFinishesInFlightSubmitsAndCommits) {
    bring_up();
    harness_->pause_submit_completion();
    produce("1", {}, 0);
    ASSERT_TRUE(harness_->wait_for_submits(1, 20s));
    EXPECT_LE(committed(0), 0); // at most up to the outstanding record, never past it
    // stop() lets the host complete the outcome and commits it before leaving the group.
    ASSERT_EQ(harness_->stop(), WB_OK);
    EXPECT_EQ(committed(0), 1);
}

TEST_F(KafkaModuleTest, StartFromNewSkipsExistingRecords) {
    produce("old", {}, 0);
    bring_up({}, R"({"topics":["orders"],"groupId":"g"})");
    ASSERT_TRUE(eventually([&] { return logged("consuming: assigned"); }, 20s));
    // The assignment is made; the fetch position is settled at the end once it fetches.
    ASSERT_TRUE(eventually([&] {
        produce("new", {}, 1);
        return harness_->wait_for_submits(1, 300ms);
    }, 20s));
    for (const auto& s : harness_->submits()) {
        EXPECT_EQ(boost::json::parse(s.content_json).at("stream").at("message").as_string(), "new");
    }
}

TEST_F(KafkaModuleTest, BrokerOutageIsLoggedAndConsumptionResumes) {
    bring_up();
    const auto a = produce("a", {}, 0);
    ASSERT_TRUE(harness_->wait_for_submits(1, 20s));
    ASSERT_TRUE(eventually([&] { return committed(0) == 1; }));
    cluster_.down();
    ASSERT_TRUE(eventually([&] { return logged("connection lost: all brokers down"); }, 30s));
    cluster_.up();
    ASSERT_TRUE(eventually([&] { return logged("connection regained"); }, 30s))
        << lines_of(*harness_);
    const auto b = produce("b", {}, 0);
    ASSERT_TRUE(eventually([&] { return count(WB_SUBMIT_ACCEPTED).count(b.id()) == 1; }, 30s));
    EXPECT_TRUE(eventually([&] { return committed(0) == 2; }, 20s));
    EXPECT_EQ(count(WB_SUBMIT_ACCEPTED)[a.id()], 1);
}

TEST_F(KafkaModuleTest, StartsWithTheBrokersDownAndConsumesOnceTheyAnswer) {
    cluster_.down();
    bring_up(); // create and start do not wait for a broker
    ASSERT_TRUE(eventually([&] { return logged("connection lost: all brokers down"); }, 30s))
        << lines_of(*harness_);
    cluster_.up();
    const auto rec = produce("1", {}, 0);
    ASSERT_TRUE(eventually([&] { return count(WB_SUBMIT_ACCEPTED).count(rec.id()) == 1; }, 30s))
        << lines_of(*harness_);
    EXPECT_TRUE(eventually([&] { return committed(0) == 1; }));
}

TEST_F(KafkaModuleTest, TwoMembersOfOneGroupShareThePartitions) {
    bring_up();
    connector_harness other("kafka");
    ASSERT_EQ(other.bring_up(config(), queue_sub("sub-1", beginning)), WB_OK);
    // Both are members once the group's latest assignments cover the partitions between them
    // (the mock may form the group with both at once, or rebalance when the second joins).
    ASSERT_TRUE(eventually([&] {
        const int a = latest_assigned(*harness_);
        const int b = latest_assigned(other);
        return a > 0 && b > 0 && a + b == partitions;
    }, 40s)) << lines_of(*harness_) << lines_of(other);
    std::vector<produced_record> recs;
    for (int i = 0; i < 60; ++i) {
        recs.push_back(produce(std::to_string(i), {}, i % partitions));
    }
    ASSERT_TRUE(eventually([&] { return all_committed(); }, 30s));
    std::map<std::string, int> seen;
    int mine = 0;
    int theirs = 0;
    for (const auto& s : harness_->submits()) {
        seen[s.provider_event_id] += s.outcome == WB_SUBMIT_ACCEPTED;
        mine += s.outcome == WB_SUBMIT_ACCEPTED;
    }
    for (const auto& s : other.submits()) {
        seen[s.provider_event_id] += s.outcome == WB_SUBMIT_ACCEPTED;
        theirs += s.outcome == WB_SUBMIT_ACCEPTED;
    }
    for (const auto& r : recs) {
        EXPECT_EQ(seen[r.id()], 1) << r.id(); // each record went to exactly one member
    }
    EXPECT_GT(mine, 0);
    EXPECT_GT(theirs, 0);
}

TEST_F(KafkaModuleTest, ExampleConfigIsAcceptedByTheModule) {
    const std::string path = std::string(WOPBRIDGE_SOURCE_DIR) + "/examples/kafka/wopbridge.yaml";
    const auto settings = settings_from_config(path, "kafka-orders");
    auto verdict = harness_->validate(settings);
    EXPECT_EQ(verdict.first, WB_OK) << verdict.second;
    ASSERT_EQ(harness_->create(settings), WB_OK);
    std::string error;
    const auto sub = settings_from_config(path, "orders", true);
    EXPECT_EQ(harness_->subscribe(queue_sub("orders", sub), &error), WB_OK) << error;
}

} // namespace
} // namespace wopbridge::testing
