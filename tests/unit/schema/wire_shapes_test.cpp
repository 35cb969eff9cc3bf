// Hand-built example wire documents against the project's schemas (and the shared upstream copies
// when present), positive and negative. The negative cases are the ones the schemas can catch:
// the trigger payload $defs are open (additionalProperties: true), so a content key in a payload is
// caught by the forbidden-key check of expect_valid_payload, not by the schema.
#include "support/schema_check.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace wopbridge {
namespace {

namespace json = boost::json;
using testing::expect_invalid;
using testing::expect_valid;
using testing::expect_valid_capabilities;
using testing::expect_valid_payload;
using testing::schema_check;

constexpr const char* payloads = "run-event-payloads.schema.json";
const std::string state_changed_def =
    std::string(payloads) + "#/$defs/triggerSubscriptionStateChanged";
const std::string attempted_def = std::string(payloads) + "#/$defs/triggerDeliveryAttempted";

class WireShapesTest : public ::testing::Test {
protected:
    static json::value subscription() {
        return json::parse(R"({
            "subscriptionId": "sub_01HZY3K8Q2",
            "source": "webhook",
            "state": "active",
            "dedupEnabled": true,
            "retryPolicy": {"maxAttempts": 8, "backoff": "exponential"},
            "webhookId": "wh_01HZY3K8Q2",
            "secretFingerprint": "e76bdf08a1c2d3e4"
        })");
    }
    static json::value state_change() {
        return json::parse(R"({"subscriptionId": "sub_1", "source": "webhook",
            "fromState": "active", "toState": "dead-lettered", "reason": "retry-exhausted"})");
    }
    static json::value attempt(const char* outcome = "dead-lettered") {
        json::value v = json::parse(R"({"subscriptionId": "sub_1", "dedupKey": "dk_5f2a9c",
            "attempt": 3})");
        v.as_object()["outcome"] = outcome;
        return v;
    }
    static json::value dead_letter_page() {
        json::object record;
        record["subscriptionId"] = "sub_1";
        record["attemptEventId"] = "evt_01HZY3M0";
        record["attempt"] = attempt();
        record["stateChange"] = state_change();
        record["reason"] = "retries_exhausted";
        record["deadLetteredAt"] = "2026-11-30T05:44:31Z";
        record["expiresAt"] = "2026-12-07T05:44:31Z";
        json::object page;
        page["deliveries"] = json::array{record};
        page["nextCursor"] = "c_opaque";
        return page;
    }
    static json::value run_event() {
        json::object e;
        e["eventId"] = "evt_01HZY3M1";
        e["runId"] = "run_01HZY3M1";
        e["type"] = "trigger.delivery.attempted";
        json::value p = attempt("delivered");
        p.as_object()["runId"] = "run_01HZY3M1";
        e["payload"] = p;
        e["timestamp"] = "2026-11-30T05:44:31.250Z";
        e["sequence"] = 0;
        return e;
    }
    // CONTRACT.md (a), "Minimal discovery JSON that derives the profile".
    static json::value discovery() {
        return json::parse(R"({
            "protocolVersion": "1.0",
            "supportedEnvelopes": [],
            "schemaVersions": {},
            "limits": { "clarificationRounds": 0, "schemaRounds": 0, "envelopesPerTurn": 0 },
            "implementation": { "name": "wopbridge", "version": "0.1.0", "vendor": "wopbridge" },
            "fixtures": ["conformance-noop"],
            "triggerBridge": {
                "supported": true,
                "subscriptionStates": ["active", "paused", "failed", "dead-lettered"],
                "dedup": true,
                "retryPolicy": { "maxAttempts": 3, "backoff": "exponential" },
                "sources": ["queue", "schedule", "webhook"]
            },
            "deadLetter": { "supported": true, "retentionDays": 7 },
            "scheduling": { "supported": true, "cron": true },
            "queueBus": { "supported": true, "backends": ["in-memory"] }
        })");
    }
    static json::value discovery_with_extensions() {
        auto d = discovery();
        auto& tb = d.as_object()["triggerBridge"].as_object();
        tb["ingestion"] = json::parse(R"({"externalSources": ["webhook"],
            "registrationEndpoint": true, "inboundSigning": ["standard-webhooks-1"]})");
        tb["deadLetter"] = json::parse(R"({"retentionDays": 7, "maxPageSize": 100})");
        return d;
    }
};

