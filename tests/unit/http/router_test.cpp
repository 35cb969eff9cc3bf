#include "core/scopes.hpp"
#include "http/router.hpp"

#include <gtest/gtest.h>

namespace wopbridge::http {
namespace {

class RouterTest : public ::testing::Test {
protected:
    route_match match(std::string_view method, std::string_view path) {
        return match_route(route_table(), method, path);
    }
};

TEST_F(RouterTest, MatchesLiteralAndParameterisedPaths) {
    auto m = match("GET", "/v1/trigger-subscriptions/sub_1/dead-letters");
    ASSERT_EQ(m.status, 200);
    EXPECT_EQ(m.matched->pattern, "/v1/trigger-subscriptions/{subscriptionId}/dead-letters");
    EXPECT_EQ(m.params.at("subscriptionId"), "sub_1");
    EXPECT_EQ(match("GET", "/v1/runs/run_1/events/poll").matched->pattern,
              "/v1/runs/{runId}/events/poll");
    EXPECT_EQ(match("GET", "/v1/runs/run_1/events").matched->pattern, "/v1/runs/{runId}/events");
    EXPECT_EQ(match("GET", "/v1/runs/run_1").matched->pattern, "/v1/runs/{runId}");
}

TEST_F(RouterTest, DashboardPagesAndOverviewAreRouted) {
    EXPECT_EQ(match("GET", "/ui").matched->pattern, "/ui");
    EXPECT_EQ(match("GET", "/ui/").matched->pattern, "/ui/");
    auto asset = match("GET", "/ui/app.js");
    ASSERT_EQ(asset.status, 200);
    EXPECT_EQ(asset.matched->pattern, "/ui/{asset}");
    EXPECT_EQ(asset.params.at("asset"), "app.js");
    EXPECT_EQ(match("GET", "/ui/a/b.js").status, 404); // flat: no nested paths
    EXPECT_EQ(match("POST", "/ui").status, 405);
    auto overview = match("GET", "/v1/ops/subscriptions");
    ASSERT_EQ(overview.status, 200);
    EXPECT_EQ(overview.matched->pattern, "/v1/ops/subscriptions");
    EXPECT_EQ(overview.matched->scope, "webhooks:manage");
}

TEST_F(RouterTest, DecodesPercentEncodedParameters) {
    auto m = match("GET", "/v1/runs/a%2Fb");
    ASSERT_EQ(m.status, 200);
    EXPECT_EQ(m.params.at("runId"), "a/b");
}

TEST_F(RouterTest, GreedyTailTakesTheRestOfTheIngestPath) {
    auto m = match("GET", "/v1/ingest/sub_1/forms/contact/submit");
    ASSERT_EQ(m.status, 200);
    EXPECT_EQ(m.matched->pattern, "/v1/ingest/{subscriptionId}/{connectorPath}");
    EXPECT_EQ(m.params.at("subscriptionId"), "sub_1");
    EXPECT_EQ(m.params.at("connectorPath"), "forms/contact/submit");
    EXPECT_EQ(match("POST", "/v1/ingest/sub_1").matched->pattern, "/v1/ingest/{subscriptionId}");
}

TEST_F(RouterTest, UnknownPathsAreNotFound) {
    EXPECT_EQ(match("GET", "/v1/unknown").status, 404);
    EXPECT_EQ(match("GET", "/v1/runs/").status, 404); // empty parameter
    EXPECT_EQ(match("GET", "").status, 404);
    EXPECT_EQ(match("GET", "/v1/trigger-subscriptions/a/b/c").status, 404);
}

TEST_F(RouterTest, KnownPathWithAnotherMethodIsMethodNotAllowed) {
    auto m = match("PUT", "/v1/trigger-subscriptions");
    EXPECT_EQ(m.status, 405);
    EXPECT_EQ(m.allow, "POST, GET");
    EXPECT_EQ(match("DELETE", "/healthz").allow, "GET");
}

TEST_F(RouterTest, OnlyIngestAndDiscoveryAreUnauthenticated) {
    for (const auto& r : route_table()) {
        const bool open_route = r.pattern == "/.well-known/openwop" ||
                                r.pattern == "/v1/openapi.json" || r.pattern == "/healthz" ||
                                r.pattern == "/readyz" || r.pattern.starts_with("/v1/ingest/") ||
                                // the dashboard's static files; the data behind them needs a key
                                r.pattern == "/ui" || r.pattern.starts_with("/ui/");
        // The Prometheus scrape: open, a key (when sent) widens it to the tenant's series.
        const auto expected = r.pattern == "/metrics" ? route_auth::optional_key
                              : open_route            ? route_auth::none
                                                      : route_auth::api_key;
        EXPECT_EQ(r.auth, expected) << r.method << " " << r.pattern;
        if (r.pattern.find("/v1/host/sample/") == 0) {
            EXPECT_TRUE(r.seam) << r.pattern;
        }
    }
}

// Every row is served: a handler, and only in-memory answers on the I/O thread.
TEST_F(RouterTest, EveryRouteHasAHandlerAndOnlyStaticOnesRunOnTheIoThread) {
    for (const auto& r : route_table()) {
        EXPECT_NE(r.handler, nullptr) << r.method << " " << r.pattern;
        if (r.on_io_thread) {
            EXPECT_EQ(r.auth, route_auth::none) << r.pattern;
            EXPECT_EQ(r.method, "GET") << r.pattern;
            EXPECT_FALSE(r.ingest_body) << r.pattern;
        }
    }
}

TEST_F(RouterTest, RunListingAndDeadLetterViewAreRoutedApartFromTheirNeighbours) {
    auto list = match("GET", "/v1/runs");
    ASSERT_EQ(list.status, 200);
    EXPECT_EQ(list.matched->pattern, "/v1/runs");
    EXPECT_EQ(list.matched->scope, "runs:read");
    EXPECT_EQ(match("GET", "/v1/runs/run_1").matched->pattern, "/v1/runs/{runId}");
    EXPECT_EQ(match("POST", "/v1/runs").status, 405);
    auto view = match("GET", "/v1/ops/subscriptions/sub_1/dead-letters");
    ASSERT_EQ(view.status, 200);
    EXPECT_EQ(view.matched->pattern, "/v1/ops/subscriptions/{subscriptionId}/dead-letters");
    EXPECT_EQ(view.matched->scope, "webhooks:manage");
    EXPECT_EQ(view.params.at("subscriptionId"), "sub_1");
}

// The config loader refuses any scope outside core/scopes.hpp, so every route's scope must be one.
TEST_F(RouterTest, EveryRouteScopeIsAKnownScope) {
    for (const auto& r : route_table()) {
        if (!r.scope.empty()) {
            EXPECT_TRUE(is_known_scope(r.scope)) << r.scope << " on " << r.pattern;
        }
    }
}

} // namespace
} // namespace wopbridge::http
