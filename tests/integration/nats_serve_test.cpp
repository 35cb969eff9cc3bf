// The nats connector through the real `wopbridge serve` and a real `nats-server -js` on loopback,
// with messages published by the real C client (nats.c): one run per message caused by its
// delivered attempt, a SIGKILLed bridge that loses and duplicates nothing, a broker killed and
// restarted under a running bridge (and three times under a large window of held messages; and a
// broker that comes up after the bridge), a message whose
// run never starts dead-lettered and acked, and two nodes on PostgreSQL sharing one durable
// consumer. Every check goes through the REST API (deliveries, runs, poll, dead letters), the
// PostgreSQL tables, or the consumer's state in JetStream.
#include "support/broker_serve_fixture.hpp"
#include "support/eventually.hpp"
#include "support/http_client.hpp"
#include "support/http_test_server.hpp"
#include "support/nats_server.hpp"
#include "support/serve_process.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <chrono>
#include <csignal>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace wopbridge::testing::nats_serve_test {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

constexpr const char* api_key = "hk_nats";
constexpr const char* sub_id = "orders";
constexpr const char* stream = "ORDERS";
constexpr const char* durable = "wopbridge";
const std::string host_key(32, 'n');

struct config_options {
    std::string runs = "runs: {local: {workflows: [{id: order-intake}]}}\n";
    std::string start_from = "new";
    int max_in_flight = 64;
    int batch_size = 16;
    int ack_wait_ms = 2000;
    std::string store{}; // default: SQLite (sqlite_serve_prelude)
};

class NatsServeTest : public broker_serve_fixture {
  protected:
    NatsServeTest() : broker_serve_fixture(api_key, sub_id) {}

    void SetUp() override {
        WOPBRIDGE_REQUIRE_NATS();
        write_host_key(host_key);
    }

    std::string write_config(const nats_server& broker, const config_options& o = {},
                             const std::string& name = "wopbridge.yaml") {
        const std::string path = dir_.file(name);
        std::ofstream out(path);
        out << config_head(o.runs, o.store)
            << "  - name: nats-orders\n"
               "    module: nats\n"
               "    settings: {url: \""
            << broker.url() << "\", batchSize: " << o.batch_size
            << ", maxInFlight: " << o.max_in_flight
            << ", fetchWaitMs: 200, reconnectWaitMs: 100, retryDelayMs: 100}\n"
               "subscriptions:\n"
               "  - id: "
            << sub_id
            << "\n"
               "    source: queue\n"
               "    connector: nats-orders\n"
               "    workflowId: order-intake\n"
               "    settings: {stream: "
            << stream << ", durable: " << durable << ", startFrom: " << o.start_from
            << ", ackWaitMs: " << o.ack_wait_ms << "}\n";
        return path;
    }

    static std::vector<std::uint64_t> produce(nats_client& client, int n, int first = 0) {
        std::vector<std::uint64_t> seqs;
        for (int i = 0; i < n; ++i) {
            auto seq = client.publish(
                "orders.created", R"({"n":)" + std::to_string(first + i) + R"(,"customer":"c-)" +
                                      std::to_string((first + i) % 7) + "\"}");
            EXPECT_TRUE(seq) << client.error;
            if (seq) {
                seqs.push_back(*seq);
            }
        }
        return seqs;
    }

    static bool all_acked(nats_client& client) {
        auto s = client.consumer(stream, durable);
        return s && s->num_pending == 0 && s->num_ack_pending == 0;
    }

    // Every published message made exactly one delivery (one distinct dedup key each), delivered,
    // with its own run; and each run's run.started is caused by the trigger.delivery.attempted
    // that delivered it. (The dedup keys are HMACs under the store's data key, which the host key
    // only wraps, so the test counts them rather than recomputing them.)
    void expect_one_run_per_message(const serve_process& serve,
                                    const std::vector<std::uint64_t>& seqs, bool check_causation) {
        ASSERT_EQ(std::set<std::uint64_t>(seqs.begin(), seqs.end()).size(), seqs.size())
            << "sequences must be distinct";
        std::map<std::string, std::string> key_of_run;
        expect_one_delivered_run_each(serve, seqs.size(), "message", key_of_run);
        if (HasFatalFailure() || !check_causation) {
            return;
        }
        expect_runs_caused_by_their_attempts(serve, key_of_run);
    }

    // The review's window: large fetches, up to 1 000 messages held.
    static config_options large_window() {
        return {.start_from = "beginning", .max_in_flight = 1000, .batch_size = 200,
                .ack_wait_ms = 30000};
    }

    // After a large load: JetStream has nothing unacked, every message was delivered, each with
    // exactly one run; then a clean stop. Generous deadlines: a loaded machine drains slowly.
    void expect_drained_with_one_run_each(serve_process& serve, nats_client& client,
                                          const std::vector<std::uint64_t>& seqs) {
        ASSERT_TRUE(eventually([&] { return all_acked(client); }, 120s))
            << "the bridge stopped consuming\n"
            << log_text();
        ASSERT_TRUE(eventually([&] { return delivered_count(serve) == seqs.size(); }, 120s))
            << log_text();
        expect_one_run_per_message(serve, seqs, false);
        expect_clean_stop(serve);
    }

    // The bridge created the durable consumer (startFrom: new: publish only after that).
    static bool consumer_exists(nats_client& client) {
        return client.consumer(stream, durable).has_value();
    }
};