TEST_F(WireShapesTest, AllSchemasLoad) {
    const auto& sc = schema_check::get();
    EXPECT_TRUE(sc.load_errors().empty()) << sc.load_errors().front();
    for (const char* name :
         {"trigger-subscription.schema.json", "trigger-dead-letter-page.schema.json",
          "run-event.schema.json", "run-event-payloads.schema.json", "capabilities.schema.json",
          "v2/trigger-event.schema.json", "v2/webhook-delivery.schema.json",
          "wopbridge/error-envelope.schema.json", "wopbridge/ingest-response.schema.json",
          "wopbridge/registration-response.schema.json", "wopbridge/deliveries-page.schema.json",
          "wopbridge/capabilities-extensions.schema.json", "wopbridge/runs-page.schema.json",
          "wopbridge/dead-letters-view.schema.json"}) {
        EXPECT_TRUE(sc.project().contains(name)) << name;
    }
}

TEST_F(WireShapesTest, UpstreamCopiesAreVerbatim) {
    namespace fs = std::filesystem;
    fs::path shared = fs::path(WOPBRIDGE_SHARED_DIR) / "openwop" / "schemas";
    if (!fs::is_directory(shared)) {
        GTEST_SKIP() << "no shared OpenWOP schemas at " << shared;
    }
    auto slurp = [](const fs::path& p) {
        std::ifstream in(p, std::ios::binary);
        std::stringstream ss;
        ss << in.rdbuf();
        return ss.str();
    };
    int compared = 0;
    for (const auto& entry : fs::recursive_directory_iterator(shared)) {
        if (!entry.is_regular_file()) {
            continue;
        }
        auto rel = fs::relative(entry.path(), shared);
        auto own = fs::path(WOPBRIDGE_SOURCE_DIR) / "schemas" / rel;
        ASSERT_TRUE(fs::exists(own)) << rel;
        EXPECT_EQ(slurp(own), slurp(entry.path())) << rel << " differs from the shared copy";
        ++compared;
    }
    EXPECT_EQ(compared, 7);
}

// ---- TriggerSubscription ------------------------------------------------------------------------

TEST_F(WireShapesTest, SubscriptionRecordIsValid) {
    EXPECT_TRUE(expect_valid(subscription(), "trigger-subscription.schema.json"));
    EXPECT_TRUE(expect_valid(R"({"subscriptionId":"s","source":"schedule","state":"paused"})",
                             "trigger-subscription.schema.json"));
}

TEST_F(WireShapesTest, SubscriptionRejectsFullSha256Fingerprint) {
    auto s = subscription();
    s.as_object()["secretFingerprint"] = std::string(64, 'a');
    EXPECT_TRUE(expect_invalid(s, "trigger-subscription.schema.json", "/secretFingerprint"));
}

TEST_F(WireShapesTest, SubscriptionRejectsUnknownKeysStatesAndSources) {
    auto s = subscription();
    s.as_object()["signingSecret"] = "whsec_x";
    EXPECT_TRUE(expect_invalid(s, "trigger-subscription.schema.json", "/signingSecret"));
    s = subscription();
    s.as_object()["state"] = "dead_lettered";
    EXPECT_TRUE(expect_invalid(s, "trigger-subscription.schema.json", "/state"));
    s = subscription();
    s.as_object()["source"] = "slack";
    EXPECT_TRUE(expect_invalid(s, "trigger-subscription.schema.json", "/source"));
    s = subscription();
    s.as_object()["retryPolicy"].as_object()["baseDelayMs"] = 1000;
    EXPECT_TRUE(expect_invalid(s, "trigger-subscription.schema.json", "/retryPolicy/baseDelayMs"));
    s = subscription();
    s.as_object().erase("state");
    EXPECT_TRUE(expect_invalid(s, "trigger-subscription.schema.json"));
}

// ---- event payloads -----------------------------------------------------------------------------

TEST_F(WireShapesTest, StateChangePayloadIsValid) {
    EXPECT_TRUE(expect_valid_payload(state_change(), state_changed_def));
    auto p = state_change();
    p.as_object().erase("reason");
    EXPECT_TRUE(expect_valid_payload(p, state_changed_def));
}

