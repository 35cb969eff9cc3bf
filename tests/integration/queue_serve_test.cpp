// The queue connector through the real `wopbridge serve` and a real redis-server on loopback, with
// messages produced by the real `redis-cli XADD`: one run per message caused by its delivered
// attempt, a SIGKILLed bridge that loses and duplicates nothing, a Redis restart (and a Redis that
// comes up after the bridge) survived, and a message whose run never starts dead-lettered and
// acked. Every check goes through the REST API (deliveries, runs, poll, dead letters) or Redis.
#include "app/host_key_check.hpp"
#include "core/secret_box.hpp"
#include "store/store.hpp"
#include "support/broker_serve_fixture.hpp"
#include "support/eventually.hpp"
#include "support/http_client.hpp"
#include "support/http_test_server.hpp"
#include "support/redis_server.hpp"
#include "support/serve_process.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace wopbridge::testing::queue_serve_test {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

constexpr const char* api_key = "hk_queue";
constexpr const char* sub_id = "orders";
// The host key is fixed so the test can open the store's data key and compute the host-opaque
// dedup key of every message ("dk_" + HMAC(data key, subscription + "\n" + "<stream>:<id>")).
const std::string host_key(32, 'q');

struct config_options {
    std::string runs = "runs: {local: {workflows: [{id: order-intake}]}}\n";
    std::string start_from = "new";
    int max_in_flight = 64;
    int batch_size = 16;
};

class QueueServeTest : public broker_serve_fixture {
  protected:
    QueueServeTest() : broker_serve_fixture(api_key, sub_id) {}

    void SetUp() override {
        WOPBRIDGE_REQUIRE_REDIS();
        write_host_key(host_key);
    }

    void write_config(const redis_server& redis, const config_options& o = {}) {
        std::ofstream out(dir_.file("wopbridge.yaml"));
        out << config_head(o.runs)
            << "  - name: redis-orders\n"
               "    module: queue\n"
               "    settings: {url: \""
            << redis.url() << "\", consumer: bridge-1, blockMs: 200, batchSize: " << o.batch_size
            << ", maxInFlight: " << o.max_in_flight
            << ", retryDelayMs: 100, connectTimeoutMs: 500, commandTimeoutMs: 2000}\n"
               "subscriptions:\n"
               "  - id: "
            << sub_id
            << "\n"
               "    source: queue\n"
               "    connector: redis-orders\n"
               "    workflowId: order-intake\n"
               "    settings: {stream: orders, group: wopbridge, startFrom: "
            << o.start_from << "}\n";
    }

    std::string dedup_key_of(const std::string& message_id) {
        if (!data_key_) {
            // The store was bound by serve's first start: its data key, opened as serve opens it.
            sqlite_options o;
            o.path = dir_.file("bridge.db");
            auto st = open_sqlite_store(o);
            EXPECT_TRUE(st.has_value());
            system_random_source random;
            auto unlocked = unlock_data_key(**st, *secret_box::from_key(host_key), random, false);
            EXPECT_TRUE(unlocked && unlocked->data_key);
            data_key_ = *unlocked->data_key;
        }
        return data_key_->dedup_key(sub_id, std::string("orders:") + message_id);
    }

    // XADDs `n` messages through one real redis-cli (commands on its stdin); returns their ids.
    static std::vector<std::string> produce(const redis_server& redis, int n, int first = 0) {
        std::string script;
        for (int i = 0; i < n; ++i) {
            script += "XADD orders * n " + std::to_string(first + i) + " customer c-" +
                      std::to_string((first + i) % 7) + "\n";
        }
        auto r = redis.cli_script(script);
        EXPECT_EQ(r.exit_code, 0) << r.out;
        std::vector<std::string> ids;
        std::istringstream lines(r.out);
        for (std::string line; std::getline(lines, line);) {
            if (!line.empty()) {
                ids.push_back(line);
            }
        }
        EXPECT_EQ(ids.size(), static_cast<std::size_t>(n)) << r.out;
        return ids;
    }

    // XPENDING summary: how many messages of the group are delivered but not acked.
    static long pending(const redis_server& redis) {
        auto r = redis.cli({"XPENDING", "orders", "wopbridge"});
        if (r.exit_code != 0) {
            return -1;
        }
        try {
            return std::stol(r.out.substr(0, r.out.find('\n')));
        } catch (const std::exception&) {
            return -1;
        }
    }