TEST_F(NatsServeTest, EachPublishedMessageStartsOneRunCausedByItsDeliveredAttempt) {
    nats_server broker;
    nats_client client(broker.url());
    ASSERT_TRUE(client.add_stream(stream, "orders.>")) << client.error;
    write_config(broker);
    serve_process serve;
    ASSERT_TRUE(serve.start(config(), log_file())) << serve.error;
    ASSERT_TRUE(eventually([&] { return consumer_exists(client); })) << log_text();
    // Discovery names the engine this node consumes (and only it).
    const auto doc = get_json(serve, "/.well-known/openwop");
    ASSERT_TRUE(doc.is_object());
    EXPECT_EQ(json::serialize(doc.at("queueBus")), R"({"supported":true,"backends":["nats"]})");

    auto seqs = produce(client, 5);
    ASSERT_TRUE(eventually([&] { return delivered_count(serve) == seqs.size(); })) << log_text();
    expect_one_run_per_message(serve, seqs, true);
    EXPECT_TRUE(eventually([&] { return all_acked(client); }));

    // The same content again is a new message (new sequence), so a new run.
    auto more = produce(client, 1);
    seqs.insert(seqs.end(), more.begin(), more.end());
    ASSERT_TRUE(eventually([&] { return delivered_count(serve) == seqs.size(); })) << log_text();
    expect_one_run_per_message(serve, seqs, false);
    expect_clean_stop(serve);
    EXPECT_TRUE(all_acked(client));
}

TEST_F(NatsServeTest, BridgeSigkilledMidStreamLosesAndDuplicatesNothing) {
    nats_server broker;
    nats_client client(broker.url());
    ASSERT_TRUE(client.add_stream(stream, "orders.>")) << client.error;
    // Small fetches and a small in-flight window keep the bridge mid-stream for a while.
    write_config(broker, {.start_from = "beginning", .max_in_flight = 8, .batch_size = 4});
    constexpr int total = 300;
    constexpr int backlog = 200; // published before the bridge starts: busy from the start
    std::vector<std::uint64_t> seqs = produce(client, backlog);

    serve_process serve;
    ASSERT_TRUE(serve.start(config(), log_file())) << serve.error;
    std::mutex mu;
    std::thread producer([&] {
        nats_client own(broker.url());
        for (int first = backlog; first < total; first += 20) {
            auto got = produce(own, 20, first);
            std::lock_guard lock(mu);
            seqs.insert(seqs.end(), got.begin(), got.end());
        }
    });
    // Kill while messages are delivered but unacked, after a good part was consumed.
    consumer_state at_kill;
    const bool consumed_some = eventually([&] {
        auto s = client.consumer(stream, durable);
        if (!s) {
            return false;
        }
        at_kill = *s;
        return s->ack_floor_stream_seq >= 40 && s->num_ack_pending > 0;
    });
    serve.signal(SIGKILL);
    const int killed = serve.wait_exit();
    producer.join();
    ASSERT_TRUE(consumed_some) << log_text();
    EXPECT_EQ(killed, -1);
    ASSERT_EQ(seqs.size(), static_cast<std::size_t>(total));
    EXPECT_LT(at_kill.ack_floor_stream_seq, static_cast<std::uint64_t>(total));
    RecordProperty("acked_at_kill", std::to_string(at_kill.ack_floor_stream_seq));
    RecordProperty("unacked_at_kill", std::to_string(at_kill.num_ack_pending));

    serve_process again;
    ASSERT_TRUE(again.start(config(), log_file())) << again.error;
    ASSERT_TRUE(eventually([&] { return delivered_count(again) >= total; }, 60s)) << log_text();
    ASSERT_TRUE(eventually([&] { return all_acked(client); }, 30s));
    expect_one_run_per_message(again, seqs, true);
    expect_clean_stop(again);
}