TEST_F(WireShapesTest, StateChangePayloadNeedsSourceAndAClosedReason) {
    auto p = state_change();
    p.as_object().erase("source"); // CONTRACT.md (i) 8
    EXPECT_TRUE(expect_invalid(p, state_changed_def));
    p = state_change();
    p.as_object()["reason"] = "retries_exhausted"; // the dead-letter spelling, not this enum
    EXPECT_TRUE(expect_invalid(p, state_changed_def, "/reason"));
    p = state_change();
    p.as_object()["toState"] = "deleted";
    EXPECT_TRUE(expect_invalid(p, state_changed_def, "/toState"));
}

TEST_F(WireShapesTest, AttemptPayloadIsValid) {
    EXPECT_TRUE(expect_valid_payload(attempt("retrying"), attempted_def));
    auto p = attempt("delivered");
    p.as_object()["runId"] = "run_1";
    EXPECT_TRUE(expect_valid_payload(p, attempted_def));
}

TEST_F(WireShapesTest, AttemptPayloadRejectsZeroAttemptAndUnknownOutcome) {
    auto p = attempt();
    p.as_object()["attempt"] = 0;
    EXPECT_TRUE(expect_invalid(p, attempted_def, "/attempt"));
    p = attempt("failed");
    EXPECT_TRUE(expect_invalid(p, attempted_def, "/outcome"));
    p = attempt();
    p.as_object()["dedupKey"] = "";
    EXPECT_TRUE(expect_invalid(p, attempted_def, "/dedupKey"));
}

TEST_F(WireShapesTest, ContentKeyInPayloadPassesTheOpenSchemaButNotThePayloadCheck) {
    auto p = attempt();
    p.as_object()["headers"] = json::object{{"x-hub-signature", "sha256=00"}};
    EXPECT_TRUE(expect_valid(p, attempted_def)); // the $def is additionalProperties: true
    EXPECT_FALSE(expect_valid_payload(p, attempted_def));
    auto s = state_change();
    s.as_object()["body"] = "{}";
    EXPECT_FALSE(expect_valid_payload(s, state_changed_def));
}

// ---- RunEventDoc --------------------------------------------------------------------------------

TEST_F(WireShapesTest, RunEventDocIsValid) {
    EXPECT_TRUE(expect_valid(run_event(), "run-event.schema.json"));
    auto e = run_event();
    e.as_object()["type"] = "run.started";
    e.as_object()["payload"] = json::parse(R"({"workflowId": "conformance-noop"})");
    e.as_object()["sequence"] = 1;
    e.as_object()["causationId"] = "evt_01HZY3M1";
    EXPECT_TRUE(expect_valid(e, "run-event.schema.json"));
    EXPECT_TRUE(
        expect_valid(e.as_object()["payload"], std::string(payloads) + "#/$defs/runStarted"));
}

TEST_F(WireShapesTest, RunEventDocIsClosed) {
    auto e = run_event();
    e.as_object()["causationHostId"] = "host-a"; // a payload field, never an envelope one
    EXPECT_TRUE(expect_invalid(e, "run-event.schema.json", "/causationHostId"));
    e = run_event();
    e.as_object()["sequence"] = -1;
    EXPECT_TRUE(expect_invalid(e, "run-event.schema.json", "/sequence"));
    e = run_event();
    e.as_object()["timestamp"] = "1764481471250";
    EXPECT_TRUE(expect_invalid(e, "run-event.schema.json", "/timestamp"));
    e = run_event();
    e.as_object()["type"] = "trigger.delivered";
    EXPECT_TRUE(expect_invalid(e, "run-event.schema.json", "/type"));
    e = run_event();
    e.as_object()["causationId"] = "";
    EXPECT_TRUE(expect_invalid(e, "run-event.schema.json", "/causationId"));
}

// ---- dead-letter page ---------------------------------------------------------------------------

TEST_F(WireShapesTest, DeadLetterPageIsValid) {
    EXPECT_TRUE(expect_valid(dead_letter_page(), "trigger-dead-letter-page.schema.json"));
    EXPECT_TRUE(expect_valid(R"({"deliveries": []})", "trigger-dead-letter-page.schema.json"));
    // A verification refusal: no state change.
    auto page = dead_letter_page();
    auto& rec = page.as_object()["deliveries"].as_array()[0].as_object();
    rec.erase("stateChange");
    rec["reason"] = "verification_failed";
    EXPECT_TRUE(expect_valid(page, "trigger-dead-letter-page.schema.json"));
}