    // XINFO GROUPS orders, our group's fields (name, consumers, pending, entries-read, lag...).
    static std::map<std::string, std::string> group_info(const redis_server& redis) {
        auto r = redis.cli({"XINFO", "GROUPS", "orders"});
        std::map<std::string, std::string> out;
        std::istringstream lines(r.out);
        std::vector<std::string> v;
        for (std::string line; std::getline(lines, line);) {
            v.push_back(line);
        }
        for (std::size_t i = 0; i + 1 < v.size(); i += 2) {
            out[v[i]] = v[i + 1];
        }
        return out;
    }

    static bool group_exists(const redis_server& redis) {
        auto r = redis.cli({"XINFO", "GROUPS", "orders"});
        return r.exit_code == 0 && r.out.find("wopbridge") != std::string::npos;
    }

    // Every produced message made exactly one delivery, delivered, with its own run; and each
    // run's run.started is caused by the trigger.delivery.attempted that delivered it.
    void expect_one_run_per_message(const serve_process& serve,
                                    const std::vector<std::string>& ids, bool check_causation) {
        std::map<std::string, std::string> expected; // dedup key -> message id
        for (const auto& id : ids) {
            expected.emplace(dedup_key_of(id), id);
        }
        ASSERT_EQ(expected.size(), ids.size()) << "message ids must be distinct";
        std::map<std::string, std::string> key_of_run;
        expect_one_delivered_run_each(serve, ids.size(), "message", key_of_run,
                                      [&](const std::string& key) { return expected.count(key) > 0; });
        if (HasFatalFailure() || !check_causation) {
            return;
        }
        for (const auto& [run_id, key] : key_of_run) {
            const auto snap = get_json(serve, "/v1/runs/" + run_id);
            ASSERT_TRUE(snap.is_object());
            EXPECT_EQ(snap.at("subscriptionId").as_string(), sub_id);
        }
        expect_runs_caused_by_their_attempts(
            serve, key_of_run, [&](const std::string&, const std::string& attempt_key) {
                EXPECT_TRUE(expected.count(attempt_key));
            });
    }

    std::optional<secret_box> data_key_;
};

TEST_F(QueueServeTest, DiscoveryAdvertisesTheQueueBusOnlyWhileTheModuleIsLoaded) {
    redis_server redis;
    write_config(redis);
    {
        serve_process serve;
        ASSERT_TRUE(serve.start(config(), log_file())) << serve.error;
        const auto doc = get_json(serve, "/.well-known/openwop");
        ASSERT_TRUE(doc.is_object());
        EXPECT_EQ(json::serialize(doc.at("queueBus")),
                  R"({"supported":true,"backends":["redis-streams"]})");
        const auto& sources = doc.at("triggerBridge").at("sources").as_array();
        EXPECT_NE(std::find(sources.begin(), sources.end(), json::value("queue")), sources.end());
        serve.signal(SIGTERM);
        EXPECT_EQ(serve.wait_exit(), 0);
    }
    // The same host without the connector: no queue bus, no queue source.
    std::ofstream(config()) << "server: {listen: \"127.0.0.1:0\"}\n"
                               "store: {sqlite: {path: bridge.db}}\n"
                               "hostKeyFile: host.key\n";
    serve_process plain;
    ASSERT_TRUE(plain.start(config(), log_file())) << plain.error;
    const auto doc = get_json(plain, "/.well-known/openwop");
    ASSERT_TRUE(doc.is_object());
    EXPECT_FALSE(doc.as_object().contains("queueBus"));
    const auto& sources = doc.at("triggerBridge").at("sources").as_array();
    EXPECT_EQ(std::find(sources.begin(), sources.end(), json::value("queue")), sources.end());
    plain.signal(SIGTERM);
    EXPECT_EQ(plain.wait_exit(), 0);
}

TEST_F(QueueServeTest, EachMessageFromRedisCliStartsOneRunCausedByItsDeliveredAttempt) {
    redis_server redis;
    write_config(redis);
    serve_process serve;
    ASSERT_TRUE(serve.start(config(), log_file())) << serve.error;
    // startFrom: new creates the group at "$": produce only once it exists.
    ASSERT_TRUE(eventually([&] { return group_exists(redis); })) << log_text();

    std::vector<std::string> ids;
    for (int i = 0; i < 5; ++i) {
        auto r = redis.cli({"XADD", "orders", "*", "customer", "c-" + std::to_string(i), "total",
                            "9.50"});
        ASSERT_EQ(r.exit_code, 0);
        ids.push_back(r.out);
    }
    ASSERT_TRUE(eventually([&] { return delivered_count(serve) == ids.size(); })) << log_text();
    expect_one_run_per_message(serve, ids, true);
    // Acked only after the commit, and acked: nothing stays pending.
    EXPECT_TRUE(eventually([&] { return pending(redis) == 0; })) << pending(redis);

    // Producing the same content again is a new message (new id), so a new run.
    auto r = redis.cli({"XADD", "orders", "*", "customer", "c-0", "total", "9.50"});
    ids.push_back(r.out);
    ASSERT_TRUE(eventually([&] { return delivered_count(serve) == ids.size(); })) << log_text();
    expect_one_run_per_message(serve, ids, false);
    expect_clean_stop(serve);
}

