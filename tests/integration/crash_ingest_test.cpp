// SIGKILL of the real `wopbridge serve` while hundreds of signed ingests are in flight, three and
// more times on one store: every 2xx survives with exactly one delivery and one run, a re-post is a
// duplicate of that run, and an unanswered request never becomes two deliveries.
#include "support/bridge_reads.hpp"
#include "support/eventually.hpp"
#include "support/http_client.hpp"
#include "support/http_multi.hpp"
#include "support/serve_probe.hpp"
#include "support/serve_process.hpp"
#include "support/temp_dir.hpp"
#include "support/webhook_signer.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace wopbridge::testing::crash_ingest_test {
namespace {

constexpr const char* secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
constexpr const char* api_key = "hk_crash";

std::uint64_t test_seed() {
    if (const char* s = std::getenv("WOPBRIDGE_TEST_SEED")) {
        return std::strtoull(s, nullptr, 10);
    }
    return std::random_device{}();
}

class CrashIngestTest : public ::testing::Test {
protected:
    void SetUp() override { write_config(""); }

    // `delivery_extra`: more keys for the delivery map (", batchSize: 16").
    void write_config(const std::string& delivery_extra) {
        std::ofstream out(dir_.file("wopbridge.yaml"));
        out << "server: {listen: \"127.0.0.1:0\", threads: 4, "
               "rateLimits: {perSourceAddress: {rate: 100000, burst: 100000}}}\n"
               // a load from loopback: the default per-address limit is raised explicitly
               "auth:\n"
               "  apiKeys:\n"
               "    - {key: "
            << api_key
            << ", tenant: default, scopes: [webhooks:manage, runs:read]}\n"
               "store: {sqlite: {path: bridge.db}}\n"
               "hostKeyFile: host.key\n"
               "runs: {local: {workflows: [{id: conformance-noop}]}}\n"
               "delivery: {retryPolicy: {baseDelay: 50ms, maxDelay: 200ms}, lease: 1s"
            << delivery_extra << "}\n"
               "subscriptions:\n"
               "  - {id: orders, source: webhook, workflowId: conformance-noop, signingSecret: \""
            << secret << "\"}\n";
    }

    bool start(serve_process& p) {
        return p.start(dir_.file("wopbridge.yaml"), dir_.file("serve.log"));
    }

    static std::string body_for(const std::string& id) { return R"({"order":")" + id + "\"}"; }

    // Sends `calls` (`parallel` at a time) and SIGKILLs `serve` as soon as `kill_after` of them
    // were answered: the seeded kill point. Returns every reply (status 0: no answer).
    static std::vector<http_reply> send_and_kill(serve_process& serve,
                                                 const std::vector<http_call>& calls, int parallel,
                                                 int kill_after, std::atomic<int>& answered) {
        std::vector<http_reply> replies;
        std::thread client([&] { replies = perform_all(calls, parallel, &answered); });
        // Spin (bounded), not poll: answers arrive faster than a 10 ms poll could follow.
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (answered.load() < kill_after && std::chrono::steady_clock::now() < until) {
            std::this_thread::yield();
        }
        serve.signal(SIGKILL);
        EXPECT_EQ(serve.wait_exit(), -1);
        client.join();
        return replies;
    }

    temp_dir dir_;
};

