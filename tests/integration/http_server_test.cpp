// The HTTP surface end to end: a real http::server on 127.0.0.1:0 in-process, the real bridge on a
// temporary SQLite file, and libcurl as the client.

#include "app/bridge.hpp"
#include "http/api.hpp"
#include "http/server.hpp"
#include "store/store.hpp"
#include "support/eventually.hpp"
#include "support/http_client.hpp"
#include "support/schema_check.hpp"
#include "support/scripted_run_starter.hpp"
#include "support/temp_dir.hpp"
#include "support/webhook_signer.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>

namespace wopbridge {
namespace {

namespace json = boost::json;
using testing::eventually;
using testing::http_call;
using testing::http_headers;
using testing::http_reply;
using behaviour = testing::scripted_run_starter::behaviour;

struct webhook_registration {
    std::string id;
    std::string secret;
    std::string ingest_path;
};

class HttpServerTest : public ::testing::Test {
protected:
    void SetUp() override {
        settings_.host_key_file = dir_.file("host.key");
        settings_.test_seams = true;
        settings_.public_url = "http://127.0.0.1:1";
        settings_.default_retry = {3, backoff_kind::fixed, 100, 100, false};
        settings_.local_workflows = {"conformance-noop", "wf-running", "wf-fail"};
        settings_.dead_letter_max_page_size = 100;
        open_bridge();
        start_server();
    }
    void TearDown() override { stop_all(); }

    void open_bridge() {
        sqlite_options o;
        o.path = dir_.file("bridge.db");
        auto st = open_sqlite_store(o);
        ASSERT_TRUE(st.has_value()) << st.error().message();
        auto starter = std::make_unique<testing::scripted_run_starter>(settings_.local_workflows);
        starter->set_behaviour("wf-running", behaviour::keep_running);
        starter->set_behaviour("wf-fail", behaviour::transient);
        bridge_ = std::make_unique<bridge>(settings_, std::move(*st), std::move(starter), clock_,
                                           random_);
        ASSERT_TRUE(bridge_->start().has_value());
    }

    void start_server(std::size_t max_body = 64 * 1024,
                      std::chrono::milliseconds header_timeout = std::chrono::seconds(10)) {
        http::server_options so;
        so.header_timeout = header_timeout;
        so.idle_timeout = header_timeout * 2;
        so.host = "127.0.0.1";
        so.port = 0;
        so.threads = 2;
        so.worker_threads = 4;
        server_ = std::make_unique<http::server>(so);
        http::api_options ao;
        ao.keys = {{"hk_acme", "acme", {"webhooks:manage", "runs:read", "runs:create"}},
                   {"hk_globex", "globex", {"webhooks:manage", "runs:read", "runs:create"}},
                   {"hk_readonly", "acme", {"runs:read"}}};
        ao.max_body_bytes = max_body;
        ao.ingest_max_body_bytes = max_body;
        api_ = std::make_unique<http::http_api>(ao, *bridge_, nullptr, server_->scheduler());
        ASSERT_TRUE(server_->start(*api_).has_value());
        base_ = "http://127.0.0.1:" + std::to_string(server_->port());
    }

    void stop_server() {
        if (server_) {
            server_->stop(std::chrono::seconds(10));
        }
        server_.reset();
        api_.reset();
    }

    void stop_all() {
        stop_server();
        if (bridge_) {
            bridge_->stop();
        }
        bridge_.reset();
    }

    http_reply call(const std::string& method, const std::string& path,
                    const std::string& body = {}, const std::string& key = "hk_acme",
                    http_headers headers = {}, long timeout_ms = 20000) {
        http_call c;
        c.method = method;
        c.url = base_ + path;
        c.body = body;
        c.headers = std::move(headers);
        c.timeout_ms = timeout_ms;
        if (!key.empty()) {
            c.headers.emplace_back("Authorization", "Bearer " + key);
        }
        if (!body.empty()) {
            c.headers.emplace_back("Content-Type", "application/json");
        }
        return testing::perform(c);
    }

