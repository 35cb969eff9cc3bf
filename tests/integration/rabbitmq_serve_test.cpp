// The rabbitmq connector through the real `wopbridge serve` and a real RabbitMQ node on loopback,
// with messages published by the real C client (rabbitmq-c): one run per message caused by its
// delivered attempt, a SIGKILLed bridge that loses and duplicates nothing, a broker killed and
// restarted under a running bridge, a message whose run never starts dead-lettered and acked, a
// message without message_id rejected to the queue's dead-letter queue, and two nodes on
// PostgreSQL competing on one queue. Every check goes through the REST API (deliveries, runs,
// poll, dead letters), or the queue's depth in the broker (passive queue.declare). The suite
// shares one RabbitMQ node (boot takes seconds); each test has its own queue.
#include "support/broker_serve_fixture.hpp"
#include "support/eventually.hpp"
#include "support/http_client.hpp"
#include "support/http_test_server.hpp"
#include "support/rabbitmq_server.hpp"
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

namespace wopbridge::testing::rabbitmq_serve_test {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

constexpr const char* api_key = "hk_rabbitmq";
constexpr const char* sub_id = "orders";
const std::string host_key(32, 'r');

struct config_options {
    std::string runs = "runs: {local: {workflows: [{id: order-intake}]}}\n";
    int prefetch = 32;
    std::string store{}; // default: SQLite (sqlite_serve_prelude)
    std::string url{};   // default: the suite's node
};

class RabbitmqServeTest : public broker_serve_fixture {
  protected:
    RabbitmqServeTest() : broker_serve_fixture(api_key, sub_id) {}

    void SetUp() override {
        WOPBRIDGE_REQUIRE_RABBITMQ();
        broker_ = rabbitmq_server::shared();
        ASSERT_NE(broker_, nullptr) << rabbitmq_server::shared_error();
        if (!broker_->running()) {
            ASSERT_TRUE(broker_->start()) << broker_->error;
        }
        // One queue per test: the node is shared by the suite.
        queue_ = std::string("orders-") +
                 ::testing::UnitTest::GetInstance()->current_test_info()->name();
        client_ = std::make_unique<amqp_client>(broker_->port());
        ASSERT_TRUE(client_->declare_queue(queue_, queue_ + "-dlq")) << client_->error;
        ASSERT_TRUE(client_->declare_queue(queue_ + "-dlq")) << client_->error;
        write_host_key(host_key);
    }

    std::string write_config(const config_options& o = {},
                             const std::string& name = "wopbridge.yaml") {
        const std::string path = dir_.file(name);
        std::ofstream out(path);
        out << config_head(o.runs, o.store)
            << "  - name: rabbit-orders\n"
               "    module: rabbitmq\n"
               "    settings: {url: \""
            << (o.url.empty() ? broker_->url() : o.url) << "\", prefetch: " << o.prefetch
            << ", reconnectWaitMs: 200, retryDelayMs: 100}\n"
               "subscriptions:\n"
               "  - id: "
            << sub_id
            << "\n"
               "    source: queue\n"
               "    connector: rabbit-orders\n"
               "    workflowId: order-intake\n"
               "    settings: {queue: "
            << queue_ << "}\n";
        return path;
    }

    // Publishes n messages with message ids "m-<first>".."m-<first+n-1>".
    std::vector<std::string> produce(amqp_client& client, int n, int first = 0) {
        std::vector<std::string> ids;
        for (int i = 0; i < n; ++i) {
            const std::string id = "m-" + std::to_string(first + i);
            const bool ok =
                client.publish(queue_,
                               R"({"n":)" + std::to_string(first + i) + R"(,"customer":"c-)" +
                                   std::to_string((first + i) % 7) + "\"}",
                               id);
            EXPECT_TRUE(ok) << client.error;
            if (ok) {
                ids.push_back(id);
            }
        }
        return ids;
    }