TEST_F(CrashIngestTest, AcknowledgedIngestsSurviveRepeatedSigkillWithExactlyOneRun) {
    const std::uint64_t seed = test_seed();
    std::printf("[ seed     ] WOPBRIDGE_TEST_SEED=%llu\n", static_cast<unsigned long long>(seed));
    RecordProperty("seed", std::to_string(seed));
    std::mt19937_64 rng(seed);

    constexpr int rounds = 4;        // four kills
    constexpr int per_round = 300;   // requests in flight per round
    std::map<std::string, std::string> acked;  // webhook-id -> runId of its 2xx
    std::set<std::string> unanswered;          // sent, never answered
    std::set<std::string> sent;

    for (int round = 0; round < rounds; ++round) {
        serve_process serve;
        ASSERT_TRUE(start(serve)) << serve.error;

        std::vector<http_call> calls;
        std::vector<std::string> ids;
        // Re-sends of earlier unanswered requests (a provider retrying) ride along with new ones.
        for (const auto& id : unanswered) {
            if (ids.size() >= 60) {
                break;
            }
            ids.push_back(id);
        }
        while (ids.size() < per_round) {
            ids.push_back(fresh_webhook_id());
        }
        for (const auto& id : ids) {
            sent.insert(id);
            calls.push_back(signed_ingest_call(serve.url(), "orders", secret, id, body_for(id)));
        }

        // Kill at a seeded point: right after the k-th answer, with the other requests of the
        // round in flight (inside group commits). k >= 25 keeps 4 rounds above the floor below.
        const int kill_after = std::uniform_int_distribution<int>(25, per_round * 2 / 3)(rng);
        std::atomic<int> answered{0};
        auto replies = send_and_kill(serve, calls, per_round, kill_after, answered);
        std::printf("[ round %d  ] kill after %d answers: %d answered\n", round, kill_after,
                    answered.load());

        for (std::size_t i = 0; i < ids.size(); ++i) {
            const auto& r = replies[i];
            const std::string& id = ids[i];
            if (r.status == 202 || r.status == 200) {
                std::string run_id = json_string_field(r.body, "runId");
                ASSERT_FALSE(run_id.empty()) << r.body;
                if (auto it = acked.find(id); it != acked.end()) {
                    EXPECT_EQ(it->second, run_id) << "a second run for " << id;
                }
                acked[id] = run_id;
                unanswered.erase(id);
            } else if (r.status == 0) {
                if (!acked.count(id)) {
                    unanswered.insert(id);
                }
            } else {
                ADD_FAILURE() << "unexpected answer " << r.status << " " << r.body;
            }
        }
    }
    ASSERT_GE(acked.size(), 100u) << "too few acknowledged requests to prove anything";

    // After the last kill: every acknowledged request is a duplicate of its own run.
    serve_process serve;
    ASSERT_TRUE(start(serve)) << serve.error;
    std::vector<http_call> again;
    std::vector<std::string> again_ids(sent.begin(), sent.end());
    for (const auto& id : again_ids) {
        again.push_back(signed_ingest_call(serve.url(), "orders", secret, id, body_for(id)));
    }
    auto replies = perform_all(again, 64);
    std::map<std::string, std::string> run_of; // every sent id -> its one run
    for (std::size_t i = 0; i < again_ids.size(); ++i) {
        const auto& id = again_ids[i];
        const auto& r = replies[i];
        const std::string run_id = json_string_field(r.body, "runId");
        if (auto it = acked.find(id); it != acked.end()) {
            ASSERT_EQ(r.status, 200) << id << " " << r.body;
            EXPECT_EQ(json_string_field(r.body, "outcome"), "duplicate");
            EXPECT_EQ(run_id, it->second) << id;
        } else {
            // Never answered: it may or may not have been committed, but it is one delivery now.
            ASSERT_TRUE(r.status == 200 || r.status == 202) << id << " " << r.body;
        }
        run_of[id] = run_id;
    }

    // Exactly one delivery per request sent, each with its own dedup key and run, all delivered.
    std::vector<delivery_row> rows;
    ASSERT_TRUE(eventually(
        [&] {
            bool ok = false;
            rows = read_all_deliveries(serve.url(), api_key, "orders", ok);
            if (!ok || rows.size() < sent.size()) {
                return false;
            }
            for (const auto& d : rows) {
                if (d.status != "delivered") {
                    return false;
                }
            }
            return true;
        },
        std::chrono::seconds(20)))
        << rows.size() << " deliveries for " << sent.size() << " requests";
    EXPECT_EQ(rows.size(), sent.size());
    std::set<std::string> keys;
    std::set<std::string> runs;
    for (const auto& d : rows) {
        EXPECT_TRUE(keys.insert(d.dedup_key).second) << "two deliveries of " << d.dedup_key;
        EXPECT_TRUE(runs.insert(d.run_id).second) << "two deliveries of run " << d.run_id;
    }
    for (const auto& [id, run_id] : run_of) {
        EXPECT_EQ(runs.count(run_id), 1u) << id << " answered run " << run_id
                                          << " which no delivery has";
    }
    // Each acknowledged run exists once and has started (the local ledger completes it at once).
    for (const auto& [id, run_id] : acked) {
        auto run = read_run(serve.url(), api_key, run_id);
        ASSERT_EQ(run.http_status, 200) << run_id;
        EXPECT_EQ(run.status, "completed") << run_id;
    }
    serve.signal(SIGTERM);
    EXPECT_EQ(serve.wait_exit(), 0);
}