    webhook_registration register_webhook(const std::string& workflow = "conformance-noop",
                                          const std::string& key = "hk_acme") {
        auto r = call("POST", "/v1/trigger-subscriptions",
                      R"({"source":"webhook","workflowId":")" + workflow +
                          R"(","retryPolicy":{"maxAttempts":3,"backoff":"fixed"}})",
                      key);
        EXPECT_EQ(r.status, 201) << r.body;
        auto v = json::parse(r.body);
        EXPECT_TRUE(testing::expect_valid(v, "wopbridge/registration-response.schema.json"));
        webhook_registration reg;
        reg.id = std::string(v.at("subscription").at("subscriptionId").as_string());
        reg.secret = std::string(v.at("binding").at("signingSecret").as_string());
        std::string url(v.at("binding").at("ingestUrl").as_string());
        reg.ingest_path = url.substr(url.find("/v1/ingest/"));
        return reg;
    }

    http_reply ingest(const webhook_registration& reg, const std::string& webhook_id,
                      const std::string& body = R"({"order":42})", std::int64_t skew_s = 0,
                      const std::string& secret_override = {}) {
        auto ts = std::chrono::duration_cast<std::chrono::seconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count() +
                  skew_s;
        auto headers = testing::standard_webhook_headers(
            secret_override.empty() ? reg.secret : secret_override, webhook_id, ts, body);
        return call("POST", reg.ingest_path, body, "", headers);
    }


    static void expect_envelope(const http_reply& r, long status, std::string_view code) {
        EXPECT_EQ(r.status, status) << r.body;
        auto v = json::parse(r.body);
        EXPECT_TRUE(testing::expect_valid(v, "wopbridge/error-envelope.schema.json"));
        EXPECT_EQ(v.at("error").as_string(), code) << r.body;
    }

    testing::temp_dir dir_;
    system_clock_source clock_;
    system_random_source random_;
    bridge_settings settings_;
    std::unique_ptr<bridge> bridge_;
    std::unique_ptr<http::server> server_;
    std::unique_ptr<http::http_api> api_;
    std::string base_;
};

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
    for (const auto& d : items) {
        EXPECT_EQ(d.at("reason").as_string(), "verification_failed");
        EXPECT_FALSE(d.as_object().contains("stateChange"));
        EXPECT_EQ(d.at("subscriptionId").as_string(), reg.id);
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
         {"/v1/trigger-subscriptions/" + reg.id, "/v1/trigger-subscriptions/" + reg.id + "/dead-letters",
          "/v1/trigger-subscriptions/" + reg.id + "/deliveries", "/v1/runs/" + run_id,
          "/v1/runs/" + run_id + "/events/poll?timeout=1"}) {
        expect_envelope(call("GET", path, "", "hk_globex"), 404, "not_found");
    }
    expect_envelope(call("PATCH", "/v1/trigger-subscriptions/" + reg.id, R"({"state":"paused"})",
                         "hk_globex"),
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
    auto waited = call("GET", "/v1/runs/" + run_id + "/events/poll?timeout=1&lastSequence=" +
                                  std::to_string(last));
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
    auto reg_big = call("POST", "/v1/trigger-subscriptions",
                        R"({"source":"webhook","workflowId":"conformance-noop","inputMapping":{"x":")" +
                            big + "\"}}");
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

TEST_F(HttpServerTest, ConformanceSeamsWork) {
    auto probe = call("GET", "/v1/host/sample/test/runs/__probe__/events");
    ASSERT_EQ(probe.status, 200);
    EXPECT_EQ(json::parse(probe.body), json::parse(R"({"events":[]})"));
    expect_envelope(call("POST", "/v1/host/sample/trigger-bridge/deliver", R"({"scenario":"nope"})"),
                    400, "validation_error");

    auto deliver = call("POST", "/v1/host/sample/trigger-bridge/deliver", R"({"scenario":"deliver"})");
    ASSERT_EQ(deliver.status, 200) << deliver.body;
    std::string run_id(json::parse(deliver.body).at("runId").as_string());
    auto events = json::parse(call("GET", "/v1/host/sample/test/runs/" + run_id + "/events").body);
    std::string attempted;
    std::string causation;
    for (const auto& e : events.at("events").as_array()) {
        if (e.at("type") == "trigger.delivery.attempted") {
            attempted = std::string(e.at("eventId").as_string());
        }
        if (e.at("type") == "run.started") {
            causation = std::string(e.at("causationId").as_string());
        }
    }
    EXPECT_FALSE(attempted.empty());
    EXPECT_EQ(causation, attempted);

    auto dedup = call("POST", "/v1/host/sample/trigger-bridge/deliver",
                      R"({"scenario":"dedup","dedupKey":"conf-key-7"})");
    ASSERT_EQ(dedup.status, 200) << dedup.body;
    std::string dedup_sub(json::parse(dedup.body).at("subscriptionId").as_string());
    std::string dedup_run(json::parse(dedup.body).at("runId").as_string());
    auto attempts = json::parse(call("GET", "/v1/host/sample/test/runs/" + dedup_run +
                                                "/events?type=trigger.delivery.attempted")
                                    .body);
    ASSERT_FALSE(attempts.at("events").as_array().empty());
    for (const auto& e : attempts.at("events").as_array()) {
        EXPECT_EQ(e.at("payload").at("dedupKey").as_string(), "conf-key-7");
    }

    auto exhaust = call("POST", "/v1/host/sample/trigger-bridge/deliver", R"({"scenario":"exhaust"})");
    ASSERT_EQ(exhaust.status, 200) << exhaust.body;
    std::string carrier(json::parse(exhaust.body).at("runId").as_string());
    auto log = json::parse(call("GET", "/v1/host/sample/test/runs/" + carrier + "/events").body);
    bool dead_lettered = false;
    bool state_changed = false;
    for (const auto& e : log.at("events").as_array()) {
        if (e.at("type") == "trigger.delivery.attempted" &&
            e.at("payload").at("outcome") == "dead-lettered") {
            dead_lettered = true;
        }
        if (e.at("type") == "trigger.subscription.state.changed") {
            EXPECT_TRUE(testing::expect_valid_payload(
                e.at("payload"),
                "run-event-payloads.schema.json#/$defs/triggerSubscriptionStateChanged"));
            state_changed = e.at("payload").at("toState") == "dead-lettered";
        }
    }
    EXPECT_TRUE(dead_lettered) << json::serialize(log);
    EXPECT_TRUE(state_changed) << json::serialize(log);
    auto reset = call("POST", "/v1/host/sample/test/reset", "{}");
    EXPECT_GE(reset.status, 200);
    EXPECT_LT(reset.status, 300);
}