TEST_F(NatsServeTest, BrokerKilledAndRestartedIsSurvivedAndLaterMessagesStartRuns) {
    nats_server broker;
    auto client = std::make_unique<nats_client>(broker.url());
    ASSERT_TRUE(client->add_stream(stream, "orders.>")) << client->error;
    write_config(broker);
    serve_process serve;
    ASSERT_TRUE(serve.start(config(), log_file())) << serve.error;
    ASSERT_TRUE(eventually([&] { return consumer_exists(*client); })) << log_text();
    auto seqs = produce(*client, 3);
    ASSERT_TRUE(eventually([&] { return delivered_count(serve) == 3; })) << log_text();
    ASSERT_TRUE(eventually([&] { return all_acked(*client); }));

    const auto log_before = log_text().size();
    broker.kill(); // a crash: the store on disk is what survives
    ASSERT_TRUE(eventually([&] { return log_has_since(log_before, "connection lost"); }))
        << log_text();
    // Meanwhile the subscription stays active (the outage is the connector's, not the host's).
    const auto sub = get_json(serve, subscription_path());
    ASSERT_TRUE(sub.is_object());
    EXPECT_EQ(sub.at("subscription").at("state").as_string(), "active");

    broker.start();
    ASSERT_TRUE(eventually([&] { return log_has_since(log_before, "connection regained"); }))
        << log_text();
    client = std::make_unique<nats_client>(broker.url());
    auto more = produce(*client, 4, 100);
    seqs.insert(seqs.end(), more.begin(), more.end());
    ASSERT_TRUE(eventually([&] { return delivered_count(serve) == seqs.size(); }, 30s))
        << log_text();
    EXPECT_TRUE(eventually([&] { return all_acked(*client); }));
    expect_one_run_per_message(serve, seqs, true);
    expect_clean_stop(serve);
}

// The review's case: large fetches and a large window (batchSize 200, maxInFlight 1000), the
// broker SIGKILLed and restarted three times while the bridge holds hundreds of fetched messages
// whose outcomes are still arriving. Each held message keeps the pull subscription it came from
// alive, so acks after a re-bind never touch a destroyed one (under ASan this test is what
// proves it). Afterwards: the bridge is still serving, every message has exactly one run, and
// JetStream has nothing unacked.
TEST_F(NatsServeTest, BrokerRestartsUnderALargeWindowKeepTheBridgeUpAndOneRunPerMessage) {
    nats_server broker;
    auto client = std::make_unique<nats_client>(broker.url());
    ASSERT_TRUE(client->add_stream(stream, "orders.>")) << client->error;
    write_config(broker, large_window());
    constexpr int backlog = 2000;
    constexpr int per_round = 1000;
    constexpr int rounds = 3;
    std::vector<std::uint64_t> seqs = produce(*client, backlog);
    ASSERT_EQ(seqs.size(), static_cast<std::size_t>(backlog));

    serve_process serve;
    ASSERT_TRUE(serve.start(config(), log_file())) << serve.error;
    for (int round = 0; round < rounds; ++round) {
        if (round > 0) {
            auto more = produce(*client, per_round, backlog + (round - 1) * per_round);
            seqs.insert(seqs.end(), more.begin(), more.end());
        }
        // Mid-stream: messages handed to the bridge and not yet acked.
        const bool holding = eventually([&] {
            auto st = client->consumer(stream, durable);
            return st && st->num_ack_pending > 0;
        });
        const auto log_before = log_text().size();
        broker.kill();
        ASSERT_TRUE(holding) << "round " << round << ": the bridge never held messages\n"
                             << log_text();
        ASSERT_TRUE(eventually([&] { return log_has_since(log_before, "connection lost"); }))
            << log_text();
        broker.start();
        ASSERT_TRUE(
            eventually([&] { return log_has_since(log_before, "connection regained"); }, 30s))
            << log_text();
        client = std::make_unique<nats_client>(broker.url());
        ASSERT_TRUE(client->ok()) << client->error;
    }
    auto last = produce(*client, per_round, backlog + (rounds - 1) * per_round);
    seqs.insert(seqs.end(), last.begin(), last.end());
    ASSERT_EQ(seqs.size(), static_cast<std::size_t>(backlog + rounds * per_round));

    expect_drained_with_one_run_each(serve, *client, seqs);
}

