// The rabbitmq connector through the real `wopbridge serve` and a real RabbitMQ node on loopback,
// with messages published by the real C client (rabbitmq-c): one run per message caused by its
// delivered attempt, a SIGKILLed bridge that loses and duplicates nothing, a broker killed and
// restarted under a running bridge, a message whose run never starts dead-lettered and acked, a
// message without message_id rejected to the queue's dead-letter queue, and two nodes on
// PostgreSQL competing on one queue. Every check goes through the REST API (deliveries, runs,
// poll, dead letters), or the queue's depth in the broker (passive queue.declare). The suite
// shares one RabbitMQ node (boot takes seconds); each test has its own queue.
#include "support/eventually.hpp"
#include "support/http_client.hpp"
#include "support/http_test_server.hpp"
#include "support/postgres_server.hpp"
#include "support/rabbitmq_server.hpp"
#include "support/serve_process.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace wopbridge::testing {
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

class RabbitmqServeTest : public ::testing::Test {
  protected:
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
        const int fd = ::open(dir_.file("host.key").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        ASSERT_GE(fd, 0);
        ASSERT_EQ(::write(fd, host_key.data(), host_key.size()),
                  static_cast<ssize_t>(host_key.size()));
        ::close(fd);
    }

    std::string write_config(const config_options& o = {},
                             const std::string& name = "wopbridge.yaml") {
        const std::string path = dir_.file(name);
        std::ofstream out(path);
        if (o.store.empty()) {
            out << sqlite_serve_prelude(api_key);
        } else {
            out << "server: {listen: \"127.0.0.1:0\"}\n"
                   "auth:\n"
                   "  apiKeys:\n"
                   "    - {key: "
                << api_key << ", tenant: default, scopes: [webhooks:manage, runs:read]}\n"
                << o.store << "hostKeyFile: host.key\n";
        }
        out << o.runs
            << "delivery:\n"
               "  retryPolicy: {maxAttempts: 3, backoff: none}\n"
               // An attempt in flight when the bridge is SIGKILLed is retried after its lease.
               "  lease: 2s\n"
               "  breaker: {failureThreshold: 100}\n"
               "deadLetter: {maxPageSize: 1000}\n"
               "connectors:\n"
               "  - name: rabbit-orders\n"
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

    std::string config() const { return dir_.file("wopbridge.yaml"); }
    std::string log_file() const { return dir_.file("serve.log"); }
    std::string log_text() const { return read_text_file(log_file()); }

    static json::value get_json(const serve_process& serve, const std::string& path) {
        http_call c;
        c.url = serve.url() + path;
        c.headers = {{"authorization", std::string("Bearer ") + api_key}};
        auto r = perform(c);
        if (r.status != 200) {
            ADD_FAILURE() << path << " answered " << r.status << " " << r.body << r.error;
            return json::value{};
        }
        return json::parse(r.body);
    }

    static json::array deliveries(const serve_process& serve) {
        auto v = get_json(serve, std::string("/v1/trigger-subscriptions/") + sub_id +
                                     "/deliveries?limit=1000");
        if (!v.is_object()) {
            return {};
        }
        EXPECT_FALSE(v.as_object().contains("nextCursor"));
        return v.at("deliveries").as_array();
    }

    static std::size_t delivered_count(const serve_process& serve) {
        std::size_t n = 0;
        for (const auto& d : deliveries(serve)) {
            n += d.at("status").as_string() == "delivered" ? 1 : 0;
        }
        return n;
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
        const auto all = deliveries(serve);
        EXPECT_EQ(all.size(), messages);
        std::set<std::string> seen_keys;
        std::set<std::string> runs;
        std::map<std::string, std::string> key_of_run;
        for (const auto& dv : all) {
            const auto& d = dv.as_object();
            const std::string key(d.at("dedupKey").as_string());
            EXPECT_TRUE(seen_keys.insert(key).second) << "two deliveries of one message: " << key;
            EXPECT_EQ(d.at("status").as_string(), "delivered") << json::serialize(d);
            ASSERT_TRUE(d.contains("runId")) << json::serialize(d);
            const std::string run(d.at("runId").as_string());
            EXPECT_TRUE(runs.insert(run).second);
            key_of_run[run] = key;
        }
        EXPECT_EQ(runs.size(), messages);
        if (!check_causation) {
            return;
        }
        for (const auto& run_id : runs) {
            const auto poll = get_json(serve, "/v1/runs/" + run_id + "/events/poll?timeout=1");
            ASSERT_TRUE(poll.is_object());
            std::string attempt_event_id;
            std::string causation;
            int started = 0;
            for (const auto& ev : poll.at("events").as_array()) {
                const auto& e = ev.as_object();
                if (e.at("type").as_string() == "trigger.delivery.attempted") {
                    const auto& p = e.at("payload").as_object();
                    if (p.at("outcome").as_string() == "delivered") {
                        EXPECT_EQ(p.at("runId").as_string(), run_id);
                        EXPECT_EQ(p.at("dedupKey").as_string(), key_of_run[run_id]);
                        attempt_event_id = e.at("eventId").as_string();
                    }
                } else if (e.at("type").as_string() == "run.started") {
                    ++started;
                    if (e.contains("causationId")) {
                        causation = e.at("causationId").as_string();
                    }
                }
            }
            EXPECT_EQ(started, 1) << run_id;
            EXPECT_FALSE(attempt_event_id.empty()) << run_id;
            EXPECT_EQ(causation, attempt_event_id) << run_id;
        }
    }

    // SIGTERM, then the queue holds nothing: a message left unacked would be requeued when the
    // bridge's connection closed.
    void stop_and_expect_all_acked(serve_process& serve) {
        serve.signal(SIGTERM);
        EXPECT_EQ(serve.wait_exit(), 0) << log_text();
        EXPECT_TRUE(eventually([&] {
            auto d = client_->depth(queue_);
            return d && d->consumers == 0;
        }));
        EXPECT_EQ(ready(), 0u) << "messages left unacked";
    }

    temp_dir dir_;
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
    ASSERT_TRUE(eventually([&] {
        return log_text().substr(log_before).find("connection lost") != std::string::npos;
    })) << log_text();
    // Meanwhile the subscription stays active (the outage is the connector's, not the host's).
    const auto sub = get_json(serve, std::string("/v1/trigger-subscriptions/") + sub_id);
    ASSERT_TRUE(sub.is_object());
    EXPECT_EQ(sub.at("subscription").at("state").as_string(), "active");

    ASSERT_TRUE(broker_->start()) << broker_->error;
    ASSERT_TRUE(eventually(
        [&] {
            return log_text().substr(log_before).find("connection regained") != std::string::npos;
        },
        30s))
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
    serve.signal(SIGTERM);
    EXPECT_EQ(serve.wait_exit(), 0) << log_text();
    auto d = client.depth(queue_);
    ASSERT_TRUE(d);
    EXPECT_EQ(d->ready, 0u);
}

TEST_F(RabbitmqServeTest, MessageWhoseRunNeverStartsIsDeadLetteredAndAcked) {
    // The run host refuses the first three starts with a 500 (retryable), then starts runs.
    fake_runs_host runs_host;
    for (int i = 0; i < 3; ++i) {
        runs_host.script(http_response{500,
                                       {{"content-type", "application/json"}},
                                       R"({"error":"internal_error","message":"down"})"});
    }
    write_config(
        {.runs = "runs: {upstream: {baseUrl: \"" + runs_host.base_url() + "\", timeout: 2s}}\n"});
    serve_process serve;
    ASSERT_TRUE(serve.start(config(), log_file())) << serve.error;
    ASSERT_TRUE(eventually([&] { return consuming(); })) << log_text();

    produce(*client_, 1);
    const std::string sub_path = std::string("/v1/trigger-subscriptions/") + sub_id;
    json::array dead;
    ASSERT_TRUE(eventually([&] {
        auto page = get_json(serve, sub_path + "/dead-letters?limit=10");
        if (!page.is_object()) {
            return false;
        }
        dead = page.at("deliveries").as_array();
        return !dead.empty();
    })) << log_text();
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
    http_call patch;
    patch.method = "PATCH";
    patch.url = serve.url() + sub_path;
    patch.headers = {{"authorization", std::string("Bearer ") + api_key},
                     {"content-type", "application/json"}};
    patch.body = R"({"state":"active"})";
    ASSERT_EQ(perform(patch).status, 200);
    ASSERT_TRUE(eventually([&] { return delivered_count(serve) == 1; }, 40s)) << log_text();
    EXPECT_EQ(deliveries(serve).size(), 2u);
    EXPECT_EQ(runs_host.runs_created(), 1);
    stop_and_expect_all_acked(serve);
}

TEST_F(RabbitmqServeTest, TwoNodesOnPostgresCompeteOnOneQueueAndStartOneRunPerMessage) {
    auto* pg = postgres_server::shared();
    if (pg == nullptr) {
        GTEST_SKIP() << "PostgreSQL unavailable: " << postgres_server::shared_unavailable_reason();
    }
    const auto db = pg->create_database();
    ASSERT_FALSE(db.empty());
    config_options o;
    o.store = "store: {postgres: {url: \"" + pg->url(db) + "\"}}\n";
    o.prefetch = 8;
    const auto cfg0 = write_config(o, "node0.yaml");
    const auto cfg1 = write_config(o, "node1.yaml");
    serve_process node0;
    serve_process node1;
    ASSERT_TRUE(node0.start(cfg0, dir_.file("node0.log"))) << node0.error;
    ASSERT_TRUE(node1.start(cfg1, dir_.file("node1.log"))) << node1.error;
    ASSERT_TRUE(eventually([&] {
        auto d = client_->depth(queue_);
        return d && d->consumers == 2;
    })) << read_text_file(dir_.file("node0.log"));

    constexpr int total = 120;
    ASSERT_EQ(produce(*client_, total).size(), static_cast<std::size_t>(total));
    ASSERT_TRUE(eventually([&] { return delivered_count(node0) >= total; }, 60s))
        << read_text_file(dir_.file("node0.log")) << read_text_file(dir_.file("node1.log"));
    EXPECT_TRUE(eventually([&] { return drained(); }));
    expect_one_run_per_message(node0, total, true);
    // Both nodes were consumers of the queue.
    EXPECT_NE(read_text_file(dir_.file("node0.log")).find("consuming"), std::string::npos);
    EXPECT_NE(read_text_file(dir_.file("node1.log")).find("consuming"), std::string::npos);
    node0.signal(SIGTERM);
    node1.signal(SIGTERM);
    EXPECT_EQ(node0.wait_exit(), 0);
    EXPECT_EQ(node1.wait_exit(), 0);
    EXPECT_EQ(ready(), 0u);
}

} // namespace
} // namespace wopbridge::testing
