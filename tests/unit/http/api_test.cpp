#include "http/api.hpp"
#include "http_fakes.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <algorithm>
#include <set>

namespace wopbridge::http {
namespace {

namespace json = boost::json;
using testing::fake_bridge;
using testing::manual_scheduler;
using testing::recording_sink;

class HttpApiTest : public ::testing::Test {
protected:
    HttpApiTest() { make_api(); }

    void make_api(ingest_router* router = nullptr) {
        api_options opts;
        opts.keys = {
            {"k_manage", "acme", {"webhooks:manage", "runs:read", "runs:create"}},
            {"k_read", "acme", {"runs:read"}},
            {"k_other", "other", {"webhooks:manage", "runs:read", "runs:create"}},
        };
        opts.max_body_bytes = 1000;
        opts.ingest_max_body_bytes = 5000;
        api_ = std::make_unique<http_api>(opts, bridge_, router, sched_);
    }

    std::shared_ptr<recording_sink> call(const std::string& method, const std::string& target,
                                         const std::string& body = {},
                                         const std::string& key = "k_manage",
                                         header_list extra = {}) {
        header_list headers = std::move(extra);
        if (!key.empty()) {
            headers.emplace_back("Authorization", "Bearer " + key);
        }
        auto sink = std::make_shared<recording_sink>();
        api_->handle(http_request::make(method, target, headers, body, "127.0.0.1"), sink);
        sched_.drain();
        return sink;
    }

    static void expect_envelope(const recording_sink& sink, int status, std::string_view code) {
        ASSERT_TRUE(sink.response.has_value());
        EXPECT_EQ(sink.response->status, status);
        auto v = json::parse(sink.response->body);
        ASSERT_TRUE(v.is_object());
        for (const auto& kv : v.as_object()) {
            EXPECT_TRUE(kv.key() == "error" || kv.key() == "message" || kv.key() == "details")
                << "extra envelope key " << kv.key();
        }
        EXPECT_EQ(v.at("error").as_string(), code);
        EXPECT_TRUE(v.at("message").is_string());
    }

