// The kafka connector through the real `wopbridge serve` and librdkafka's mock cluster, hosted by
// this test process on loopback TCP (Debian has no Kafka broker), with records produced by the
// real client: one run per record caused by its delivered attempt, a SIGKILLed bridge that loses
// and duplicates nothing, a record whose run never starts dead-lettered and committed, a broker
// outage under a running bridge, and two nodes on PostgreSQL in one consumer group. Every check
// goes through the REST API (deliveries, runs, poll, dead letters) or the group's committed
// offsets in the cluster.
#include "support/broker_serve_fixture.hpp"
#include "support/build_paths.hpp"
#include "support/child_process.hpp"
#include "support/eventually.hpp"
#include "support/http_client.hpp"
#include "support/http_test_server.hpp"
#include "support/kafka_mock.hpp"
#include "support/serve_process.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <chrono>
#include <csignal>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace wopbridge::testing::kafka_serve_test {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

constexpr const char* api_key = "hk_kafka";
constexpr const char* sub_id = "orders";
constexpr const char* topic = "orders";
constexpr const char* group = "wopbridge";
constexpr int partitions = 3;
const std::string host_key(32, 'k');

struct config_options {
    std::string runs = "runs: {local: {workflows: [{id: order-intake}]}}\n";
    int max_in_flight = 64;
    std::string
        extra_settings{}; // appended to the connector's settings, e.g. ", properties: {...}"
    std::string store{};  // default: SQLite (sqlite_serve_prelude)
};

class KafkaServeTest : public broker_serve_fixture {
  protected:
    KafkaServeTest() : broker_serve_fixture(api_key, sub_id) {}

    void SetUp() override {
        ASSERT_TRUE(cluster_.create_topic(topic, partitions));
        write_host_key(host_key);
    }

    std::string write_config(const config_options& o = {},
                             const std::string& name = "wopbridge.yaml") {
        const std::string path = dir_.file(name);
        std::ofstream out(path);
        out << config_head(o.runs, o.store)
            << "  - name: kafka-orders\n"
               "    module: kafka\n"
               "    settings: {bootstrapServers: \""
            << cluster_.bootstrap() << "\", maxInFlight: " << o.max_in_flight
            << ", pollWaitMs: 50, commitIntervalMs: 20, retryDelayMs: 100, sessionTimeoutMs: "
               "6000, reconnectBackoffMs: 50, reconnectBackoffMaxMs: 200"
            << o.extra_settings
            << "}\n"
               "subscriptions:\n"
               "  - id: "
            << sub_id
            << "\n"
               "    source: queue\n"
               "    connector: kafka-orders\n"
               "    workflowId: order-intake\n"
               "    settings: {topics: ["
            << topic << "], groupId: " << group << ", startFrom: beginning}\n";
        return path;
    }

    std::vector<produced_record> produce(int n, int first = 0) {
        std::vector<std::string> values;
        for (int i = 0; i < n; ++i) {
            values.push_back(R"({"n":)" + std::to_string(first + i) + R"(,"customer":"c-)" +
                             std::to_string((first + i) % 7) + "\"}");
        }
        kafka_producer p(cluster_.bootstrap());
        auto recs = p.produce_all(topic, values);
        EXPECT_EQ(recs.size(), values.size()) << p.error;
        return recs;
    }

    bool all_committed() { return group_reader().all_committed(topic, partitions); }

    kafka_group_reader& group_reader() {
        if (!reader_) {
            reader_ = std::make_unique<kafka_group_reader>(cluster_.bootstrap(), group);
        }
        return *reader_;
    }

    // Every produced record made exactly one delivery (one distinct dedup key each), delivered,
    // with its own run; and each run's run.started is caused by the trigger.delivery.attempted
    // that delivered it.
    void expect_one_run_per_record(const serve_process& serve, std::size_t records,
                                   bool check_causation) {
        std::map<std::string, std::string> key_of_run;
        expect_one_delivered_run_each(serve, records, "record", key_of_run);
        if (HasFatalFailure() || !check_causation) {
            return;
        }
        expect_runs_caused_by_their_attempts(serve, key_of_run);
    }

    kafka_mock cluster_;
    std::unique_ptr<kafka_group_reader> reader_;
};