    // Nothing waits in the queue and the bridge is its one consumer.
    bool drained() {
        auto d = client_->depth(queue_);
        return d && d->ready == 0 && d->consumers >= 1;
    }
    std::uint32_t ready() {
        auto d = client_->depth(queue_);
        return d ? d->ready : 0xffffffffu;
    }
    bool consuming() {
        auto d = client_->depth(queue_);
        return d && d->consumers >= 1;
    }

    // Every published message made exactly one delivery (one distinct dedup key each), delivered,
    // with its own run; and each run's run.started is caused by the trigger.delivery.attempted
    // that delivered it.
    void expect_one_run_per_message(const serve_process& serve, std::size_t messages,
                                    bool check_causation) {
        std::map<std::string, std::string> key_of_run;
        expect_one_delivered_run_each(serve, messages, "message", key_of_run);
        if (HasFatalFailure() || !check_causation) {
            return;
        }
        expect_runs_caused_by_their_attempts(serve, key_of_run);
    }

    // SIGTERM, then the queue holds nothing: a message left unacked would be requeued when the
    // bridge's connection closed.
    void stop_and_expect_all_acked(serve_process& serve) {
        expect_clean_stop(serve);
        EXPECT_TRUE(eventually([&] {
            auto d = client_->depth(queue_);
            return d && d->consumers == 0;
        }));
        EXPECT_EQ(ready(), 0u) << "messages left unacked";
    }

    rabbitmq_server* broker_ = nullptr;
    std::string queue_;
    std::unique_ptr<amqp_client> client_;
};

TEST_F(RabbitmqServeTest, EachPublishedMessageStartsOneRunCausedByItsDeliveredAttempt) {
    write_config();
    serve_process serve;
    ASSERT_TRUE(serve.start(config(), log_file())) << serve.error;
    ASSERT_TRUE(eventually([&] { return consuming(); })) << log_text();
    // Discovery names the engine this node consumes (and only it).
    const auto doc = get_json(serve, "/.well-known/openwop");
    ASSERT_TRUE(doc.is_object());
    EXPECT_EQ(json::serialize(doc.at("queueBus")), R"({"supported":true,"backends":["rabbitmq"]})");

    auto ids = produce(*client_, 5);
    ASSERT_TRUE(eventually([&] { return delivered_count(serve) == ids.size(); })) << log_text();
    expect_one_run_per_message(serve, ids.size(), true);
    EXPECT_TRUE(eventually([&] { return drained(); }));

    // The same message id again is the same message: recognised, acked, no second run.
    produce(*client_, 1, 0);
    // A new id is a new message, even with the same content.
    produce(*client_, 1, 5);
    ASSERT_TRUE(eventually([&] { return delivered_count(serve) == 6; })) << log_text();
    EXPECT_TRUE(eventually([&] { return drained(); }));
    expect_one_run_per_message(serve, 6, false);
    stop_and_expect_all_acked(serve);
}

TEST_F(RabbitmqServeTest, BridgeSigkilledMidStreamLosesAndDuplicatesNothing) {
    // A small prefetch keeps the bridge mid-stream for a while.
    write_config({.prefetch = 8});
    constexpr int total = 300;
    constexpr int backlog = 200; // published before the bridge starts: busy from the start
    ASSERT_EQ(produce(*client_, backlog).size(), static_cast<std::size_t>(backlog));

    serve_process serve;
    ASSERT_TRUE(serve.start(config(), log_file())) << serve.error;
    std::thread producer([&] {
        amqp_client own(broker_->port());
        for (int first = backlog; first < total; first += 20) {
            produce(own, 20, first);
        }
    });
    // Kill once a good part was committed and more is still waiting.
    std::size_t committed_at_kill = 0;
    const bool consumed_some = eventually([&] {
        committed_at_kill = deliveries(serve).size();
        return committed_at_kill >= 40;
    });
    serve.signal(SIGKILL);
    const int killed = serve.wait_exit();
    producer.join();
    ASSERT_TRUE(consumed_some) << log_text();
    EXPECT_EQ(killed, -1);
    const auto ready_at_kill = ready();
    EXPECT_GT(ready_at_kill, 0u);
    RecordProperty("committed_at_kill", std::to_string(committed_at_kill));
    RecordProperty("ready_after_kill", std::to_string(ready_at_kill));

    serve_process again;
    ASSERT_TRUE(again.start(config(), log_file())) << again.error;
    ASSERT_TRUE(eventually([&] { return delivered_count(again) >= total; }, 90s)) << log_text();
    ASSERT_TRUE(eventually([&] { return drained(); }, 30s));
    expect_one_run_per_message(again, total, true);
    stop_and_expect_all_acked(again);
}