    fake_bridge bridge_;
    manual_scheduler sched_;
    std::unique_ptr<http_api> api_;
};

TEST_F(HttpApiTest, UnknownRouteAnswersNotFoundEnvelope) {
    auto s = call("GET", "/v1/nope");
    expect_envelope(*s, 404, "not_found");
}

TEST_F(HttpApiTest, KnownPathWithOtherMethodAnswers405WithAllow) {
    auto s = call("PUT", "/v1/trigger-subscriptions/sub_1");
    expect_envelope(*s, 405, "method_not_allowed");
    auto allow = std::string(*s->response->header("allow"));
    EXPECT_NE(allow.find("GET"), std::string::npos);
    EXPECT_NE(allow.find("PATCH"), std::string::npos);
    EXPECT_NE(allow.find("DELETE"), std::string::npos);
}

TEST_F(HttpApiTest, MissingOrUnknownKeyAnswersUnauthenticated) {
    expect_envelope(*call("GET", "/v1/trigger-subscriptions", "", ""), 401, "unauthenticated");
    expect_envelope(*call("GET", "/v1/trigger-subscriptions", "", "k_wrong"), 401,
                    "unauthenticated");
    auto s = call("GET", "/v1/trigger-subscriptions", "", "", {{"Authorization", "Basic abc"}});
    expect_envelope(*s, 401, "unauthenticated");
}

TEST_F(HttpApiTest, MissingScopeAnswersForbidden) {
    expect_envelope(*call("GET", "/v1/trigger-subscriptions", "", "k_read"), 403, "forbidden");
    expect_envelope(*call("POST", "/v1/host/sample/test/reset", "{}", "k_read"), 403, "forbidden");
}

TEST_F(HttpApiTest, ForeignTenantIdAnswersNotFound) {
    expect_envelope(*call("GET", "/v1/trigger-subscriptions/sub_1", "", "k_other"), 404,
                    "not_found");
    expect_envelope(*call("GET", "/v1/runs/run_1", "", "k_other"), 404, "not_found");
    expect_envelope(*call("GET", "/v1/runs/run_1/events/poll", "", "k_other"), 404, "not_found");
    auto mine = call("GET", "/v1/trigger-subscriptions/sub_1");
    EXPECT_EQ(mine->response->status, 200);
}

TEST_F(HttpApiTest, RegistrationReturnsSecretOnceAndReadsNeverContainIt) {
    auto s = call("POST", "/v1/trigger-subscriptions",
                  R"({"source":"webhook","workflowId":"conformance-noop",)"
                  R"("retryPolicy":{"maxAttempts":3,"backoff":"fixed"},"verification":{"mode":"required"}})");
    ASSERT_EQ(s->response->status, 201);
    auto v = s->json().as_object();
    EXPECT_EQ(v.size(), 2u);
    EXPECT_EQ(v.at("binding").at("signingSecret").as_string().subview().substr(0, 6), "whsec_");
    EXPECT_LE(v.at("binding").at("secretFingerprint").as_string().size(), 32u);
    EXPECT_EQ(v.at("subscription").at("state").as_string(), "active");
    ASSERT_TRUE(bridge_.last_registration);
    EXPECT_EQ(bridge_.last_registration->tenant, "acme");
    EXPECT_EQ(bridge_.last_registration->retry->max_attempts, 3);
    EXPECT_EQ(bridge_.last_registration->retry->backoff, backoff_kind::fixed);

    for (const auto* target : {"/v1/trigger-subscriptions", "/v1/trigger-subscriptions/sub_1"}) {
        auto r = call("GET", target);
        EXPECT_EQ(r->response->status, 200);
        EXPECT_EQ(r->response->body.find("whsec_"), std::string::npos) << target;
        EXPECT_EQ(r->response->body.find("SEALED"), std::string::npos) << target;
    }
}

TEST_F(HttpApiTest, RegistrationValidationNamesTheField) {
    struct bad_case {
        const char* body;
        const char* field;
    };
    const bad_case cases[] = {
        {R"({"source":"webhook","workflowId":"w","extra":1})", "extra"},
        {R"({"source":"webhook"})", "workflowId"},
        {R"({"workflowId":"w"})", "source"},
        {R"({"source":"carrier-pigeon","workflowId":"w"})", "source"},
        {R"({"source":"webhook","workflowId":"w","retryPolicy":{"backoff":"linear"}})",
         "retryPolicy.backoff"},
        {R"({"source":"webhook","workflowId":"w","retryPolicy":{"maxAttempts":0}})",
         "retryPolicy.maxAttempts"},
        {R"({"source":"webhook","workflowId":"w","retryPolicy":{"maxAttempts":1001}})",
         "retryPolicy.maxAttempts"},
        {R"({"source":"webhook","workflowId":"w","retryPolicy":{"maxAttempts":18446744073709551615}})",
         "retryPolicy.maxAttempts"},
        {R"({"source":"webhook","workflowId":"w","verification":{"mode":"maybe"}})",
         "verification.mode"},
        {R"({"source":"schedule","workflowId":"w"})", "schedule"},
        {R"({"source":"webhook","workflowId":"w","schedule":{"cron":"* * * * *"}})", "schedule"},
        {R"({"source":"email","workflowId":"w"})", "connector"},
        {R"({"source":"webhook","workflowId":"w","dedupEnabled":"yes"})", "dedupEnabled"},
        {R"([1,2])", "body"},
        {R"({"source":"webhook","workflowId":"unknown-workflow"})", "workflowId"},
        // The schedule is checked by the parser, so its errors name the schedule's field and not
        // workflowId (register_subscription's invalid_argument carries no field).
        {R"({"source":"schedule","workflowId":"w","schedule":{"cron":"@every 1ms"}})",
         "schedule.cron"},
        {R"({"source":"schedule","workflowId":"w","schedule":{"cron":"61 * * * *"}})",
         "schedule.cron"},
        {R"({"source":"schedule","workflowId":"w","schedule":{"cron":"@every 5m","timeZone":"Mars/Olympus_Mons"}})",
         "schedule.timeZone"},
        {R"({"source":"schedule","workflowId":"w","schedule":{"cron":"* * * * *","timeZone":"../etc/passwd"}})",
         "schedule.timeZone"},
        {R"({"source":"schedule","workflowId":"w","schedule":{"cron":"@every 1ms","timeZone":"+25:00"}})",
         "schedule.timeZone"},
    };
    for (const auto& c : cases) {
        auto s = call("POST", "/v1/trigger-subscriptions", c.body);
        expect_envelope(*s, 400, "validation_error");
        EXPECT_EQ(s->json().at("details").at("field").as_string(), c.field) << c.body;
    }
    auto s = call("POST", "/v1/trigger-subscriptions",
                  R"({"source":"schedule","workflowId":"w","schedule":{"cron":"@every 1ms"}})");
    EXPECT_NE(std::string(s->json().at("message").as_string()).find("at least 1s"),
              std::string::npos);
}

class fake_router final : public ingest_router {
public:
    bool serves(const subscription& sub) const override { return sub.connector == "mail"; }
    void handle(const subscription&, const inbound_http_request& req,
                ingest_reply_callback reply) override {
        last_target = req.target;
        reply(ingest_reply{200, {{"content-type", "text/plain"}}, "connector says hi"});
    }
    std::vector<std::string> sources() const override { return {"email", "carrier-pigeon"}; }
    std::vector<std::string> connector_names() const override { return {"mail"}; }
    result<void, error_info> attach(const subscription& sub) override {
        attached.push_back(sub.id);
        return {};
    }
    std::string last_target;
    std::vector<std::string> attached;
};

TEST_F(HttpApiTest, ScheduleAndConnectorExtensionsAreParsed) {
    auto s = call("POST", "/v1/trigger-subscriptions",
                  R"({"source":"schedule","workflowId":"w","schedule":{"cron":"@every 5m","timeZone":"+02:00"}})");
    ASSERT_EQ(s->response->status, 201);
    EXPECT_EQ(bridge_.last_registration->schedule->cron, "@every 5m");
    EXPECT_EQ(bridge_.last_registration->schedule->time_zone, "+02:00");
    EXPECT_FALSE(s->json().at("binding").as_object().contains("signingSecret"));

    const std::string email = R"({"source":"email","workflowId":"w","connector":"mail","settings":{"to":"x"}})";
    s = call("POST", "/v1/trigger-subscriptions", email);
    expect_envelope(*s, 400, "validation_error"); // no connector instance is loaded
    EXPECT_EQ(s->json().at("details").at("field").as_string(), "connector");

    fake_router router;
    make_api(&router);
    s = call("POST", "/v1/trigger-subscriptions", email);
    ASSERT_EQ(s->response->status, 201);
    EXPECT_EQ(bridge_.last_registration->connector, "mail");
    EXPECT_EQ(bridge_.last_registration->connector_settings_json, R"({"to":"x"})");
    EXPECT_EQ(router.attached.size(), 1u); // handed to the connector before the 201
}

TEST_F(HttpApiTest, PatchPausesAndRefusesOutOfTerminalState) {
    auto s = call("PATCH", "/v1/trigger-subscriptions/sub_1", R"({"state":"paused"})");
    ASSERT_EQ(s->response->status, 200);
    EXPECT_EQ(s->json().at("subscription").at("state").as_string(), "paused");
    expect_envelope(*call("PATCH", "/v1/trigger-subscriptions/sub_1", R"({"state":"failed"})"), 400,
                    "validation_error");
    bridge_.subs["sub_1"].state = sub_state::dead_lettered;
    auto refused = call("PATCH", "/v1/trigger-subscriptions/sub_1", R"({"state":"active"})");
    ASSERT_EQ(refused->response->status, 409);
    auto del = call("DELETE", "/v1/trigger-subscriptions/sub_1");
    EXPECT_EQ(del->response->status, 204);
    EXPECT_TRUE(del->response->body.empty());
}

TEST_F(HttpApiTest, DeadLetterPageHasTheClosedShape) {
    auto s = call("GET", "/v1/trigger-subscriptions/sub_1/dead-letters?limit=5000");
    ASSERT_EQ(s->response->status, 200);
    EXPECT_EQ(bridge_.last_page->limit, bridge_.settings().dead_letter_max_page_size);
    auto page = s->json().as_object();
    EXPECT_EQ(page.at("nextCursor").as_string(), "c2");
    const auto& rec = page.at("deliveries").as_array().at(0).as_object();
    std::set<std::string> keys;
    for (const auto& kv : rec) {
        keys.insert(std::string(kv.key()));
    }
    EXPECT_EQ(keys, (std::set<std::string>{"subscriptionId", "attemptEventId", "attempt", "reason",
                                            "deadLetteredAt", "expiresAt", "stateChange"}));
    EXPECT_EQ(rec.at("attempt").at("outcome").as_string(), "dead-lettered");
    EXPECT_EQ(rec.at("reason").as_string(), "retries_exhausted");
    EXPECT_EQ(rec.at("stateChange").at("reason").as_string(), "retry-exhausted");

    expect_envelope(*call("GET", "/v1/trigger-subscriptions/sub_1/dead-letters?cursor=foreign"),
                    400, "validation_error");
    expect_envelope(*call("GET", "/v1/trigger-subscriptions/sub_1/dead-letters?limit=0"), 400,
                    "validation_error");
    expect_envelope(*call("GET", "/v1/trigger-subscriptions/sub_1/dead-letters?limit=x"), 400,
                    "validation_error");
}

// CONTRACT.md (a): the openwop-trigger-bridge predicate, written from the contract text.
bool derives_trigger_bridge(const json::object& c) {
    auto is_true = [](const json::object& o, std::string_view k) {
        auto* v = o.if_contains(k);
        return v && v->is_bool() && v->as_bool();
    };
    auto* pv = c.if_contains("protocolVersion");
    if (!pv || !pv->is_string()) {
        return false;
    }
    std::string version(pv->as_string());
    auto dot = version.find('.');
    if (dot == std::string::npos || version.substr(0, dot) != "1" ||
        version.find('.', dot + 1) != std::string::npos || dot + 1 == version.size()) {
        return false;
    }
    if (!c.if_contains("supportedEnvelopes") || !c.at("supportedEnvelopes").is_array() ||
        !c.if_contains("schemaVersions") || !c.at("schemaVersions").is_object() ||
        !c.if_contains("limits") || !c.at("limits").is_object()) {
        return false;
    }
    const auto& limits = c.at("limits").as_object();
    for (auto k : {"clarificationRounds", "schemaRounds", "envelopesPerTurn"}) {
        auto* v = limits.if_contains(k);
        if (!v || !v->is_int64() || v->as_int64() < 0) {
            return false;
        }
    }
    auto block = [&](std::string_view k) -> const json::object* {
        auto* v = c.if_contains(k);
        return v && v->is_object() ? &v->as_object() : nullptr;
    };
    auto* tb = block("triggerBridge");
    auto* dl = block("deadLetter");
    if (!tb || !is_true(*tb, "supported") || !dl || !is_true(*dl, "supported")) {
        return false;
    }
    auto* qb = block("queueBus");
    auto* wh = block("webhooks");
    auto* sc = block("scheduling");
    bool ext = false;
    if (auto* ing = tb->if_contains("ingestion"); ing && ing->is_object()) {
        if (auto* es = ing->as_object().if_contains("externalSources"); es && es->is_array()) {
            for (const auto& s : es->as_array()) {
                ext = ext || s == "email" || s == "form";
            }
        }
    }
    return (qb && is_true(*qb, "supported")) || (wh && is_true(*wh, "durable")) ||
           (sc && is_true(*sc, "supported")) || ext;
}

TEST_F(HttpApiTest, CapabilitiesDeriveTheTriggerBridgeProfile) {
    auto s = call("GET", "/.well-known/openwop", "", "");
    ASSERT_EQ(s->response->status, 200);
    EXPECT_EQ(*s->response->header("cache-control"), "public, max-age=300");
    auto doc = s->json().as_object();
    EXPECT_TRUE(derives_trigger_bridge(doc));
    EXPECT_EQ(doc.at("protocolVersion").as_string(), "1.0");
    EXPECT_EQ(doc.at("limits").at("maxRequestBodyBytes").as_int64(), 1000);
    EXPECT_EQ(doc.at("fixtures").as_array().at(0).as_string(), "conformance-noop");
    const auto& tb = doc.at("triggerBridge").as_object();
    EXPECT_EQ(tb.at("subscriptionStates").as_array().size(), 4u);
    EXPECT_EQ(tb.at("retryPolicy").at("maxAttempts").as_int64(), 8);
    EXPECT_EQ(tb.at("ingestion").at("maxBodyBytes").as_int64(), 5000);
    EXPECT_EQ(tb.at("ingestion").at("inboundSigning").as_array().at(0).as_string(),
              "standard-webhooks-1");
    EXPECT_EQ(tb.at("deadLetter").at("maxPageSize").as_int64(), 100);

    // The predicate itself can fail: without a durable source family the profile is not derived.
    doc.erase("scheduling");
    doc["triggerBridge"].as_object()["ingestion"].as_object()["externalSources"] =
        json::array{"webhook"};
    EXPECT_FALSE(derives_trigger_bridge(doc));
}


TEST_F(HttpApiTest, ConnectorSourcesAreAdvertisedAndServeTheirIngest) {
    fake_router router;
    make_api(&router);
    auto caps = call("GET", "/.well-known/openwop", "", "")->json();
    auto sources = caps.at("triggerBridge").at("sources").as_array();
    EXPECT_NE(std::find(sources.begin(), sources.end(), json::value("email")), sources.end());
    EXPECT_EQ(std::find(sources.begin(), sources.end(), json::value("carrier-pigeon")),
              sources.end());

    auto sub = bridge_.subs["sub_1"];
    sub.id = "sub_mail";
    sub.source = source_kind::email;
    sub.connector = "mail";
    bridge_.subs[sub.id] = sub;
    auto s = call("GET", "/v1/ingest/sub_mail/form/page?x=1", "", "");
    ASSERT_EQ(s->response->status, 200);
    EXPECT_EQ(s->response->body, "connector says hi");
    EXPECT_EQ(router.last_target, "/v1/ingest/sub_mail/form/page?x=1");
}

class queue_router final : public ingest_router {
public:
    bool serves(const subscription&) const override { return false; }
    void handle(const subscription&, const inbound_http_request&, ingest_reply_callback) override {}
    std::vector<std::string> sources() const override { return {"queue"}; }
    std::vector<std::string> queue_backends() const override { return backends; }
    std::vector<std::string> backends{"redis-streams"};
};

TEST_F(HttpApiTest, QueueBusIsAdvertisedOnlyWhileAQueueModuleIsLoaded) {
    auto without = call("GET", "/.well-known/openwop", "", "")->json().as_object();
    EXPECT_EQ(without.if_contains("queueBus"), nullptr);

    queue_router router;
    make_api(&router);
    auto with = call("GET", "/.well-known/openwop", "", "")->json().as_object();
    ASSERT_NE(with.if_contains("queueBus"), nullptr);
    EXPECT_EQ(with.at("queueBus").at("supported"), json::value(true));
    EXPECT_EQ(with.at("queueBus").at("backends").as_array().at(0).as_string(), "redis-streams");
    // The engines the loaded modules consume, exactly: NATS alone is not Redis.
    router.backends = {"nats"};
    auto nats = call("GET", "/.well-known/openwop", "", "")->json().as_object();
    EXPECT_EQ(json::serialize(nats.at("queueBus")), R"({"supported":true,"backends":["nats"]})");
    auto sources = with.at("triggerBridge").at("sources").as_array();
    EXPECT_NE(std::find(sources.begin(), sources.end(), json::value("queue")), sources.end());
}

TEST_F(HttpApiTest, WebhookIngestMapsEveryOutcome) {
    struct outcome_case {
        submit_status status;
        int http_status;
        const char* code; // "" = success body
    };
    const outcome_case cases[] = {
        {submit_status::accepted, 202, ""},
        {submit_status::duplicate, 200, ""},
        {submit_status::signature_invalid, 401, "signature_invalid"},
        {submit_status::not_active, 409, "subscription_not_active"},
        {submit_status::overloaded, 503, "service_unavailable"},
        {submit_status::unavailable, 503, "service_unavailable"},
    };
    for (const auto& c : cases) {
        // No bearer credential on ingest.
        auto s = call("POST", "/v1/ingest/sub_1", R"({"hello":1})", "",
                      {{"Webhook-Id", "msg_0123456789abcdef"}});
        ASSERT_TRUE(bridge_.pending_submit);
        EXPECT_FALSE(s->response.has_value()) << "answered before the commit";
        EXPECT_EQ(bridge_.last_ingest->body, R"({"hello":1})");
        submit_result r;
        r.status = c.status;
        r.run_id = "run_9";
        r.delivery_id = "dlv_9";
        std::exchange(bridge_.pending_submit, nullptr)(r);
        ASSERT_TRUE(s->response.has_value());
        EXPECT_EQ(s->response->status, c.http_status);
        if (std::string_view(c.code).empty()) {
            auto v = s->json();
            EXPECT_EQ(v.at("runId").as_string(), "run_9");
            EXPECT_EQ(v.at("outcome").as_string(),
                      c.status == submit_status::accepted ? "delivered" : "duplicate");
        } else {
            expect_envelope(*s, c.http_status, c.code);
            EXPECT_EQ(s->response->body.find("run_9"), std::string::npos);
        }
        if (c.http_status == 503) {
            EXPECT_TRUE(s->response->header("retry-after").has_value());
        }
    }
    expect_envelope(*call("POST", "/v1/ingest/sub_missing", "{}", ""), 404, "not_found");
}

TEST_F(HttpApiTest, WebhookSubscriptionHasNoSubPaths) {
    for (const char* method : {"POST", "GET"}) {
        auto s = call(method, "/v1/ingest/sub_1/x", "{}", "");
        expect_envelope(*s, 404, "not_found");
        EXPECT_FALSE(s->response->header("allow").has_value()) << method;
        EXPECT_FALSE(bridge_.pending_submit) << method;
    }
    auto get = call("GET", "/v1/ingest/sub_1", "", "");
    expect_envelope(*get, 405, "method_not_allowed"); // the ingest URL itself exists, for POST
    EXPECT_EQ(get->response->header("allow").value_or(""), "POST");
}

TEST_F(HttpApiTest, BodyLimitDependsOnTheRoute) {
    EXPECT_EQ(api_->body_limit("POST", "/v1/ingest/sub_1"), 5000u);
    EXPECT_EQ(api_->body_limit("POST", "/v1/ingest/sub_1/x/y"), 5000u);
    EXPECT_EQ(api_->body_limit("POST", "/v1/trigger-subscriptions"), 1000u);
    EXPECT_EQ(api_->body_limit("GET", "/nowhere"), 1000u);
}

TEST_F(HttpApiTest, PollAnswersAtOnceWhenEventsExist) {
    bridge_.append("trigger.delivery.attempted");
    bridge_.append("run.started");
    auto s = call("GET", "/v1/runs/run_1/events/poll", "", "k_read");
    ASSERT_TRUE(s->response.has_value());
    auto v = s->json();
    ASSERT_EQ(v.at("events").as_array().size(), 2u);
    EXPECT_FALSE(v.at("isComplete").as_bool());
    const auto& started = v.at("events").as_array().at(1).as_object();
    EXPECT_EQ(started.at("causationId").as_string(),
              v.at("events").as_array().at(0).at("eventId").as_string());
    auto after = call("GET", "/v1/runs/run_1/events/poll?lastSequence=0", "", "k_read");
    EXPECT_EQ(after->json().at("events").as_array().size(), 1u);
}

TEST_F(HttpApiTest, PollWaitsForTheFirstEventOfAReservedRun) {
    auto s = call("GET", "/v1/runs/run_reserved/events/poll?timeout=5", "", "k_read");
    EXPECT_FALSE(s->response.has_value());
    bridge_.append("run.started");
    sched_.drain();
    ASSERT_TRUE(s->response.has_value());
    EXPECT_EQ(s->json().at("events").as_array().size(), 1u);
    EXPECT_EQ(sched_.pending_timers(), 0u);
    EXPECT_TRUE(bridge_.watches.empty());
}

TEST_F(HttpApiTest, PollTimesOutWithNoEvents) {
    auto s = call("GET", "/v1/runs/run_1/events/poll?timeout=2", "", "k_read");
    EXPECT_FALSE(s->response.has_value());
    sched_.advance(std::chrono::milliseconds(1999));
    EXPECT_FALSE(s->response.has_value());
    sched_.advance(std::chrono::milliseconds(1));
    ASSERT_TRUE(s->response.has_value());
    EXPECT_TRUE(s->json().at("events").as_array().empty());
    EXPECT_TRUE(bridge_.watches.empty());
    expect_envelope(*call("GET", "/v1/runs/run_1/events/poll?timeout=61", "", "k_read"), 400,
                    "validation_error");
}

TEST_F(HttpApiTest, ShutdownAnswersWaitingPolls) {
    auto s = call("GET", "/v1/runs/run_1/events/poll", "", "k_read");
    EXPECT_FALSE(s->response.has_value());
    api_->begin_shutdown();
    sched_.drain();
    ASSERT_TRUE(s->response.has_value());
    EXPECT_EQ(s->response->status, 200);
    EXPECT_EQ(s->sends, 1);
}

TEST_F(HttpApiTest, EventStreamSendsFramesResumesAndClosesOnTerminal) {
    bridge_.append("trigger.delivery.attempted");
    bridge_.append("run.started");
    auto s = call("GET", "/v1/runs/run_1/events", "", "k_read", {{"Last-Event-ID", "0"}});
    ASSERT_TRUE(s->stream);
    EXPECT_EQ(*s->stream_head->header("content-type"), "text/event-stream");
    EXPECT_EQ(s->stream->data.find("id: 0\n"), std::string::npos);
    EXPECT_NE(s->stream->data.find("id: 1\nevent: run.started\ndata: {"), std::string::npos);
    EXPECT_FALSE(s->stream->closed);
    sched_.advance(std::chrono::milliseconds(15000));
    EXPECT_NE(s->stream->data.find(": keep-alive\n\n"), std::string::npos);
    bridge_.append("run.completed");
    sched_.drain();
    EXPECT_NE(s->stream->data.find("id: 2\nevent: run.completed\n"), std::string::npos);
    EXPECT_TRUE(s->stream->closed);
    EXPECT_TRUE(bridge_.watches.empty());
    EXPECT_EQ(sched_.pending_timers(), 0u);
}

TEST_F(HttpApiTest, EventStreamStopsWatchingWhenTheClientLeaves) {
    auto s = call("GET", "/v1/runs/run_1/events", "", "k_read");
    ASSERT_TRUE(s->stream);
    EXPECT_EQ(bridge_.watches.size(), 1u);
    s->stream->abort();
    EXPECT_TRUE(bridge_.watches.empty());
    EXPECT_EQ(sched_.pending_timers(), 0u);
}

TEST_F(HttpApiTest, SeamsAreNotFoundWhenDisabled) {
    bridge_.settings_.test_seams = false;
    expect_envelope(*call("POST", "/v1/host/sample/trigger-bridge/deliver",
                          R"({"scenario":"deliver"})"),
                    404, "not_found");
    expect_envelope(*call("GET", "/v1/host/sample/test/runs/__probe__/events"), 404, "not_found");
}

TEST_F(HttpApiTest, SeamsServeTheConformanceScenarios) {
    auto probe = call("GET", "/v1/host/sample/test/runs/__probe__/events");
    ASSERT_EQ(probe->response->status, 200);
    EXPECT_EQ(probe->response->body, R"({"events":[]})");
    expect_envelope(*call("POST", "/v1/host/sample/trigger-bridge/deliver",
                          R"({"scenario":"explode"})"),
                    400, "validation_error");
    auto d = call("POST", "/v1/host/sample/trigger-bridge/deliver",
                  R"({"scenario":"dedup","dedupKey":"k-1","source":"webhook"})");
    ASSERT_EQ(d->response->status, 200);
    EXPECT_EQ(bridge_.last_seam->dedup_key, "k-1");
    EXPECT_EQ(bridge_.last_seam->tenant, "acme");
    EXPECT_EQ(d->json().at("runId").as_string(), "run_seam");
    bridge_.append("trigger.delivery.attempted");
    bridge_.append("run.started");
    auto ev = call("GET", "/v1/host/sample/test/runs/run_1/events?type=run.started");
    ASSERT_EQ(ev->json().at("events").as_array().size(), 1u);
    auto reset = call("POST", "/v1/host/sample/test/reset", "{}");
    EXPECT_EQ(reset->response->status, 200);
    EXPECT_EQ(bridge_.resets, 1);
}

TEST_F(HttpApiTest, ReadinessFollowsTheStore) {
    EXPECT_EQ(call("GET", "/readyz", "", "")->response->status, 200);
    EXPECT_EQ(call("GET", "/healthz", "", "")->response->status, 200);
    bridge_.is_ready = false;
    auto s = call("GET", "/readyz", "", "");
    expect_envelope(*s, 503, "service_unavailable");
    EXPECT_TRUE(s->response->header("retry-after").has_value());
}

} // namespace
} // namespace wopbridge::http
