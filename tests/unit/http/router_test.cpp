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
    EXPECT_EQ(m.matched->id, route_id::subscription_dead_letters);
    EXPECT_EQ(m.params.at("subscriptionId"), "sub_1");
    EXPECT_EQ(match("GET", "/v1/runs/run_1/events/poll").matched->id, route_id::run_events_poll);
    EXPECT_EQ(match("GET", "/v1/runs/run_1/events").matched->id, route_id::run_events_stream);
    EXPECT_EQ(match("GET", "/v1/runs/run_1").matched->id, route_id::run_get);
}

TEST_F(RouterTest, DashboardPagesAndOverviewAreRouted) {
    EXPECT_EQ(match("GET", "/ui").matched->id, route_id::ui_index);
    EXPECT_EQ(match("GET", "/ui/").matched->id, route_id::ui_index);
    auto asset = match("GET", "/ui/app.js");
    ASSERT_EQ(asset.status, 200);
    EXPECT_EQ(asset.matched->id, route_id::ui_asset);
    EXPECT_EQ(asset.params.at("asset"), "app.js");
    EXPECT_EQ(match("GET", "/ui/a/b.js").status, 404); // flat: no nested paths
    EXPECT_EQ(match("POST", "/ui").status, 405);
    auto overview = match("GET", "/v1/ops/subscriptions");
    ASSERT_EQ(overview.status, 200);
    EXPECT_EQ(overview.matched->id, route_id::subscriptions_overview);
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
    EXPECT_EQ(m.matched->id, route_id::ingest_connector_path);
    EXPECT_EQ(m.params.at("subscriptionId"), "sub_1");
    EXPECT_EQ(m.params.at("connectorPath"), "forms/contact/submit");
    EXPECT_EQ(match("POST", "/v1/ingest/sub_1").matched->id, route_id::ingest);
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
        bool open_route = r.id == route_id::well_known || r.id == route_id::openapi ||
                          r.id == route_id::healthz || r.id == route_id::readyz ||
                          r.id == route_id::ingest || r.id == route_id::ingest_connector_path ||
                          r.id == route_id::metrics || // Prometheus scrape: no auth by default
                          // the dashboard's static files; the data behind them needs a key
                          r.id == route_id::ui_index || r.id == route_id::ui_asset;
        EXPECT_EQ(r.authenticated, !open_route) << r.method << " " << r.pattern;
        if (r.pattern.find("/v1/host/sample/") == 0) {
            EXPECT_TRUE(r.seam) << r.pattern;
        }
    }
}

TEST_F(RouterTest, RunListingAndDeadLetterViewAreRoutedApartFromTheirNeighbours) {
    auto list = match("GET", "/v1/runs");
    ASSERT_EQ(list.status, 200);
    EXPECT_EQ(list.matched->id, route_id::run_list);
    EXPECT_EQ(list.matched->scope, "runs:read");
    EXPECT_EQ(match("GET", "/v1/runs/run_1").matched->id, route_id::run_get);
    EXPECT_EQ(match("POST", "/v1/runs").status, 405);
    auto view = match("GET", "/v1/ops/subscriptions/sub_1/dead-letters");
    ASSERT_EQ(view.status, 200);
    EXPECT_EQ(view.matched->id, route_id::subscription_dead_letters_view);
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