TEST_F(KafkaServeTest, EachProducedRecordStartsOneRunCausedByItsDeliveredAttempt) {
    write_config();
    serve_process serve;
    ASSERT_TRUE(serve.start(config(), log_file())) << serve.error;
    const auto doc = get_json(serve, "/.well-known/openwop");
    ASSERT_TRUE(doc.is_object());
    EXPECT_EQ(json::serialize(doc.at("queueBus")), R"({"supported":true,"backends":["kafka"]})");

    auto recs = produce(6);
    ASSERT_TRUE(eventually([&] { return delivered_count(serve) == recs.size(); }, 30s))
        << log_text();
    expect_one_run_per_record(serve, recs.size(), true);
    EXPECT_TRUE(eventually([&] { return all_committed(); }));
    EXPECT_NE(log_text().find("consuming: assigned"), std::string::npos);

    // The same content again is a new record (new offset), so a new run.
    produce(1, 0);
    ASSERT_TRUE(eventually([&] { return delivered_count(serve) == recs.size() + 1; }))
        << log_text();
    expect_one_run_per_record(serve, recs.size() + 1, false);
    expect_clean_stop(serve);
    EXPECT_TRUE(all_committed());
}

TEST_F(KafkaServeTest, SettingsThatWouldBreakTheContractAreRefusedAtStartWithTheReason) {
    // Auto commit would commit records the bridge has not committed: refused by check-config and
    // by serve, naming the property; so is a property librdkafka does not know.
    write_config({.extra_settings = ", properties: {enable.auto.commit: true}"});
    auto check = run_program({WOPBRIDGE_PROGRAM, "check-config", config()}, 30, {}, true);
    EXPECT_NE(check.exit_code, 0) << check.stdout_text;
    EXPECT_NE(check.stdout_text.find("enable.auto.commit"), std::string::npos) << check.stdout_text;
    serve_process serve;
    EXPECT_FALSE(serve.start(config(), log_file(), 15));
    EXPECT_NE(log_text().find("enable.auto.commit"), std::string::npos) << log_text();

    write_config({.extra_settings = ", properties: {fetch.wait.maxi.ms: 5}"});
    check = run_program({WOPBRIDGE_PROGRAM, "check-config", config()}, 30, {}, true);
    EXPECT_NE(check.exit_code, 0) << check.stdout_text;
    EXPECT_NE(check.stdout_text.find("fetch.wait.maxi.ms"), std::string::npos) << check.stdout_text;
}

TEST_F(KafkaServeTest, BridgeSigkilledMidStreamLosesAndDuplicatesNothing) {
    // A small in-flight window keeps the bridge mid-stream for a while.
    write_config({.max_in_flight = 8});
    constexpr int total = 300;
    constexpr int backlog = 200; // produced before the bridge starts: busy from the start
    produce(backlog);

    serve_process serve;
    ASSERT_TRUE(serve.start(config(), log_file())) << serve.error;
    std::thread producer([&] {
        for (int first = backlog; first < total; first += 20) {
            produce(20, first);
        }
    });
    // Kill once a good part is committed in the group and some is not.
    std::int64_t committed_at_kill = 0;
    const bool consumed_some = eventually(
        [&] {
            auto c = group_reader().committed(topic, partitions);
            if (!c) {
                return false;
            }
            std::int64_t sum = 0;
            for (const auto& [p, off] : *c) {
                sum += std::max<std::int64_t>(0, off);
            }
            committed_at_kill = sum;
            return sum >= 40;
        },
        60s);
    serve.signal(SIGKILL);
    const int killed = serve.wait_exit();
    producer.join();
    ASSERT_TRUE(consumed_some) << log_text();
    EXPECT_EQ(killed, -1);
    EXPECT_LT(committed_at_kill, total);
    RecordProperty("committed_at_kill", std::to_string(committed_at_kill));

    serve_process again;
    ASSERT_TRUE(again.start(config(), log_file())) << again.error;
    ASSERT_TRUE(eventually([&] { return delivered_count(again) >= total; }, 90s)) << log_text();
    ASSERT_TRUE(eventually([&] { return all_committed(); }, 30s));
    expect_one_run_per_record(again, total, true);
    expect_clean_stop(again);
}