// Small batches make many claim and record commits while the load runs, so the kills land inside
// batched claims and records: no attempt event is lost, no run starts twice, every run's log is
// the delivered attempt at sequence 0 and one run.started caused by it.
TEST_F(CrashIngestTest, SigkillInsideBatchedClaimsAndRecordsLosesNoAttemptAndStartsNoRunTwice) {
    write_config(", batchSize: 16, concurrency: 64");
    const std::uint64_t seed = test_seed();
    std::printf("[ seed     ] WOPBRIDGE_TEST_SEED=%llu\n", static_cast<unsigned long long>(seed));
    RecordProperty("seed", std::to_string(seed));
    std::mt19937_64 rng(seed);

    constexpr int rounds = 3;
    constexpr int per_round = 400;
    std::map<std::string, std::string> acked; // webhook-id -> runId of its 2xx
    for (int round = 0; round < rounds; ++round) {
        serve_process serve;
        ASSERT_TRUE(start(serve)) << serve.error;
        std::vector<std::string> ids;
        std::vector<http_call> calls;
        for (int i = 0; i < per_round; ++i) {
            ids.push_back(fresh_webhook_id());
            calls.push_back(
                signed_ingest_call(serve.url(), "orders", secret, ids.back(), body_for(ids.back())));
        }
        const int kill_after = std::uniform_int_distribution<int>(50, per_round - 50)(rng);
        std::atomic<int> answered{0};
        auto replies = send_and_kill(serve, calls, 32, kill_after, answered);
        std::printf("[ round %d  ] kill after %d answers\n", round, kill_after);
        for (std::size_t i = 0; i < ids.size(); ++i) {
            if (replies[i].status == 202 || replies[i].status == 200) {
                acked[ids[i]] = json_string_field(replies[i].body, "runId");
            }
        }
    }
    ASSERT_GE(acked.size(), 150u) << "too few acknowledged requests to prove anything";

    serve_process serve;
    ASSERT_TRUE(start(serve)) << serve.error;
    std::vector<delivery_row> rows;
    ASSERT_TRUE(eventually(
        [&] {
            bool ok = false;
            rows = read_all_deliveries(serve.url(), api_key, "orders", ok);
            return ok && std::all_of(rows.begin(), rows.end(),
                                     [](const delivery_row& d) { return d.status == "delivered"; });
        },
        std::chrono::seconds(30)));
    // Every delivery (acknowledged or committed without an answer) started exactly one run whose
    // run.started is caused by its delivered attempt; every acknowledged run is among them.
    std::vector<std::string> run_ids;
    EXPECT_TRUE(serve_probe(serve.url(), api_key).runs_started("orders", rows.size(), &run_ids));
    const std::set<std::string> started(run_ids.begin(), run_ids.end());
    EXPECT_EQ(started.size(), rows.size()) << "two deliveries share a run";
    for (const auto& [id, run_id] : acked) {
        EXPECT_EQ(started.count(run_id), 1u) << id << " was answered with run " << run_id;
    }
    serve.signal(SIGTERM);
    EXPECT_EQ(serve.wait_exit(), 0);
}

} // namespace
} // namespace wopbridge::testing::crash_ingest_test