TEST_F(WireShapesTest, DeadLetterPageRejectsWhatItCan) {
    const char* ref = "trigger-dead-letter-page.schema.json";
    auto page = dead_letter_page();
    page.as_object()["deliveries"].as_array()[0].as_object()["attempt"] = attempt("delivered");
    EXPECT_TRUE(expect_invalid(page, ref, "/deliveries/0/attempt/outcome"));
    page = dead_letter_page();
    page.as_object()["deliveries"].as_array()[0].as_object()["body"] = "{}";
    EXPECT_TRUE(expect_invalid(page, ref, "/deliveries/0/body"));
    page = dead_letter_page();
    page.as_object()["deliveries"].as_array()[0].as_object()["reason"] = "retry-exhausted";
    EXPECT_TRUE(expect_invalid(page, ref, "/deliveries/0/reason"));
    page = dead_letter_page();
    page.as_object()["deliveries"].as_array()[0].as_object()["expiresAt"] = "2026-12-07";
    EXPECT_TRUE(expect_invalid(page, ref, "/deliveries/0/expiresAt"));
    page = dead_letter_page();
    page.as_object()["nextCursor"] = "";
    EXPECT_TRUE(expect_invalid(page, ref, "/nextCursor"));
    page = dead_letter_page();
    page.as_object()["deliveries"].as_array()[0].as_object()["stateChange"].as_object().erase(
        "source");
    EXPECT_TRUE(expect_invalid(page, ref, "/deliveries/0/stateChange"));
}

// ---- discovery ----------------------------------------------------------------------------------

TEST_F(WireShapesTest, DiscoveryDocumentIsValid) {
    EXPECT_TRUE(expect_valid(discovery(), "capabilities.schema.json"));
    EXPECT_TRUE(expect_valid_capabilities(discovery()));
}

TEST_F(WireShapesTest, DiscoveryExtensionsNeedTheExtensionSchema) {
    auto d = discovery_with_extensions();
    // The saved schema predates RFC 0230/0232 and closes triggerBridge: it refuses both keys...
    EXPECT_TRUE(expect_invalid(d, "capabilities.schema.json", "/triggerBridge/deadLetter"));
    EXPECT_TRUE(
        expect_invalid(d, "capabilities.schema.json", "/triggerBridge/ingestion/inboundSigning"));
    // ...and the helper allows exactly those two, checked against the extension schema.
    EXPECT_TRUE(expect_valid_capabilities(d));
    auto bad = d;
    bad.as_object()["triggerBridge"].as_object()["deadLetter"].as_object()["maxPageSize"] = 5000;
    EXPECT_FALSE(expect_valid_capabilities(bad));
    bad = d;
    bad.as_object()["triggerBridge"].as_object()["ingestion"].as_object()["inboundSigning"] =
        json::array{"v1"};
    EXPECT_FALSE(expect_valid_capabilities(bad));
    bad = d;
    bad.as_object()["triggerBridge"].as_object()["deliveriesRead"] = true;
    EXPECT_FALSE(expect_valid_capabilities(bad));
}

TEST_F(WireShapesTest, DiscoveryRejectsMissingLimitsAndBadBlocks) {
    auto d = discovery();
    d.as_object().erase("limits");
    EXPECT_FALSE(expect_valid_capabilities(d));
    d = discovery();
    d.as_object()["deadLetter"].as_object()["retentionDays"] = 0;
    EXPECT_TRUE(expect_invalid(d, "capabilities.schema.json", "/deadLetter/retentionDays"));
    d = discovery();
    d.as_object()["triggerBridge"].as_object()["sources"] = json::array{"webhook", "webhook"};
    EXPECT_TRUE(expect_invalid(d, "capabilities.schema.json", "/triggerBridge/sources"));
}

// ---- project schemas ----------------------------------------------------------------------------

