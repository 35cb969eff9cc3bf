// Slow-body defence through the real `wopbridge serve`: peers (127.0.0.2, 127.0.0.3) open ingest
// requests declaring a 100 000-byte body and then trickle one byte every 0.5 s. Each address is
// held to server.maxConnectionsPerAddress; the trickles are cut off (closed) once past
// bodyGraceSeconds they fall below minBodyBytesPerSecond (long before the 30 s body timeout);
// while they fill every ingest slot, /healthz, /readyz and the management API still answer from
// the reserved slots.
#include "support/eventually.hpp"
#include "support/http_client.hpp"
#include "support/probed_serve_fixture.hpp"
#include "support/raw_socket.hpp"
#include "support/serve_probe.hpp"
#include "support/serve_process.hpp"
#include "support/temp_dir.hpp"
#include "support/webhook_signer.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <ctime>
#include <fstream>
#include <sstream>
#include <memory>
#include <string>
#include <vector>

namespace wopbridge::testing::slow_body_test {
namespace {

using namespace std::chrono_literals;

constexpr const char* secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

class SlowBodyTest : public probed_serve_fixture {
  protected:
    void SetUp() override {
        const std::string dir = dir_.path().string();
        // 24 ingest slots + 8 reserved; 16 connections per address; 3 s grace, then 1 KiB/s.
        std::ostringstream config;
        config << "server: {listen: \"127.0.0.1:0\", maxInFlightRequests: 24, "
               "reservedInFlightRequests: 8, maxConnectionsPerAddress: 16, "
               "minBodyBytesPerSecond: 1024, bodyGraceSeconds: 3}\n"
               "auth:\n"
               "  apiKeys:\n"
               "    - {key: hk_probe, tenant: default, scopes: [webhooks:manage, runs:read]}\n"
               "store: {sqlite: {path: \""
            << dir << "/bridge.db\"}}\nhostKeyFile: \"" << dir
            << "/host.key\"\n"
               "runs: {local: {workflows: [{id: conformance-noop}]}}\n"
               "subscriptions:\n"
               "  - {id: orders, source: webhook, workflowId: conformance-noop, signingSecret: \""
            << secret << "\"}\n";
        start_serve(config.str());
    }

    long get(const std::string& path) {
        http_call c;
        c.url = serve_.url() + path;
        c.headers = {{"authorization", "Bearer hk_probe"}};
        c.timeout_ms = 5000;
        return perform(c).status;
    }
    long ingest() {
        const std::string body = R"({"order":1})";
        http_call c;
        c.method = "POST";
        c.url = serve_.url() + "/v1/ingest/orders";
        c.body = body;
        c.timeout_ms = 5000;
        c.headers = standard_webhook_headers(secret, fresh_webhook_id(), std::time(nullptr), body);
        c.headers.emplace_back("Content-Type", "application/json");
        return perform(c).status;
    }
};

TEST_F(SlowBodyTest, TricklingBodiesAreCutOffAndHealthAndManagementKeepAnswering) {
    const std::string head = "POST /v1/ingest/orders HTTP/1.1\r\nHost: x\r\n"
                             "Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{";
    std::vector<std::unique_ptr<raw_connection>> conns;
    const auto started = std::chrono::steady_clock::now();
    for (int i = 0; i < 24; ++i) { // 8 past the per-address cap
        conns.push_back(std::make_unique<raw_connection>(port_, "127.0.0.2"));
    }
    for (int i = 0; i < 16; ++i) {
        conns.push_back(std::make_unique<raw_connection>(port_, "127.0.0.3"));
    }
    for (auto& c : conns) {
        ASSERT_TRUE(c->connected());
        c->send(head);
    }
    // One more byte on every open trickle each 0.5 s, and read what the server said.
    auto last_byte = std::chrono::steady_clock::now();
    auto pump = [&] {
        const bool due = std::chrono::steady_clock::now() - last_byte >= 500ms;
        for (auto& c : conns) {
            c->read_available();
            if (due && !c->peer_closed()) {
                c->send(" ");
            }
        }
        if (due) {
            last_byte = std::chrono::steady_clock::now();
        }
    };
    auto count = [&](auto pred) {
        int n = 0;
        for (auto& c : conns) {
            n += pred(*c) ? 1 : 0;
        }
        return n;
    };
    auto refused_at_accept = [](const raw_connection& c) {
        return c.peer_closed() && c.received().empty();
    };
    auto answered = [](const raw_connection& c, const char* status) {
        return c.received().rfind(std::string("HTTP/1.1 ") + status, 0) == 0;
    };
    // 8 connections from .2 are refused at once; 32 are read; 24 take every ingest slot, 8 get 503.
    ASSERT_TRUE(eventually(
        [&] {
            pump();
            return count(refused_at_accept) == 8 &&
                   count([&](const raw_connection& c) { return answered(c, "503"); }) == 8;
        },
        3s))
        << count(refused_at_accept) << " refused at accept, "
        << count([&](const raw_connection& c) { return answered(c, "503"); }) << " 503";

    // The ingest slots are full: ingest is refused, control routes answer from the reserve.
    EXPECT_EQ(ingest(), 503);
    EXPECT_EQ(get("/healthz"), 200);
    EXPECT_EQ(get("/readyz"), 200);
    EXPECT_EQ(get("/v1/trigger-subscriptions/orders"), 200);

    // Every trickle is cut off once below the rate, well before the 30 s body timeout (the
    // stream's deadline closes the socket: there is nothing to answer on).
    EXPECT_TRUE(eventually(
        [&] {
            pump();
            return count([](const raw_connection& c) { return c.peer_closed(); }) == 40;
        },
        15s));
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    const int answered_503 = count([&](const raw_connection& c) { return answered(c, "503"); });
    std::printf("[ slow body ] 40 trickles: 8 refused at accept, %d 503, %d cut off without an "
                "answer; all closed in %.2f s\n",
                answered_503, count(refused_at_accept) - 8, took);
    EXPECT_EQ(answered_503, 8);
    EXPECT_EQ(count(refused_at_accept), 32); // 8 at accept + the 24 trickles
    EXPECT_LT(took, 10.0);
    // Ingest is served again, and no trickle became a delivery.
    EXPECT_EQ(ingest(), 202);
    EXPECT_TRUE(probe_->runs_started("orders", 1));
}

} // namespace
} // namespace wopbridge::testing::slow_body_test