TEST_F(RabbitmqServeTest, BrokerKilledAndRestartedIsSurvivedAndLaterMessagesStartRuns) {
    write_config();
    serve_process serve;
    ASSERT_TRUE(serve.start(config(), log_file())) << serve.error;
    ASSERT_TRUE(eventually([&] { return consuming(); })) << log_text();
    produce(*client_, 3);
    ASSERT_TRUE(eventually([&] { return delivered_count(serve) == 3; })) << log_text();
    ASSERT_TRUE(eventually([&] { return drained(); }));

    const auto log_before = log_text().size();
    broker_->kill(); // a crash: the store on disk is what survives
    ASSERT_TRUE(eventually([&] { return log_has_since(log_before, "connection lost"); }))
        << log_text();
    // Meanwhile the subscription stays active (the outage is the connector's, not the host's).
    const auto sub = get_json(serve, subscription_path());
    ASSERT_TRUE(sub.is_object());
    EXPECT_EQ(sub.at("subscription").at("state").as_string(), "active");

    ASSERT_TRUE(broker_->start()) << broker_->error;
    ASSERT_TRUE(eventually([&] { return log_has_since(log_before, "connection regained"); }, 30s))
        << log_text();
    client_ = std::make_unique<amqp_client>(broker_->port());
    produce(*client_, 4, 100);
    ASSERT_TRUE(eventually([&] { return delivered_count(serve) == 7; }, 30s)) << log_text();
    EXPECT_TRUE(eventually([&] { return drained(); }));
    expect_one_run_per_message(serve, 7, true);
    stop_and_expect_all_acked(serve);
}

TEST_F(RabbitmqServeTest, BridgeStartedBeforeTheBrokerConsumesOnceItComesUp) {
    rabbitmq_server late; // a node of its own, not started yet
    write_config({.url = late.url()});
    serve_process serve;
    ASSERT_TRUE(serve.start(config(), log_file())) << serve.error;
    ASSERT_TRUE(eventually([&] {
        return log_text().find("no broker reachable yet") != std::string::npos;
    })) << log_text();
    http_call health;
    health.url = serve.url() + "/healthz";
    EXPECT_EQ(perform(health).status, 200);

    ASSERT_TRUE(late.start()) << late.error;
    amqp_client client(late.port());
    ASSERT_TRUE(client.declare_queue(queue_)) << client.error;
    ASSERT_TRUE(eventually(
        [&] {
            auto d = client.depth(queue_);
            return d && d->consumers == 1;
        },
        30s))
        << log_text();
    for (int i = 0; i < 3; ++i) {
        ASSERT_TRUE(client.publish(queue_, R"({"n":)" + std::to_string(i) + "}",
                                   "late-" + std::to_string(i)));
    }
    ASSERT_TRUE(eventually([&] { return delivered_count(serve) == 3; })) << log_text();
    expect_one_run_per_message(serve, 3, true);
    expect_clean_stop(serve);
    auto d = client.depth(queue_);
    ASSERT_TRUE(d);
    EXPECT_EQ(d->ready, 0u);
}