// The same shape with a window that is certain: the durable is deleted (an operator's `nats
// consumer rm`) while the bridge holds hundreds of fetched messages. Its next fetch fails, it binds
// again (creating the durable anew, from the beginning of the stream), and the outcomes of the
// messages it held arrive after the re-bind: their acks go through the subscription they came
// from, which they keep alive. Every message still has exactly one run (what the new durable
// hands out again is answered as a duplicate and acked).
TEST_F(NatsServeTest, DurableDeletedUnderALargeWindowIsBoundAgainAndHeldAcksStaySafe) {
    nats_server broker;
    nats_client client(broker.url());
    ASSERT_TRUE(client.add_stream(stream, "orders.>")) << client.error;
    write_config(broker, large_window());
    constexpr int per_round = 1500;
    constexpr int rounds = 3;
    std::vector<std::uint64_t> seqs;
    serve_process serve;
    ASSERT_TRUE(serve.start(config(), log_file())) << serve.error;
    ASSERT_TRUE(eventually([&] { return consumer_exists(client); })) << log_text();
    for (int round = 0; round < rounds; ++round) {
        auto more = produce(client, per_round, round * per_round);
        seqs.insert(seqs.end(), more.begin(), more.end());
        const bool holding = eventually([&] {
            auto st = client.consumer(stream, durable);
            return st && st->num_ack_pending > 0;
        });
        ASSERT_TRUE(holding) << "round " << round << ": the bridge never held messages\n"
                             << log_text();
        ASSERT_TRUE(client.delete_consumer(stream, durable)) << client.error;
        ASSERT_TRUE(eventually([&] { return consumer_exists(client); }, 30s))
            << "round " << round << ": the bridge did not bind again\n"
            << log_text();
    }
    expect_drained_with_one_run_each(serve, client, seqs);
}

TEST_F(NatsServeTest, BridgeStartedBeforeTheBrokerConsumesOnceItComesUp) {
    nats_server broker(
        nats_server_options{.user = {}, .password = {}, .token = {}, .defer_start = true});
    write_config(broker);
    serve_process serve;
    ASSERT_TRUE(serve.start(config(), log_file())) << serve.error;
    ASSERT_TRUE(eventually([&] {
        return log_text().find("no server reachable yet") != std::string::npos;
    })) << log_text();
    http_call health;
    health.url = serve.url() + "/healthz";
    EXPECT_EQ(perform(health).status, 200);

    broker.start();
    nats_client client(broker.url());
    ASSERT_TRUE(client.add_stream(stream, "orders.>")) << client.error;
    ASSERT_TRUE(eventually([&] { return consumer_exists(client); })) << log_text();
    auto seqs = produce(client, 3);
    ASSERT_TRUE(eventually([&] { return delivered_count(serve) == seqs.size(); })) << log_text();
    expect_one_run_per_message(serve, seqs, true);
    EXPECT_TRUE(eventually([&] { return all_acked(client); }));
    expect_clean_stop(serve);
}

