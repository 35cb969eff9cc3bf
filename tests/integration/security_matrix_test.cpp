// Scopes and tenants over every route of the real `wopbridge serve`, table-driven from the router's
// own route table (a new route is covered without editing this test): each authenticated route
// refuses a key without its scope with 403 and the envelope, and another tenant's objects answer
// 404 (and are left untouched).
#include "http/router.hpp"

#include "support/http_client.hpp"
#include "support/serve_process.hpp"
#include "support/temp_dir.hpp"
#include "support/webhook_signer.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace wopbridge::testing::security_matrix_test {
namespace {

namespace json = boost::json;
constexpr const char* secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

// Scoped keys: one per scope, one with none, and a full key for each tenant.
const std::map<std::string, std::vector<std::string>> scoped_keys = {
    {"hk_only_manage", {"webhooks:manage"}},
    {"hk_only_read", {"runs:read"}},
    {"hk_only_create", {"runs:create"}},
    {"hk_no_scope", {}},
};

class SecurityMatrixTest : public ::testing::Test {
  protected:
    void SetUp() override {
        std::ofstream out(dir_.file("wopbridge.yaml"));
        out << "server: {listen: \"127.0.0.1:0\"}\n"
               "auth:\n"
               "  apiKeys:\n"
               "    - {key: hk_acme, tenant: acme, scopes: [webhooks:manage, runs:read, "
               "runs:create]}\n"
               "    - {key: hk_globex, tenant: globex, scopes: [webhooks:manage, runs:read, "
               "runs:create]}\n";
        for (const auto& [k, scopes] : scoped_keys) {
            out << "    - {key: " << k << ", tenant: acme, scopes: [";
            for (std::size_t i = 0; i < scopes.size(); ++i) {
                out << (i ? ", " : "") << scopes[i];
            }
            out << "]}\n";
        }
        out << "store: {sqlite: {path: bridge.db}}\n"
               "hostKeyFile: host.key\n"
               "testSeams: true\n"
               "webhooks: {allowLoopbackHttp: true}\n"
               "runs: {local: {workflows: [{id: conformance-noop}]}}\n"
               "subscriptions:\n"
               "  - {id: orders, tenant: acme, source: webhook, workflowId: conformance-noop, "
               "signingSecret: \""
            << secret << "\"}\n";
    }

    http_reply call(const std::string& method, const std::string& path, const std::string& key,
                    const std::string& body = "") {
        http_call c;
        c.method = method;
        c.url = serve_.url() + path;
        if (!key.empty()) {
            c.headers.emplace_back("authorization", "Bearer " + key);
        }
        if (!body.empty()) {
            c.headers.emplace_back("content-type", "application/json");
        }
        c.body = body;
        c.timeout_ms = 10000;
        return perform(c);
    }

    static json::object envelope(const http_reply& r) {
        boost::system::error_code ec;
        auto v = json::parse(r.body, ec);
        if (ec || !v.is_object()) {
            ADD_FAILURE() << "not an envelope: " << r.body;
            return {};
        }
        for (const auto& kv : v.as_object()) {
            EXPECT_TRUE(kv.key() == "error" || kv.key() == "message" || kv.key() == "details")
                << r.body;
        }
        return v.as_object();
    }

    static std::string text(const json::value& v) {
        return v.is_string() ? std::string(v.as_string()) : json::serialize(v);
    }

    http_reply ingest(const std::string& body, const std::string& id, bool good_signature) {
        http_call c;
        c.method = "POST";
        c.url = serve_.url() + "/v1/ingest/orders";
        c.headers =
            standard_webhook_headers(good_signature ? secret : "whsec_c2VjcmV0c2VjcmV0c2VjcmV0", id,
                                     std::time(nullptr), body);
        c.headers.emplace_back("content-type", "application/json");
        c.body = body;
        return perform(c);
    }