TEST_F(QueueServeTest, BridgeSigkilledMidStreamLosesAndDuplicatesNothing) {
    redis_server redis;
    // Small reads and a small in-flight window keep the bridge mid-stream for a while.
    write_config(redis, {.start_from = "beginning", .max_in_flight = 8, .batch_size = 4});
    constexpr int total = 300;
    constexpr int backlog = 200; // produced before the bridge starts: it is busy from the start
    constexpr int chunk = 20;
    std::mutex mu;
    std::vector<std::string> ids;
    for (int first = 0; first < backlog; first += chunk) {
        auto got = produce(redis, chunk, first);
        ids.insert(ids.end(), got.begin(), got.end());
    }

    serve_process serve;
    ASSERT_TRUE(serve.start(config(), log_file())) << serve.error;
    // The rest is XADDed while the bridge consumes and is killed.
    std::thread producer([&] {
        for (int first = backlog; first < total; first += chunk) {
            auto got = produce(redis, chunk, first);
            std::lock_guard lock(mu);
            ids.insert(ids.end(), got.begin(), got.end());
        }
    });
    // Kill while the group has messages read but not acked, after a good part was consumed.
    long read_at_kill = 0;
    const bool consumed_some = eventually([&] {
        const auto g = group_info(redis);
        const auto read = g.find("entries-read"); // empty (nil) before the first read
        read_at_kill = read != g.end() && !read->second.empty() ? std::stol(read->second) : 0;
        return read_at_kill >= 40 && g.count("pending") && g.at("pending") != "0";
    });
    serve.signal(SIGKILL);
    const int killed = serve.wait_exit();
    producer.join();
    ASSERT_TRUE(consumed_some) << log_text();
    EXPECT_EQ(killed, -1);
    ASSERT_EQ(ids.size(), static_cast<std::size_t>(total));
    // Mid-stream: killed with messages left to consume (and typically some read, not acked).
    EXPECT_LT(read_at_kill, total);
    const long pending_at_kill = pending(redis);
    RecordProperty("read_at_kill", std::to_string(read_at_kill));
    RecordProperty("pending_at_kill", std::to_string(pending_at_kill));

    serve_process again;
    ASSERT_TRUE(again.start(config(), log_file())) << again.error;
    ASSERT_TRUE(eventually([&] { return delivered_count(again) >= total; }, 60s)) << log_text();
    ASSERT_TRUE(eventually([&] { return pending(redis) == 0; })) << pending(redis);
    expect_one_run_per_message(again, ids, true);
    expect_clean_stop(again);
}

TEST_F(QueueServeTest, RedisRestartIsSurvivedAndLaterMessagesStartRuns) {
    redis_server redis;
    write_config(redis);
    serve_process serve;
    ASSERT_TRUE(serve.start(config(), log_file())) << serve.error;
    ASSERT_TRUE(eventually([&] { return group_exists(redis); })) << log_text();
    auto ids = produce(redis, 3);
    ASSERT_TRUE(eventually([&] { return delivered_count(serve) == 3; })) << log_text();

    // SIGTERM: Redis writes its AOF and exits; the stream, group and acks survive in its dir.
    const auto log_before = log_text().size();
    redis.stop();
    ASSERT_TRUE(eventually([&] {
        return log_has_since(log_before, "connect failed");
    })) << log_text();
    // Meanwhile the subscription stays active (the outage is the connector's, not the host's).
    const auto sub = get_json(serve, subscription_path());
    ASSERT_TRUE(sub.is_object());
    EXPECT_EQ(sub.at("subscription").at("state").as_string(), "active");

    redis.start();
    ASSERT_TRUE(eventually([&] {
        return log_has_since(log_before, "consuming as bridge-1");
    })) << log_text();
    auto more = produce(redis, 4, 100);
    ids.insert(ids.end(), more.begin(), more.end());
    ASSERT_TRUE(eventually([&] { return delivered_count(serve) == ids.size(); })) << log_text();
    EXPECT_TRUE(eventually([&] { return pending(redis) == 0; })) << pending(redis);
    expect_one_run_per_message(serve, ids, true);
    expect_clean_stop(serve);
}