TEST_F(NatsServeTest, MessageWhoseRunNeverStartsIsDeadLetteredAndAcked) {
    // The run host refuses the first three starts with a 500 (retryable), then starts runs.
    fake_runs_host runs_host;
    nats_server broker;
    nats_client client(broker.url());
    ASSERT_TRUE(client.add_stream(stream, "orders.>")) << client.error;
    write_config(broker, {.runs = refusing_upstream_runs(runs_host, 3)});
    serve_process serve;
    ASSERT_TRUE(serve.start(config(), log_file())) << serve.error;
    ASSERT_TRUE(eventually([&] { return consumer_exists(client); })) << log_text();

    auto seqs = produce(client, 1);
    ASSERT_EQ(seqs.size(), 1u);
    const std::string sub_path = subscription_path();
    json::array dead;
    ASSERT_TRUE(dead_letters_appear(serve, dead)) << log_text();
    ASSERT_EQ(dead.size(), 1u);
    const auto& rec = dead[0].as_object();
    EXPECT_EQ(rec.at("subscriptionId").as_string(), sub_id);
    EXPECT_EQ(rec.at("attempt").at("outcome").as_string(), "dead-lettered");
    EXPECT_EQ(rec.at("attempt").at("attempt").as_int64(), 3); // the retry policy's maxAttempts
    EXPECT_EQ(runs_host.requests().size(), 3u);
    const auto all = deliveries(serve);
    ASSERT_EQ(all.size(), 1u);
    EXPECT_EQ(all[0].at("status").as_string(), "dead_lettered");
    EXPECT_EQ(rec.at("attempt").at("dedupKey").as_string(), all[0].at("dedupKey").as_string());
    // Acked once committed: the poison message is not redelivered by JetStream.
    EXPECT_TRUE(eventually([&] { return all_acked(client); }));

    // Exhaustion dead-letters the subscription too: later messages are refused by the host and
    // go back to JetStream (not lost, not busy-polled) ...
    EXPECT_EQ(get_json(serve, sub_path).at("subscription").at("state").as_string(),
              "dead-lettered");
    auto later = produce(client, 1, 1);
    ASSERT_TRUE(eventually([&] {
        return log_text().find("submit refused (subscription_not_active)") != std::string::npos;
    })) << log_text();
    EXPECT_FALSE(all_acked(client));
    EXPECT_EQ(deliveries(serve).size(), 1u);

    // ... until an operator re-activates the subscription (or replays the dead letter): then
    // they start runs.
    ASSERT_EQ(reactivate_subscription(serve), 200);
    ASSERT_TRUE(eventually([&] { return delivered_count(serve) == 1; }, 40s)) << log_text();
    EXPECT_TRUE(eventually([&] { return all_acked(client); }));
    EXPECT_EQ(deliveries(serve).size(), 2u);
    EXPECT_EQ(runs_host.runs_created(), 1);
    expect_clean_stop(serve);
}

TEST_F(NatsServeTest, TwoNodesOnPostgresShareOneDurableAndStartOneRunPerMessage) {
    std::string unavailable;
    config_options o;
    o.store = postgres_store_line(unavailable);
    if (o.store.empty()) {
        GTEST_SKIP() << unavailable; // (a database that could not be made has failed the test)
    }
    nats_server broker;
    nats_client client(broker.url());
    ASSERT_TRUE(client.add_stream(stream, "orders.>")) << client.error;
    o.start_from = "beginning";
    o.max_in_flight = 8;
    o.batch_size = 4;
    const std::string configs[2] = {write_config(broker, o, "node0.yaml"),
                                    write_config(broker, o, "node1.yaml")};
    serve_process nodes[2];
    ASSERT_NO_FATAL_FAILURE(start_nodes(nodes, configs));
    auto& node0 = nodes[0];
    ASSERT_TRUE(eventually([&] { return consumer_exists(client); }));

    constexpr int total = 120;
    auto seqs = produce(client, total);
    ASSERT_TRUE(eventually([&] { return delivered_count(node0) >= total; }, 60s)) << node_logs();
    EXPECT_TRUE(eventually([&] { return all_acked(client); }));
    expect_one_run_per_message(node0, seqs, true);
    // Both nodes were members of the durable.
    EXPECT_NE(node_log(0).find("consuming"), std::string::npos);
    EXPECT_NE(node_log(1).find("consuming"), std::string::npos);
    expect_clean_stops(nodes);
}

} // namespace
} // namespace wopbridge::testing::nats_serve_test