    temp_dir dir_;
    serve_process serve_;
};

TEST_F(SecurityMatrixTest, EveryRouteRefusesAKeyWithoutItsScopeAndHidesOtherTenantsObjects) {
    ASSERT_TRUE(serve_.start(dir_.file("wopbridge.yaml"), dir_.file("serve.log"))) << serve_.error;

    // Objects of tenant acme: a run (and its delivery), a dead letter, a replay job, a webhook.
    auto accepted = ingest(R"({"order":1})", fresh_webhook_id(), true);
    ASSERT_EQ(accepted.status, 202) << accepted.body;
    const std::string run_id(json::parse(accepted.body).at("runId").as_string());
    ASSERT_EQ(ingest(R"({"order":2})", fresh_webhook_id(), false).status, 401);
    auto dls = call("GET", "/v1/trigger-subscriptions/orders/dead-letters", "hk_acme");
    ASSERT_EQ(dls.status, 200) << dls.body;
    const auto dl_page = json::parse(dls.body);
    const auto& dl_items = dl_page.at("deliveries").as_array();
    ASSERT_FALSE(dl_items.empty()) << dls.body;
    const std::string attempt_id(dl_items.at(0).at("attemptEventId").as_string());
    auto job = call("POST", "/v1/trigger-subscriptions/orders/dead-letters/replay", "hk_acme",
                    R"({"all":true})");
    ASSERT_EQ(job.status, 202) << job.body;
    const std::string job_id(json::parse(job.body).at("jobId").as_string());
    auto hook = call("POST", "/v1/webhooks", "hk_acme",
                     R"({"url":"http://127.0.0.1:9/hook","events":["run.completed"]})");
    ASSERT_EQ(hook.status, 201) << hook.body;
    const std::string webhook_id(json::parse(hook.body).at("webhookId").as_string());

    const std::map<std::string, std::string> ids = {
        {"subscriptionId", "orders"},   {"runId", run_id},
        {"attemptEventId", attempt_id}, {"jobId", job_id},
        {"webhookId", webhook_id},      {"connectorPath", "x"},
        {"asset", "app.js"}};
    // Bodies that would succeed for the owner, so a 404 can only come from the tenant check.
    const std::map<std::string, std::string> bodies = {
        {"POST /v1/trigger-subscriptions",
         R"({"source":"webhook","workflowId":"conformance-noop"})"},
        {"PATCH /v1/trigger-subscriptions/{subscriptionId}", R"({"state":"paused"})"},
        {"POST /v1/trigger-subscriptions/{subscriptionId}/dead-letters/replay", R"({"all":true})"},
        {"POST /v1/webhooks", R"({"url":"http://127.0.0.1:9/h","events":["run.completed"]})"},
        {"POST /v1/host/sample/trigger-bridge/deliver",
         R"({"scenario":"deliver","dedupKey":"k1"})"},
    };

    int scope_checks = 0;
    int tenant_checks = 0;
    std::set<std::string> public_routes;
    for (const auto& rt : http::route_table()) {
        std::string path(rt.pattern);
        bool owned = false; // names an object of a tenant
        for (const auto& [name, value] : ids) {
            const std::string token = "{" + name + "}";
            if (auto at = path.find(token); at != std::string::npos) {
                path.replace(at, token.size(), value);
                owned = owned || (name != "connectorPath" && name != "asset");
            }
        }
        ASSERT_EQ(path.find('{'), std::string::npos) << "no id for " << rt.pattern;
        const std::string method(rt.method);
        const std::string what = method + " " + std::string(rt.pattern);
        if (rt.auth != http::route_auth::api_key) {
            public_routes.insert(what);
            continue;
        }
        auto body_it = bodies.find(what);
        const std::string body = body_it == bodies.end() ? "" : body_it->second;
        // Every authenticated route names a scope, and refuses every key that lacks it.
        ASSERT_FALSE(rt.scope.empty()) << what;
        EXPECT_EQ(call(method, path, "").status, 401) << what;
        for (const auto& [key, scopes] : scoped_keys) {
            if (std::find(scopes.begin(), scopes.end(), rt.scope) != scopes.end()) {
                continue;
            }
            auto r = call(method, path, key, body);
            EXPECT_EQ(r.status, 403) << what << " with " << key << ": " << r.body;
            auto e = envelope(r);
            EXPECT_EQ(text(e["error"]), "forbidden") << what;
            auto* details = e["details"].if_object();
            ASSERT_NE(details, nullptr) << what;
            EXPECT_EQ(text((*details)["requiredScope"]), std::string(rt.scope)) << what;
            ++scope_checks;
        }
        if (owned && rt.seam) {
            // The conformance seam answers an unknown run with an empty log: another tenant's run
            // must get exactly that answer (its existence is not revealed), not its events.
            auto foreign = call(method, path, "hk_globex", body);
            std::string unknown_path(rt.pattern);
            unknown_path.replace(unknown_path.find("{runId}"), 7, "run_does_not_exist");
            auto unknown = call(method, unknown_path, "hk_globex", body);
            EXPECT_EQ(foreign.status, unknown.status) << what;
            EXPECT_EQ(foreign.body, unknown.body) << what;
            ++tenant_checks;
        } else if (owned) {
            auto r = call(method, path, "hk_globex", body);
            EXPECT_EQ(r.status, 404) << what << ": " << r.body;
            EXPECT_EQ(text(envelope(r)["error"]), "not_found") << what;
            ++tenant_checks;
        }
    }
    std::printf("[ matrix ] %d scope refusals, %d foreign-tenant probes over %zu routes\n",
                scope_checks, tenant_checks, http::route_table().size());
    EXPECT_GE(tenant_checks, 14);
    // The unauthenticated routes are exactly discovery, health, metrics and ingest (the signature
    // or the connector authenticates ingest).
    EXPECT_EQ(public_routes, (std::set<std::string>{
                                 "GET /.well-known/openwop", "GET /v1/openapi.json", "GET /healthz",
                                 "GET /readyz", "GET /metrics", "POST /v1/ingest/{subscriptionId}",
                                 "GET /v1/ingest/{subscriptionId}",
                                 "POST /v1/ingest/{subscriptionId}/{connectorPath}",
                                 "GET /v1/ingest/{subscriptionId}/{connectorPath}",
                                 // The dashboard's static assets; its data comes from the API.
                                 "GET /ui", "GET /ui/", "GET /ui/{asset}"}));

    // The foreign DELETE/PATCH probes changed nothing.
    auto sub = call("GET", "/v1/trigger-subscriptions/orders", "hk_acme");
    ASSERT_EQ(sub.status, 200) << sub.body;
    EXPECT_EQ(json::parse(sub.body).at("subscription").at("state").as_string(), "active")
        << sub.body;
    EXPECT_EQ(call("GET", "/v1/runs/" + run_id, "hk_acme").status, 200);
    auto hooks = call("GET", "/v1/webhooks", "hk_acme");
    EXPECT_NE(hooks.body.find(webhook_id), std::string::npos) << hooks.body;
    serve_.signal(SIGTERM);
    EXPECT_EQ(serve_.wait_exit(), 0);
}

} // namespace
} // namespace wopbridge::testing::security_matrix_test
