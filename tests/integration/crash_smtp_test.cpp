// SIGKILL of the real `wopbridge serve` while concurrent SMTP sessions deliver mail to the email
// connector's listener, several times on one store: every message answered `250` survives as exactly
// one delivery and run, and re-sending it (same Message-ID) is a duplicate.
#include "support/bridge_reads.hpp"
#include "support/eventually.hpp"
#include "support/serve_process.hpp"
#include "support/smtp_client.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace wopbridge::testing::crash_smtp_test {
namespace {

constexpr const char* api_key = "hk_smtp";
constexpr const char* inbox = "inbox@example.com";

class CrashSmtpTest : public ::testing::Test {
protected:
    void SetUp() override {
        std::ofstream out(dir_.file("wopbridge.yaml"));
        out << sqlite_serve_prelude(api_key)
            << "runs: {local: {workflows: [{id: conformance-noop}]}}\n"
               "delivery: {retryPolicy: {baseDelay: 50ms, maxDelay: 200ms}, lease: 1s}\n"
               "connectors:\n"
               "  - {name: mail, module: email, settings: {listen: \"127.0.0.1:0\", "
               "maxConnections: 128}}\n"
               "subscriptions:\n"
               "  - {id: inbox, source: email, connector: mail, workflowId: conformance-noop,\n"
               "     settings: {addresses: [\""
            << inbox << "\"]}}\n";
    }

    // Starts serve and returns the SMTP port it logged (0 on failure).
    std::uint16_t start(serve_process& p) {
        const std::size_t skip = read_text_file(dir_.file("serve.log")).size();
        if (!p.start(dir_.file("wopbridge.yaml"), dir_.file("serve.log"))) {
            ADD_FAILURE() << p.error;
            return 0;
        }
        // The connector's log line carries the port inside an escaped JSON message.
        static const std::regex re(R"(smtp\.listening[^0-9]*port[^0-9]*([0-9]+))");
        std::uint16_t port = 0;
        eventually([&] {
            std::string text = read_text_file(dir_.file("serve.log")).substr(skip);
            std::smatch m;
            if (std::regex_search(text, m, re)) {
                port = static_cast<std::uint16_t>(std::stoi(m[1].str()));
            }
            return port != 0;
        });
        return port;
    }

    std::vector<delivery_row> deliveries(const serve_process& p) {
        bool ok = false;
        auto rows = read_all_deliveries(p.url(), api_key, "inbox", ok);
        EXPECT_TRUE(ok);
        return rows;
    }

    // Every delivery settled as delivered, and there are `n` of them.
    bool settled(const serve_process& p, std::size_t n) {
        bool ok = false;
        auto rows = read_all_deliveries(p.url(), api_key, "inbox", ok);
        if (!ok || rows.size() != n) {
            return false;
        }
        for (const auto& d : rows) {
            if (d.status != "delivered") {
                return false;
            }
        }
        return true;
    }