TEST_F(QueueServeTest, BridgeStartedBeforeRedisConsumesOnceRedisComesUp) {
    redis_server redis(redis_server_options{.password = {}, .defer_start = true});
    write_config(redis);
    serve_process serve;
    // The bridge starts and serves while its Redis is down; the connector keeps retrying.
    ASSERT_TRUE(serve.start(config(), log_file())) << serve.error;
    ASSERT_TRUE(eventually([&] { return log_text().find("connect failed") != std::string::npos; }))
        << log_text();
    http_call health;
    health.url = serve.url() + "/healthz";
    EXPECT_EQ(perform(health).status, 200);

    redis.start();
    ASSERT_TRUE(eventually([&] { return group_exists(redis); })) << log_text();
    auto ids = produce(redis, 3);
    ASSERT_TRUE(eventually([&] { return delivered_count(serve) == ids.size(); })) << log_text();
    expect_one_run_per_message(serve, ids, true);
    EXPECT_TRUE(eventually([&] { return pending(redis) == 0; })) << pending(redis);
    expect_clean_stop(serve);
}

TEST_F(QueueServeTest, MessageWhoseRunNeverStartsIsDeadLetteredAndAcked) {
    // The run host refuses the first three starts with a 500 (retryable), then starts runs.
    fake_runs_host runs_host;
    redis_server redis;
    write_config(redis, {.runs = refusing_upstream_runs(runs_host, 3)});
    serve_process serve;
    ASSERT_TRUE(serve.start(config(), log_file())) << serve.error;
    ASSERT_TRUE(eventually([&] { return group_exists(redis); })) << log_text();

    auto ids = produce(redis, 1);
    ASSERT_EQ(ids.size(), 1u);
    const std::string sub_path = subscription_path();
    json::array dead;
    ASSERT_TRUE(dead_letters_appear(serve, dead)) << log_text();
    ASSERT_EQ(dead.size(), 1u);
    const auto& rec = dead[0].as_object();
    EXPECT_EQ(rec.at("subscriptionId").as_string(), sub_id);
    EXPECT_EQ(rec.at("attempt").at("outcome").as_string(), "dead-lettered");
    EXPECT_EQ(rec.at("attempt").at("attempt").as_int64(), 3); // the retry policy's maxAttempts
    EXPECT_EQ(rec.at("attempt").at("dedupKey").as_string(), dedup_key_of(ids[0]));
    EXPECT_EQ(runs_host.requests().size(), 3u);
    // Acked once committed: the poison message does not stay pending.
    EXPECT_TRUE(eventually([&] { return pending(redis) == 0; })) << pending(redis);
    auto all = deliveries(serve);
    ASSERT_EQ(all.size(), 1u);
    EXPECT_EQ(all[0].at("status").as_string(), "dead_lettered");

    // Exhaustion dead-letters the subscription too (the contract's state machine): later
    // messages are refused by the host and stay pending in Redis (not lost, not busy-polled) ...
    EXPECT_EQ(get_json(serve, sub_path).at("subscription").at("state").as_string(),
              "dead-lettered");
    produce(redis, 1, 1);
    ASSERT_TRUE(eventually([&] {
        return log_text().find("submit refused (subscription_not_active)") != std::string::npos;
    })) << log_text();
    EXPECT_EQ(pending(redis), 1);
    EXPECT_EQ(deliveries(serve).size(), 1u);

    // ... until an operator re-activates the subscription: then they start runs.
    ASSERT_EQ(reactivate_subscription(serve), 200);
    ASSERT_TRUE(eventually([&] { return delivered_count(serve) == 1; })) << log_text();
    EXPECT_TRUE(eventually([&] { return pending(redis) == 0; })) << pending(redis);
    all = deliveries(serve);
    ASSERT_EQ(all.size(), 2u);
    EXPECT_EQ(runs_host.runs_created(), 1);
    // One log line per refused re-read round, not one per poll of retryDelayMs (100 ms).
    const auto text = log_text();
    std::size_t refusals = 0;
    for (auto at = text.find("submit refused"); at != std::string::npos;
         at = text.find("submit refused", at + 1)) {
        ++refusals;
    }
    EXPECT_LE(refusals, 12u) << text;
    expect_clean_stop(serve);
}

} // namespace
} // namespace wopbridge::testing::queue_serve_test