TEST_F(WireShapesTest, ErrorEnvelopeIsClosed) {
    const char* ref = "wopbridge/error-envelope.schema.json";
    EXPECT_TRUE(
        expect_valid(R"({"error":"signature_invalid","message":"signature refused"})", ref));
    EXPECT_TRUE(expect_valid(
        R"({"error":"rate_limited","message":"slow down","details":{"retryAfter":3}})", ref));
    EXPECT_TRUE(expect_invalid(json::parse(R"({"error":"not_found","message":"m","runId":"r"})"),
                               ref, "/runId"));
    EXPECT_TRUE(
        expect_invalid(json::parse(R"({"error":"Not Found","message":"m"})"), ref, "/error"));
    EXPECT_TRUE(expect_invalid(json::parse(R"({"error":"not_found"})"), ref));
    EXPECT_TRUE(expect_invalid(json::parse(R"({"error":"x","message":"m","details":[]})"), ref,
                               "/details"));
}

TEST_F(WireShapesTest, IngestResponses) {
    const char* ref = "wopbridge/ingest-response.schema.json";
    EXPECT_TRUE(expect_valid(R"({"outcome":"delivered","runId":"run_1"})", ref));
    EXPECT_TRUE(expect_valid(R"({"outcome":"duplicate","runId":"run_1"})",
                             std::string(ref) + "#/$defs/duplicate"));
    EXPECT_TRUE(expect_invalid(json::parse(R"({"outcome":"duplicate","runId":"run_1"})"),
                               std::string(ref) + "#/$defs/accepted", "/outcome"));
    EXPECT_TRUE(expect_invalid(json::parse(R"({"outcome":"delivered"})"), ref));
    EXPECT_TRUE(
        expect_invalid(json::parse(R"({"outcome":"delivered","runId":"r","body":"x"})"), ref));
}

TEST_F(WireShapesTest, RegistrationResponse) {
    const char* ref = "wopbridge/registration-response.schema.json";
    json::object r;
    r["subscription"] = subscription();
    r["binding"] = json::parse(R"({"ingestUrl":"https://bridge.example/v1/ingest/sub_01HZY3K8Q2",
        "secretFingerprint":"e76bdf08a1c2d3e4",
        "signingSecret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"})");
    EXPECT_TRUE(expect_valid(r, ref));
    auto bad = json::value(r);
    bad.as_object()["binding"].as_object()["secretFingerprint"] = std::string(64, 'f');
    EXPECT_TRUE(expect_invalid(bad, ref, "/binding/secretFingerprint"));
    bad = json::value(r);
    bad.as_object()["subscription"].as_object()["secretFingerprint"] = std::string(64, 'f');
    EXPECT_TRUE(expect_invalid(bad, ref, "/subscription/secretFingerprint"));
    bad = json::value(r);
    bad.as_object()["binding"].as_object()["signingSecret"] = "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    EXPECT_TRUE(expect_invalid(bad, ref, "/binding/signingSecret"));
    bad = json::value(r);
    bad.as_object().erase("binding");
    EXPECT_TRUE(expect_invalid(bad, ref));
}

TEST_F(WireShapesTest, DeliveriesPage) {
    const char* ref = "wopbridge/deliveries-page.schema.json";
    EXPECT_TRUE(expect_valid(R"({"deliveries":[{"deliveryId":"dlv_1","subscriptionId":"sub_1",
        "dedupKey":"dk_1","status":"in_flight","attempts":1,"runId":"run_1",
        "receivedAt":"2026-11-30T05:44:31Z","updatedAt":"2026-11-30T05:44:32Z",
        "dueAt":"2026-11-30T05:45:32Z","lastError":"run host answered 503"}],
        "nextCursor":"c1"})",
                             ref));
    EXPECT_TRUE(expect_invalid(json::parse(R"({"deliveries":[{"deliveryId":"dlv_1",
        "subscriptionId":"sub_1","status":"done","attempts":1,
        "receivedAt":"2026-11-30T05:44:31Z"}]})"),
                               ref, "/deliveries/0/status"));
    EXPECT_TRUE(expect_invalid(json::parse(R"({"deliveries":[{"deliveryId":"dlv_1",
        "subscriptionId":"sub_1","status":"pending","attempts":0,
        "receivedAt":"2026-11-30T05:44:31Z","body":"{}"}]})"),
                               ref, "/deliveries/0/body"));
}

