// The HTTP surface end to end (http_server_fixture.hpp): discovery, registration, signed ingest and
// dedup, dead letters and their pages, tenants, polls and event streams, limits and a graceful
// stop.
#include "http_server_fixture.hpp"

#include "core/clock.hpp"

#include <gtest/gtest.h>

namespace wopbridge::http_server_testing::http_server_test {
namespace {

TEST_F(HttpServerTest, DiscoveryOpenApiAndHealthAreServedWithoutCredentials) {
    auto caps = call("GET", "/.well-known/openwop", "", "");
    ASSERT_EQ(caps.status, 200);
    EXPECT_EQ(caps.header("cache-control"), "public, max-age=300");
    EXPECT_TRUE(testing::expect_valid_capabilities(json::parse(caps.body)));
    auto openapi = call("GET", "/v1/openapi.json", "", "");
    ASSERT_EQ(openapi.status, 200);
    EXPECT_EQ(json::parse(openapi.body).at("openapi").as_string(), "3.1.0");
    EXPECT_EQ(call("GET", "/healthz", "", "").status, 200);
    EXPECT_EQ(call("GET", "/readyz", "", "").status, 200);
    expect_envelope(call("GET", "/v1/nothing-here"), 404, "not_found");
    auto r = call("DELETE", "/v1/trigger-subscriptions");
    expect_envelope(r, 405, "method_not_allowed");
    EXPECT_TRUE(r.header("allow").has_value());
    expect_envelope(call("GET", "/v1/trigger-subscriptions", "", ""), 401, "unauthenticated");
    expect_envelope(call("GET", "/v1/trigger-subscriptions", "", "hk_readonly"), 403, "forbidden");
}

TEST_F(HttpServerTest, SigningSecretIsReturnedOnceAndNeverOnReads) {
    auto reg = register_webhook();
    EXPECT_EQ(reg.secret.rfind("whsec_", 0), 0u);
    ASSERT_EQ(ingest(reg, testing::fresh_webhook_id()).status, 202);
    for (const auto& path :
         {std::string("/v1/trigger-subscriptions"), "/v1/trigger-subscriptions/" + reg.id,
          "/v1/trigger-subscriptions/" + reg.id + "/deliveries",
          "/v1/trigger-subscriptions/" + reg.id + "/dead-letters"}) {
        auto r = call("GET", path);
        EXPECT_EQ(r.status, 200) << path;
        EXPECT_EQ(r.body.find("whsec_"), std::string::npos) << path;
        EXPECT_EQ(r.body.find(reg.secret.substr(6)), std::string::npos) << path;
    }
    auto one = json::parse(call("GET", "/v1/trigger-subscriptions/" + reg.id).body);
    EXPECT_TRUE(testing::expect_valid(one.at("subscription"), "trigger-subscription.schema.json"));
    auto deliveries =
        json::parse(call("GET", "/v1/trigger-subscriptions/" + reg.id + "/deliveries").body);
    EXPECT_TRUE(testing::expect_valid(deliveries, "wopbridge/deliveries-page.schema.json"));
}

TEST_F(HttpServerTest, SignedIngestIsAcceptedAndARepeatIsADuplicateOfTheSameRun) {
    auto reg = register_webhook();
    auto id = testing::fresh_webhook_id();
    auto first = ingest(reg, id);
    ASSERT_EQ(first.status, 202) << first.body;
    auto a = json::parse(first.body);
    EXPECT_EQ(a.at("outcome").as_string(), "delivered");
    EXPECT_FALSE(a.at("runId").as_string().empty());
    auto second = ingest(reg, id);
    ASSERT_EQ(second.status, 200) << second.body;
    auto b = json::parse(second.body);
    EXPECT_TRUE(testing::expect_valid(b, "wopbridge/ingest-response.schema.json"));
    EXPECT_EQ(b.at("outcome").as_string(), "duplicate");
    EXPECT_EQ(b.at("runId"), a.at("runId"));
}

TEST_F(HttpServerTest, RefusedSignaturesDeadLetterWithoutChangingTheSubscription) {
    auto reg = register_webhook();
    auto bad = ingest(reg, testing::fresh_webhook_id(), R"({"x":1})", 0,
                      "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
    expect_envelope(bad, 401, "signature_invalid");
    EXPECT_EQ(bad.body.find("runId"), std::string::npos);
    auto stale = ingest(reg, testing::fresh_webhook_id(), R"({"x":2})", -600);
    expect_envelope(stale, 401, "signature_invalid");
    auto unsigned_post = call("POST", reg.ingest_path, R"({"x":3})", "");
    expect_envelope(unsigned_post, 401, "signature_invalid");

    auto sub = json::parse(call("GET", "/v1/trigger-subscriptions/" + reg.id).body);
    EXPECT_EQ(sub.at("subscription").at("state").as_string(), "active");
    auto page = call("GET", "/v1/trigger-subscriptions/" + reg.id + "/dead-letters");
    ASSERT_EQ(page.status, 200);
    auto v = json::parse(page.body);
    EXPECT_TRUE(testing::expect_valid(v, "trigger-dead-letter-page.schema.json"));
    const auto& items = v.at("deliveries").as_array();
    ASSERT_EQ(items.size(), 3u);
    // RFC 0232 §C: expiresAt − deadLetteredAt is the advertised retentionDays (±60 s).
    auto caps = json::parse(call("GET", "/.well-known/openwop", "", "").body);
    const auto days =
        caps.at("triggerBridge").at("deadLetter").at("retentionDays").to_number<long long>();
    for (const auto& d : items) {
        EXPECT_EQ(d.at("reason").as_string(), "verification_failed");
        EXPECT_FALSE(d.as_object().contains("stateChange"));
        EXPECT_EQ(d.at("subscriptionId").as_string(), reg.id);
        millis at = 0;
        millis expires = 0;
        ASSERT_TRUE(parse_iso8601(d.at("deadLetteredAt").as_string(), at));
        ASSERT_TRUE(parse_iso8601(d.at("expiresAt").as_string(), expires));
        EXPECT_NEAR(static_cast<double>(expires - at), days * 86400000.0, 60000.0);
    }
    EXPECT_EQ(ingest(reg, testing::fresh_webhook_id()).status, 202); // still active
}

TEST_F(HttpServerTest, DeadLetterPagesFollowTheCursorAndRefuseForeignOnes) {
    auto reg = register_webhook();
    auto other = register_webhook();
    for (int i = 0; i < 3; ++i) {
        ingest(reg, testing::fresh_webhook_id(), "{}", -600);
        ingest(other, testing::fresh_webhook_id(), "{}", -600);
    }
    const auto base = "/v1/trigger-subscriptions/" + reg.id + "/dead-letters";
    auto p1 = json::parse(call("GET", base + "?limit=2").body);
    EXPECT_TRUE(testing::expect_valid(p1, "trigger-dead-letter-page.schema.json"));
    ASSERT_EQ(p1.at("deliveries").as_array().size(), 2u);
    ASSERT_TRUE(p1.as_object().contains("nextCursor"));
    std::string cursor(p1.at("nextCursor").as_string());
    auto p2r = call("GET", base + "?limit=2&cursor=" + cursor);
    ASSERT_EQ(p2r.status, 200) << p2r.body;
    auto p2 = json::parse(p2r.body);
    EXPECT_EQ(p2.at("deliveries").as_array().size(), 1u);
    EXPECT_FALSE(p2.as_object().contains("nextCursor"));
    std::set<std::string> ids;
    for (const auto* p : {&p1, &p2}) {
        for (const auto& d : p->at("deliveries").as_array()) {
            ids.insert(std::string(d.at("attemptEventId").as_string()));
        }
    }
    EXPECT_EQ(ids.size(), 3u);
    expect_envelope(call("GET", "/v1/trigger-subscriptions/" + other.id +
                                    "/dead-letters?limit=2&cursor=" + cursor),
                    400, "validation_error");
    expect_envelope(call("GET", base + "?limit=-1"), 400, "validation_error");
    auto clamped = call("GET", base + "?limit=100000");
    EXPECT_EQ(clamped.status, 200);
}

TEST_F(HttpServerTest, PausedSubscriptionRefusesIngestUntilResumed) {
    auto reg = register_webhook();
    auto paused = call("PATCH", "/v1/trigger-subscriptions/" + reg.id, R"({"state":"paused"})");
    ASSERT_EQ(paused.status, 200) << paused.body;
    EXPECT_EQ(json::parse(paused.body).at("subscription").at("state").as_string(), "paused");
    expect_envelope(ingest(reg, testing::fresh_webhook_id()), 409, "subscription_not_active");
    auto resumed = call("PATCH", "/v1/trigger-subscriptions/" + reg.id, R"({"state":"active"})");
    ASSERT_EQ(resumed.status, 200) << resumed.body;
    EXPECT_EQ(ingest(reg, testing::fresh_webhook_id()).status, 202);
    EXPECT_EQ(call("DELETE", "/v1/trigger-subscriptions/" + reg.id).status, 204);
    expect_envelope(ingest(reg, testing::fresh_webhook_id()), 404, "not_found");
}

TEST_F(HttpServerTest, RunStartedIsCausedByTheDeliveredAttemptOnTheSameLog) {
    auto reg = register_webhook();
    auto accepted = ingest(reg, testing::fresh_webhook_id());
    ASSERT_EQ(accepted.status, 202);
    std::string run_id(json::parse(accepted.body).at("runId").as_string());
    // One poll without parameters, as the conformance suite does.
    auto poll = call("GET", "/v1/runs/" + run_id + "/events/poll");
    ASSERT_EQ(poll.status, 200) << poll.body;
    auto v = json::parse(poll.body);
    ASSERT_TRUE(v.at("isComplete").is_bool());
    std::string attempted_id;
    std::string causation;
    for (const auto& e : v.at("events").as_array()) {
        EXPECT_TRUE(testing::expect_valid(e, "run-event.schema.json"));
        if (e.at("type") == "trigger.delivery.attempted" &&
            e.at("payload").at("outcome") == "delivered") {
            attempted_id = std::string(e.at("eventId").as_string());
            EXPECT_TRUE(testing::expect_valid_payload(
                e.at("payload"), "run-event-payloads.schema.json#/$defs/triggerDeliveryAttempted"));
        }
        if (e.at("type") == "run.started") {
            causation = std::string(e.at("causationId").as_string());
        }
    }
    ASSERT_FALSE(attempted_id.empty()) << poll.body;
    EXPECT_EQ(causation, attempted_id);
    auto snapshot = call("GET", "/v1/runs/" + run_id);
    ASSERT_EQ(snapshot.status, 200) << snapshot.body;
    EXPECT_EQ(json::parse(snapshot.body).at("subscriptionId").as_string(), reg.id);
}

TEST_F(HttpServerTest, AnotherTenantsIdsAnswerNotFound) {
    auto reg = register_webhook();
    auto accepted = ingest(reg, testing::fresh_webhook_id());
    std::string run_id(json::parse(accepted.body).at("runId").as_string());
    for (const auto& path :
         {"/v1/trigger-subscriptions/" + reg.id,
          "/v1/trigger-subscriptions/" + reg.id + "/dead-letters",
          "/v1/trigger-subscriptions/" + reg.id + "/deliveries", "/v1/runs/" + run_id,
          "/v1/runs/" + run_id + "/events/poll?timeout=1"}) {
        expect_envelope(call("GET", path, "", "hk_globex"), 404, "not_found");
    }
    expect_envelope(
        call("PATCH", "/v1/trigger-subscriptions/" + reg.id, R"({"state":"paused"})", "hk_globex"),
        404, "not_found");
    auto list = json::parse(call("GET", "/v1/trigger-subscriptions", "", "hk_globex").body);
    EXPECT_TRUE(list.at("subscriptions").as_array().empty());
}

TEST_F(HttpServerTest, PollAnswersAtOnceWithEventsAndWaitsWithout) {
    auto reg = register_webhook("wf-running");
    auto accepted = ingest(reg, testing::fresh_webhook_id());
    std::string run_id(json::parse(accepted.body).at("runId").as_string());
    auto first = call("GET", "/v1/runs/" + run_id + "/events/poll?timeout=30");
    ASSERT_EQ(first.status, 200);
    EXPECT_LT(first.seconds, 5.0);
    auto events = json::parse(first.body).at("events").as_array();
    ASSERT_FALSE(events.empty());
    auto last = events.back().at("sequence").as_int64();
    auto waited = call("GET", "/v1/runs/" + run_id +
                                  "/events/poll?timeout=1&lastSequence=" + std::to_string(last));
    ASSERT_EQ(waited.status, 200);
    EXPECT_GE(waited.seconds, 0.9);
    EXPECT_TRUE(json::parse(waited.body).at("events").as_array().empty());
}

TEST_F(HttpServerTest, EventStreamDeliversEventsAndResumesFromLastEventId) {
    auto reg = register_webhook(); // conformance-noop completes at once
    auto accepted = ingest(reg, testing::fresh_webhook_id());
    std::string run_id(json::parse(accepted.body).at("runId").as_string());
    http_call c;
    c.url = base_ + "/v1/runs/" + run_id + "/events";
    c.headers = {{"Authorization", "Bearer hk_acme"}};
    c.timeout_ms = 15000;
    auto all = testing::perform_streaming(c, [](const std::string&) { return false; });
    ASSERT_EQ(all.status, 200) << all.error;
    EXPECT_EQ(all.header("content-type"), "text/event-stream");
    EXPECT_NE(all.body.find("event: run.started\n"), std::string::npos) << all.body;
    EXPECT_NE(all.body.find("event: run.completed\n"), std::string::npos) << all.body;
    EXPECT_NE(all.body.find("id: 0\n"), std::string::npos);
    EXPECT_TRUE(all.error.empty()) << "the stream should end after the terminal event";

    c.headers.emplace_back("Last-Event-ID", "0");
    auto resumed = testing::perform_streaming(c, [](const std::string&) { return false; });
    ASSERT_EQ(resumed.status, 200);
    EXPECT_EQ(resumed.body.find("id: 0\n"), std::string::npos);
    EXPECT_NE(resumed.body.find("id: 1\n"), std::string::npos);
    // Each data line is a RunEventDoc.
    auto pos = resumed.body.find("data: ");
    ASSERT_NE(pos, std::string::npos);
    auto end = resumed.body.find('\n', pos);
    EXPECT_TRUE(testing::expect_valid(json::parse(resumed.body.substr(pos + 6, end - pos - 6)),
                                      "run-event.schema.json"));
}

TEST_F(HttpServerTest, BodiesPastTheLimitAnswer413) {
    stop_server();
    start_server(4096);
    auto reg = register_webhook();
    std::string big(10000, 'x');
    auto r = ingest(reg, testing::fresh_webhook_id(), "\"" + big + "\"");
    expect_envelope(r, 413, "payload_too_large");
    auto reg_big =
        call("POST", "/v1/trigger-subscriptions",
             R"({"source":"webhook","workflowId":"conformance-noop","inputMapping":{"x":")" + big +
                 "\"}}");
    expect_envelope(reg_big, 413, "payload_too_large");
    EXPECT_EQ(ingest(reg, testing::fresh_webhook_id()).status, 202); // the server still serves
}

TEST_F(HttpServerTest, SlowHeadersAreCutOffAtTheHeaderTimeout) {
    stop_server();
    start_server(64 * 1024, std::chrono::milliseconds(300));
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(server_->port());
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    // A header that never ends (one byte now, nothing after).
    std::string partial = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: a";
    ASSERT_EQ(::send(fd, partial.data(), partial.size(), 0), static_cast<ssize_t>(partial.size()));
    auto started = std::chrono::steady_clock::now();
    pollfd p{fd, POLLIN, 0};
    bool closed = false;
    char buf[512];
    while (std::chrono::steady_clock::now() - started < std::chrono::seconds(10)) {
        if (::poll(&p, 1, 100) > 0) {
            auto n = ::recv(fd, buf, sizeof buf, 0);
            if (n <= 0) {
                closed = true;
                break;
            }
        }
    }
    ::close(fd);
    EXPECT_TRUE(closed) << "the server kept a slow header open";
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
    EXPECT_EQ(call("GET", "/healthz", "", "").status, 200); // and still serves others
}

TEST_F(HttpServerTest, GracefulStopLosesNoAcknowledgedIngest) {
    auto reg = register_webhook("wf-running");
    std::mutex mu;
    std::set<std::string> acknowledged; // delivery ids answered 2xx
    std::atomic<bool> go{true};
    std::atomic<int> sent{0};
    std::vector<std::thread> senders;
    for (int t = 0; t < 4; ++t) {
        senders.emplace_back([&] {
            while (go) {
                auto r = ingest(reg, testing::fresh_webhook_id());
                ++sent;
                if (r.status == 202) {
                    auto v = json::parse(r.body);
                    std::lock_guard lock(mu);
                    acknowledged.insert(std::string(v.at("deliveryId").as_string()));
                }
                if (r.status == 0) {
                    return; // connection refused: the server is gone
                }
            }
        });
    }
    ASSERT_TRUE(eventually([&] { return sent.load() >= 20; }));
    stop_server(); // mid-burst
    go = false;
    for (auto& t : senders) {
        t.join();
    }
    bridge_->stop();
    bridge_.reset();
    open_bridge(); // reopen the same database
    ASSERT_FALSE(acknowledged.empty());
    std::set<std::string> stored;
    page_request pr;
    pr.limit = 100;
    for (;;) {
        auto page = bridge_->list_deliveries("acme", reg.id, pr);
        ASSERT_TRUE(page.has_value());
        for (const auto& d : page->items) {
            stored.insert(d.id);
        }
        if (page->next_cursor.empty()) {
            break;
        }
        pr.cursor = page->next_cursor;
    }
    for (const auto& id : acknowledged) {
        EXPECT_TRUE(stored.count(id)) << "acknowledged delivery lost: " << id;
    }
}

} // namespace
} // namespace wopbridge::http_server_testing::http_server_test