    temp_dir dir_;
};

TEST_F(CrashSmtpTest, MessagesAnswered250SurviveRepeatedSigkillWithExactlyOneRun) {
    std::uint64_t seed = std::random_device{}();
    if (const char* s = std::getenv("WOPBRIDGE_TEST_SEED")) {
        seed = std::strtoull(s, nullptr, 10);
    }
    std::printf("[ seed     ] WOPBRIDGE_TEST_SEED=%llu\n", static_cast<unsigned long long>(seed));
    std::mt19937_64 rng(seed);

    constexpr int rounds = 3;
    constexpr int per_round = 150;
    constexpr int sessions = 24;
    std::set<std::string> acked;      // Message-IDs answered 250
    std::set<std::string> unanswered; // sent, never answered 250
    std::set<std::string> sent;
    int next_id = 0;
    const std::string run_tag = std::to_string(rng());

    for (int round = 0; round < rounds; ++round) {
        serve_process serve;
        const std::uint16_t port = start(serve);
        ASSERT_NE(port, 0) << read_text_file(dir_.file("serve.log"));

        std::vector<std::string> ids(unanswered.begin(), unanswered.end());
        if (ids.size() > 40) {
            ids.resize(40); // some retries of unanswered mail ride along, like a sending MTA's
        }
        while (ids.size() < per_round) {
            ids.push_back("m" + std::to_string(next_id++) + "." + run_tag + "@client.test");
        }
        sent.insert(ids.begin(), ids.end());

        // At least 15 answers per round keeps the floor asserted below independent of the seed.
        const int kill_after = std::uniform_int_distribution<int>(15, per_round / 2)(rng);
        std::atomic<int> answered{0};
        std::atomic<std::size_t> cursor{0};
        std::mutex mu;
        std::map<std::string, int> codes;
        std::vector<std::thread> clients;
        for (int t = 0; t < sessions; ++t) {
            clients.emplace_back([&] {
                for (;;) {
                    std::size_t i = cursor.fetch_add(1);
                    if (i >= ids.size()) {
                        return;
                    }
                    auto r = smtp_send(port, "sender@client.test", inbox, ids[i], "hello " + ids[i],
                                       10000);
                    {
                        std::lock_guard lock(mu);
                        codes[ids[i]] = r.final_code;
                    }
                    if (r.final_code != 0) {
                        ++answered;
                    }
                    if (r.connect_error != 0) {
                        return; // the server is gone
                    }
                }
            });
        }
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (answered.load() < kill_after && std::chrono::steady_clock::now() < until) {
            std::this_thread::yield(); // bounded spin: a 10 ms poll would overshoot the point
        }
        serve.signal(SIGKILL);
        EXPECT_EQ(serve.wait_exit(), -1);
        for (auto& c : clients) {
            c.join();
        }
        std::printf("[ round %d  ] kill after %d answers: %d answered\n", round, kill_after,
                    answered.load());
        for (const auto& id : ids) {
            auto it = codes.find(id);
            const int code = it == codes.end() ? 0 : it->second;
            if (code == 250) {
                acked.insert(id);
                unanswered.erase(id);
            } else {
                EXPECT_TRUE(code == 0 || code / 100 == 4) << id << " answered " << code;
                if (!acked.count(id)) {
                    unanswered.insert(id);
                }
            }
        }
    }
    ASSERT_GE(acked.size(), 30u) << "too few acknowledged messages to prove anything";

    serve_process serve;
    const std::uint16_t port = start(serve);
    ASSERT_NE(port, 0);
    // Every acknowledged message was committed; let whatever was committed settle.
    std::size_t committed = 0;
    ASSERT_TRUE(eventually(
        [&] {
            auto rows = deliveries(serve);
            committed = rows.size();
            for (const auto& d : rows) {
                if (d.status != "delivered") {
                    return false;
                }
            }
            return true;
        },
        std::chrono::seconds(20)));
    EXPECT_GE(committed, acked.size()) << "an acknowledged message was lost";
    EXPECT_LE(committed, sent.size());

    // Re-sending the acknowledged messages changes nothing: each is a duplicate of itself.
    for (const auto& id : acked) {
        auto r = smtp_send(port, "sender@client.test", inbox, id, "hello " + id);
        ASSERT_EQ(r.final_code, 250) << id << " " << r.last_reply;
    }
    EXPECT_TRUE(settled(serve, committed)) << "a re-sent acknowledged message made a delivery";

    // Re-sending the unanswered ones: afterwards exactly one delivery per message ever sent.
    for (const auto& id : unanswered) {
        auto r = smtp_send(port, "sender@client.test", inbox, id, "hello " + id);
        ASSERT_EQ(r.final_code, 250) << id << " " << r.last_reply;
    }
    ASSERT_TRUE(eventually([&] { return settled(serve, sent.size()); }, std::chrono::seconds(20)))
        << deliveries(serve).size() << " deliveries for " << sent.size() << " messages";
    std::set<std::string> keys;
    std::set<std::string> runs;
    for (const auto& d : deliveries(serve)) {
        EXPECT_TRUE(keys.insert(d.dedup_key).second) << "two deliveries of " << d.dedup_key;
        EXPECT_TRUE(runs.insert(d.run_id).second);
        auto run = read_run(serve.url(), api_key, d.run_id);
        EXPECT_EQ(run.http_status, 200) << d.run_id;
    }
    serve.signal(SIGTERM);
    EXPECT_EQ(serve.wait_exit(), 0);
}

} // namespace
} // namespace wopbridge::testing::crash_smtp_test