TEST_F(WireShapesTest, RunsPage) {
    const char* ref = "wopbridge/runs-page.schema.json";
    EXPECT_TRUE(expect_valid(R"({"runs":[{"runId":"run_1","workflowId":"wf","status":"completed",
        "createdAt":"2026-11-30T05:44:31Z","updatedAt":"2026-11-30T05:44:32Z",
        "subscriptionId":"sub_1","deliveryId":"dlv_1",
        "replayOf":{"subscriptionId":"sub_1","attemptEventId":"evt_1"}}],"nextCursor":"c1"})",
                             ref));
    EXPECT_TRUE(expect_valid(R"({"runs":[]})", ref));
    EXPECT_TRUE(expect_invalid(json::parse(R"({"runs":[{"runId":"run_1","workflowId":"wf",
        "status":"done","createdAt":"2026-11-30T05:44:31Z","updatedAt":"2026-11-30T05:44:32Z",
        "subscriptionId":"sub_1","deliveryId":"dlv_1"}]})"),
                               ref, "/runs/0/status"));
    EXPECT_TRUE(expect_invalid(json::parse(R"({"runs":[],"items":[]})"), ref));
}

TEST_F(WireShapesTest, DeadLettersView) {
    const char* ref = "wopbridge/dead-letters-view.schema.json";
    const std::string dl = R"({"subscriptionId":"sub_1","attemptEventId":"evt_1",
        "attempt":{"subscriptionId":"sub_1","dedupKey":"dk_1","attempt":3,
        "outcome":"dead-lettered"},"reason":"retries_exhausted",
        "deadLetteredAt":"2026-11-30T05:44:31Z","expiresAt":"2026-12-07T05:44:31Z"})";
    EXPECT_TRUE(expect_valid(std::string_view(R"({"deadLetters":[{"deadLetter":)" + dl +
                                 R"(,"replay":{"deliveryId":"dlv_2","subscriptionId":"sub_1",
        "status":"held","attempts":0,"runId":"run_2","receivedAt":"2026-11-30T06:00:00Z"}}]})"),
                             ref));
    EXPECT_TRUE(
        expect_valid(std::string_view(R"({"deadLetters":[{"deadLetter":)" + dl + "}]}"), ref));
    EXPECT_TRUE(expect_invalid(json::parse(R"({"deadLetters":[{"deadLetter":)" + dl +
                                           R"(,"replay":{"deliveryId":"dlv_2",
        "subscriptionId":"sub_1","status":"replayed","attempts":0,
        "receivedAt":"2026-11-30T06:00:00Z"}}]})"),
                               ref, "/deadLetters/0/replay/status"));
    EXPECT_TRUE(expect_invalid(json::parse(R"({"deadLetters":[{"replay":{}}]})"), ref));
}

// ---- v2 in-run and outbound shapes --------------------------------------------------------------

TEST_F(WireShapesTest, TriggerEventCarriesExactlyItsSourceObject) {
    const char* ref = "v2/trigger-event.schema.json";
    auto ev = json::parse(R"({"source":"webhook","subscriptionId":"default/sub_1",
        "deliveryId":"default/dlv_1","receivedAt":"2026-11-30T05:44:31Z","verified":true,
        "contentTrust":"untrusted","webhook":{"method":"POST","headers":{},"body":{}}})");
    EXPECT_TRUE(expect_valid(ev, ref));
    ev.as_object()["email"] = json::object{};
    EXPECT_TRUE(expect_invalid(ev, ref));
    ev.as_object().erase("email");
    ev.as_object()["contentTrust"] = "trusted";
    EXPECT_TRUE(expect_invalid(ev, ref, "/contentTrust"));
}

TEST_F(WireShapesTest, WebhookDeliveryEnvelopeIsClosed) {
    const char* ref = "v2/webhook-delivery.schema.json";
    json::object d;
    d["runId"] = "default/run_1";
    d["workspaceId"] = "default";
    d["event"] = run_event();
    EXPECT_TRUE(expect_valid(json::value(d), ref));
    // The v2 file's relative "run-event.schema.json" resolves to a v2 document that is not
    // published (tolerated, unchecked), so the nested event is checked against v1 here.
    EXPECT_TRUE(expect_valid(d["event"], "run-event.schema.json"));
    d["tenantId"] = "t";
    EXPECT_TRUE(expect_invalid(json::value(d), ref, "/tenantId"));
}

} // namespace
} // namespace wopbridge
