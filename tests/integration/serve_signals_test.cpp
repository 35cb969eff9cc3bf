// Process-level signal handling of `wopbridge serve`: SIGTERM during a burst of signed ingests loses
// no acknowledged event, and SIGHUP re-reads the subscriptions without a restart.
#include "support/http_client.hpp"
#include "support/serve_process.hpp"
#include "support/temp_dir.hpp"
#include "support/webhook_signer.hpp"

#include "support/eventually.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <ctime>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace wopbridge::testing::serve_signals_test {
namespace {

constexpr const char* secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

class ServeSignalsTest : public ::testing::Test {
protected:
    void write_config(bool with_second_subscription) {
        std::ofstream out(dir_.file("wopbridge.yaml"));
        out << "server: {listen: \"127.0.0.1:0\", "
               "rateLimits: {perSourceAddress: {rate: 100000, burst: 100000}}}\n"
               // a load from loopback: the default per-address limit is raised explicitly
               "auth:\n"
               "  apiKeys:\n"
               "    - {key: hk_sig, tenant: default, scopes: [webhooks:manage, runs:read]}\n"
               "store: {sqlite: {path: bridge.db}}\n"
               "hostKeyFile: host.key\n"
               "runs: {local: {workflows: [{id: conformance-noop}]}}\n"
               "subscriptions:\n"
               "  - {id: orders, source: webhook, workflowId: conformance-noop, signingSecret: \""
            << secret << "\"}\n";
        if (with_second_subscription) {
            out << "  - {id: refunds, source: webhook, workflowId: conformance-noop, "
                   "signingSecret: \""
                << secret << "\"}\n";
        }
    }

    http_reply post_signed(const std::string& url, const std::string& id, const std::string& body) {
        http_call c;
        c.method = "POST";
        c.url = url + "/v1/ingest/orders";
        c.headers = standard_webhook_headers(secret, id, std::time(nullptr), body);
        c.headers.emplace_back("content-type", "application/json");
        c.body = body;
        c.timeout_ms = 10000;
        return perform(c);
    }

    static std::string run_id_of(const std::string& body) {
        auto at = body.find("\"runId\":\"");
        if (at == std::string::npos) {
            return {};
        }
        at += 9;
        return body.substr(at, body.find('"', at) - at);
    }

    temp_dir dir_;
};

TEST_F(ServeSignalsTest, SigtermDuringABurstLosesNoAcknowledgedIngest) {
    write_config(false);
    serve_process serve;
    ASSERT_TRUE(serve.start(dir_.file("wopbridge.yaml"), dir_.file("serve.log"))) << serve.error;

    std::mutex mu;
    std::map<std::string, std::string> acknowledged; // webhook-id -> runId
    std::atomic<int> answered{0};
    std::atomic<bool> stop{false};
    std::vector<std::thread> senders;
    for (int t = 0; t < 6; ++t) {
        senders.emplace_back([&] {
            while (!stop.load()) {
                std::string id = fresh_webhook_id();
                auto r = post_signed(serve.url(), id, R"({"n":1})");
                if (r.status == 0) {
                    return; // the server is gone: this request was never acknowledged
                }
                ++answered;
                if (r.status == 202) {
                    std::lock_guard lock(mu);
                    acknowledged[id] = run_id_of(r.body);
                }
            }
        });
    }
    // Terminate mid-burst, once a good number of requests have been answered.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (answered.load() < 150 && std::chrono::steady_clock::now() < until) {
        std::this_thread::yield();
    }
    serve.signal(SIGTERM);
    EXPECT_EQ(serve.wait_exit(), 0) << read_text_file(dir_.file("serve.log"));
    stop = true;
    for (auto& t : senders) {
        t.join();
    }
    ASSERT_GE(acknowledged.size(), 100u);

    // Every acknowledged event survived: re-posting it is a duplicate with the same run.
    serve_process again;
    ASSERT_TRUE(again.start(dir_.file("wopbridge.yaml"), dir_.file("serve.log"))) << again.error;
    for (const auto& [id, run_id] : acknowledged) {
        auto r = post_signed(again.url(), id, R"({"n":1})");
        ASSERT_EQ(r.status, 200) << id << " " << r.body;
        EXPECT_EQ(run_id_of(r.body), run_id);
    }
    again.signal(SIGTERM);
    EXPECT_EQ(again.wait_exit(), 0);
}

TEST_F(ServeSignalsTest, SighupReReadsSubscriptionsWithoutARestart) {
    write_config(false);
    serve_process serve;
    ASSERT_TRUE(serve.start(dir_.file("wopbridge.yaml"), dir_.file("serve.log"))) << serve.error;
    auto get = [&](const std::string& id) {
        http_call c;
        c.url = serve.url() + "/v1/trigger-subscriptions/" + id;
        c.headers = {{"authorization", "Bearer hk_sig"}};
        return perform(c);
    };
    EXPECT_EQ(get("orders").status, 200);
    EXPECT_EQ(get("refunds").status, 404);

    write_config(true);
    serve.signal(SIGHUP);
    long status = 0;
    eventually([&] { return (status = get("refunds").status) == 200; }, std::chrono::seconds(20));
    EXPECT_EQ(status, 200);
    EXPECT_EQ(serve.pid() > 0, true);

    // Removing it from the file and reloading deletes it again; the process keeps serving.
    write_config(false);
    serve.signal(SIGHUP);
    eventually([&] { return (status = get("refunds").status) == 404; }, std::chrono::seconds(20));
    EXPECT_EQ(status, 404);
    EXPECT_EQ(get("orders").status, 200);
    serve.signal(SIGTERM);
    EXPECT_EQ(serve.wait_exit(), 0);
}

} // namespace
} // namespace wopbridge::testing::serve_signals_test