TEST_F(KafkaServeTest, RecordWhoseRunNeverStartsIsDeadLetteredAndCommitted) {
    // The run host refuses the first three starts with a 500 (retryable), then starts runs.
    fake_runs_host runs_host;
    write_config({.runs = refusing_upstream_runs(runs_host, 3)});
    serve_process serve;
    ASSERT_TRUE(serve.start(config(), log_file())) << serve.error;
    produce(1);
    const std::string sub_path = subscription_path();
    json::array dead;
    ASSERT_TRUE(dead_letters_appear(serve, dead, 30s)) << log_text();
    ASSERT_EQ(dead.size(), 1u);
    const auto& rec = dead[0].as_object();
    EXPECT_EQ(rec.at("attempt").at("outcome").as_string(), "dead-lettered");
    EXPECT_EQ(rec.at("attempt").at("attempt").as_int64(), 3); // the retry policy's maxAttempts
    EXPECT_EQ(runs_host.requests().size(), 3u);
    const auto all = deliveries(serve);
    ASSERT_EQ(all.size(), 1u);
    EXPECT_EQ(all[0].at("status").as_string(), "dead_lettered");
    // Committed once the bridge committed it: the poison record is not read again.
    EXPECT_TRUE(eventually([&] { return all_committed(); }));

    // Exhaustion dead-letters the subscription: later records are refused by the host and held
    // back (partitions paused, offsets not committed) until an operator re-activates it.
    EXPECT_EQ(get_json(serve, sub_path).at("subscription").at("state").as_string(),
              "dead-lettered");
    produce(1, 1);
    ASSERT_TRUE(eventually([&] {
        return log_text().find("submit refused (subscription_not_active)") != std::string::npos;
    })) << log_text();
    EXPECT_FALSE(all_committed());
    EXPECT_EQ(deliveries(serve).size(), 1u);
    ASSERT_EQ(reactivate_subscription(serve), 200);
    ASSERT_TRUE(eventually([&] { return delivered_count(serve) == 1; }, 40s)) << log_text();
    EXPECT_TRUE(eventually([&] { return all_committed(); }));
    EXPECT_EQ(deliveries(serve).size(), 2u);
    EXPECT_EQ(runs_host.runs_created(), 1);
    expect_clean_stop(serve);
}

TEST_F(KafkaServeTest, BrokerOutageIsSurvivedAndLaterRecordsStartRuns) {
    write_config();
    serve_process serve;
    ASSERT_TRUE(serve.start(config(), log_file())) << serve.error;
    produce(3);
    ASSERT_TRUE(eventually([&] { return delivered_count(serve) == 3; }, 30s)) << log_text();
    ASSERT_TRUE(eventually([&] { return all_committed(); }));

    const auto log_before = log_text().size();
    cluster_.down();
    ASSERT_TRUE(eventually([&] { return log_has_since(log_before, "connection lost"); }, 30s))
        << log_text();
    // Meanwhile the subscription stays active (the outage is the connector's, not the host's).
    const auto sub = get_json(serve, subscription_path());
    ASSERT_TRUE(sub.is_object());
    EXPECT_EQ(sub.at("subscription").at("state").as_string(), "active");

    cluster_.up();
    ASSERT_TRUE(eventually([&] { return log_has_since(log_before, "connection regained"); }, 30s))
        << log_text();
    produce(4, 100);
    ASSERT_TRUE(eventually([&] { return delivered_count(serve) == 7; }, 30s)) << log_text();
    EXPECT_TRUE(eventually([&] { return all_committed(); }));
    expect_one_run_per_record(serve, 7, true);
    expect_clean_stop(serve);
}

TEST_F(KafkaServeTest, TwoNodesOnPostgresInOneGroupStartOneRunPerRecord) {
    std::string unavailable;
    config_options o;
    o.store = postgres_store_line(unavailable);
    if (o.store.empty()) {
        GTEST_SKIP() << unavailable; // (a database that could not be made has failed the test)
    }
    o.max_in_flight = 8;
    const std::string configs[2] = {write_config(o, "node0.yaml"), write_config(o, "node1.yaml")};
    serve_process nodes[2];
    ASSERT_NO_FATAL_FAILURE(start_nodes(nodes, configs));
    auto& node0 = nodes[0];
    // Produced while the group forms and rebalances across the two: records move between
    // members mid-stream, the shared store's dedup keeps them one run each.
    constexpr int total = 120;
    produce(total / 2);
    ASSERT_TRUE(eventually(
        [&] {
            return node_log(0).find("consuming: assigned") != std::string::npos &&
                   node_log(1).find("consuming: assigned") != std::string::npos;
        },
        60s))
        << node_logs();
    produce(total / 2, total / 2);
    ASSERT_TRUE(eventually([&] { return delivered_count(node0) >= total; }, 60s)) << node_logs();
    EXPECT_TRUE(eventually([&] { return all_committed(); }));
    expect_one_run_per_record(node0, total, true);
    expect_clean_stops(nodes);
}

} // namespace
} // namespace wopbridge::testing::kafka_serve_test