// CONTRACT.md (g) `refused`: a forged post through the real intake is a run-less dead-lettered
// attempt, no state change, the subscription stays active, and a following deliver on it runs.
TEST_F(HttpServerTest, RefusedSeamRecordsTheRefusalAndLeavesTheSubscriptionDeliverable) {
    auto refused =
        call("POST", "/v1/host/sample/trigger-bridge/deliver", R"({"scenario":"refused"})");
    ASSERT_EQ(refused.status, 200) << refused.body;
    auto answer = json::parse(refused.body).as_object();
    EXPECT_EQ(answer.at("outcome"), "dead-lettered");
    EXPECT_EQ(answer.at("subscriptionState"), "active");
    const std::string sub_id(answer.at("subscriptionId").as_string());
    const std::string carrier(answer.at("runId").as_string());
    auto log = json::parse(call("GET", "/v1/host/sample/test/runs/" + carrier + "/events").body);
    int refusals = 0;
    for (const auto& e : log.at("events").as_array()) {
        EXPECT_NE(e.at("type"), "trigger.subscription.state.changed") << json::serialize(log);
        EXPECT_NE(e.at("type"), "run.started") << json::serialize(log);
        if (e.at("type") == "trigger.delivery.attempted") {
            EXPECT_EQ(e.at("payload").at("outcome"), "dead-lettered");
            EXPECT_FALSE(e.at("payload").as_object().contains("runId")) << json::serialize(e);
            EXPECT_TRUE(testing::expect_valid_payload(
                e.at("payload"), "run-event-payloads.schema.json#/$defs/triggerDeliveryAttempted"));
            ++refusals;
        }
    }
    EXPECT_EQ(refusals, 1) << json::serialize(log);
    auto read = call("GET", "/v1/trigger-subscriptions/" + sub_id);
    ASSERT_EQ(read.status, 200) << read.body;
    EXPECT_EQ(json::parse(read.body).at("subscription").at("state"), "active");

    auto deliver = call("POST", "/v1/host/sample/trigger-bridge/deliver",
                        R"({"scenario":"deliver","subscriptionId":")" + sub_id + R"("})");
    ASSERT_EQ(deliver.status, 200) << deliver.body;
    auto delivered = json::parse(deliver.body).as_object();
    EXPECT_EQ(delivered.at("subscriptionId").as_string(), sub_id);
    const std::string run_id(delivered.at("runId").as_string());
    auto run_log = json::parse(call("GET", "/v1/host/sample/test/runs/" + run_id + "/events").body);
    bool started = false;
    for (const auto& e : run_log.at("events").as_array()) {
        started = started || e.at("type") == "run.started";
    }
    EXPECT_TRUE(started) << json::serialize(run_log);
    expect_envelope(call("POST", "/v1/host/sample/trigger-bridge/deliver",
                         R"({"scenario":"exhaust","subscriptionId":")" + sub_id + R"("})"),
                    400, "validation_error");
}

TEST_F(HttpServerTest, SeamsAnswerNotFoundWhenDisabled) {
    stop_all();
    settings_.test_seams = false;
    open_bridge();
    start_server();
    expect_envelope(call("POST", "/v1/host/sample/trigger-bridge/deliver",
                         R"({"scenario":"deliver"})"),
                    404, "not_found");
    expect_envelope(call("GET", "/v1/host/sample/test/runs/__probe__/events"), 404, "not_found");
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
} // namespace wopbridge