TEST_F(RabbitmqServeTest, MessageWhoseRunNeverStartsIsDeadLetteredAndAcked) {
    // The run host refuses the first three starts with a 500 (retryable), then starts runs.
    fake_runs_host runs_host;
    write_config({.runs = refusing_upstream_runs(runs_host, 3)});
    serve_process serve;
    ASSERT_TRUE(serve.start(config(), log_file())) << serve.error;
    ASSERT_TRUE(eventually([&] { return consuming(); })) << log_text();

    produce(*client_, 1);
    const std::string sub_path = subscription_path();
    json::array dead;
    ASSERT_TRUE(dead_letters_appear(serve, dead)) << log_text();
    ASSERT_EQ(dead.size(), 1u);
    const auto& rec = dead[0].as_object();
    EXPECT_EQ(rec.at("attempt").at("outcome").as_string(), "dead-lettered");
    EXPECT_EQ(rec.at("attempt").at("attempt").as_int64(), 3); // the retry policy's maxAttempts
    EXPECT_EQ(runs_host.requests().size(), 3u);
    const auto all = deliveries(serve);
    ASSERT_EQ(all.size(), 1u);
    EXPECT_EQ(all[0].at("status").as_string(), "dead_lettered");
    // Acked once committed: the poison message is not redelivered by the broker.
    EXPECT_TRUE(eventually([&] { return drained(); }));

    // A message without message_id has no stable identity: rejected without requeue, so the
    // queue's dead-letter exchange routes it to the dead-letter queue.
    ASSERT_TRUE(client_->publish(queue_, R"({"anonymous":true})", ""));
    ASSERT_TRUE(eventually([&] {
        auto d = client_->depth(queue_ + "-dlq");
        return d && d->ready == 1;
    })) << log_text();
    const auto rejected = client_->get(queue_ + "-dlq");
    ASSERT_TRUE(rejected);
    EXPECT_EQ(rejected->first, R"({"anonymous":true})");
    EXPECT_NE(log_text().find("message without message_id rejected"), std::string::npos);

    // Exhaustion dead-letters the subscription too: later messages are refused by the host and
    // wait unacked in the bridge (not lost, not busy-polled) ...
    EXPECT_EQ(get_json(serve, sub_path).at("subscription").at("state").as_string(),
              "dead-lettered");
    produce(*client_, 1, 1);
    ASSERT_TRUE(eventually([&] {
        return log_text().find("submit refused (subscription_not_active)") != std::string::npos;
    })) << log_text();
    EXPECT_EQ(deliveries(serve).size(), 1u);

    // ... until an operator re-activates the subscription: then they start runs.
    ASSERT_EQ(reactivate_subscription(serve), 200);
    ASSERT_TRUE(eventually([&] { return delivered_count(serve) == 1; }, 40s)) << log_text();
    EXPECT_EQ(deliveries(serve).size(), 2u);
    EXPECT_EQ(runs_host.runs_created(), 1);
    stop_and_expect_all_acked(serve);
}

TEST_F(RabbitmqServeTest, TwoNodesOnPostgresCompeteOnOneQueueAndStartOneRunPerMessage) {
    std::string unavailable;
    config_options o;
    o.store = postgres_store_line(unavailable);
    if (o.store.empty()) {
        GTEST_SKIP() << unavailable; // (a database that could not be made has failed the test)
    }
    o.prefetch = 8;
    const std::string configs[2] = {write_config(o, "node0.yaml"), write_config(o, "node1.yaml")};
    serve_process nodes[2];
    ASSERT_NO_FATAL_FAILURE(start_nodes(nodes, configs));
    auto& node0 = nodes[0];
    ASSERT_TRUE(eventually([&] {
        auto d = client_->depth(queue_);
        return d && d->consumers == 2;
    })) << node_log(0);

    constexpr int total = 120;
    ASSERT_EQ(produce(*client_, total).size(), static_cast<std::size_t>(total));
    ASSERT_TRUE(eventually([&] { return delivered_count(node0) >= total; }, 60s)) << node_logs();
    EXPECT_TRUE(eventually([&] { return drained(); }));
    expect_one_run_per_message(node0, total, true);
    // Both nodes were consumers of the queue.
    EXPECT_NE(node_log(0).find("consuming"), std::string::npos);
    EXPECT_NE(node_log(1).find("consuming"), std::string::npos);
    expect_clean_stops(nodes);
    EXPECT_EQ(ready(), 0u);
}

} // namespace
} // namespace wopbridge::testing::rabbitmq_serve_test
