// The /ui dashboard against the real `wopbridge serve`: its static assets and headers over HTTP,
// then the whole operator flow in headless Chromium (tests/browser/dashboard.mjs): sign in, pause,
// a dead letter appears, replay it, see the run. The browser part skips without the tooling.

#include "support/browser.hpp"
#include "support/build_paths.hpp"
#include "support/http_client.hpp"
#include "support/serve_process.hpp"
#include "support/temp_dir.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/wait.h>

namespace wopbridge::testing::dashboard_test {
namespace {

namespace json = boost::json;

constexpr const char* api_key = "hk_dashboard_test";

class DashboardTest : public ::testing::Test {
protected:
    void SetUp() override {
        std::filesystem::create_directories(dir_.path() / "gate");
        config_ = dir_.file("wopbridge.yaml");
        // The workflow's command does not exist until the test (the browser script) writes it:
        // until then every start fails and, after two quick attempts, the delivery dead-letters.
        std::ofstream(config_)
            << "server: {listen: \"127.0.0.1:0\"}\n"
               "auth:\n"
               "  apiKeys:\n"
               "    - {key: "
            << api_key << ", tenant: default, scopes: [webhooks:manage, runs:read]}\n"
               "store: {sqlite: {path: bridge.db}}\n"
               "hostKeyFile: host.key\n"
               "runs: {local: {workflows: [{id: process-order, command: [gate/process.sh]}]}}\n"
               "delivery: {retryPolicy: {maxAttempts: 2, backoff: fixed, baseDelay: 50ms, "
               "jitter: false}}\n"
               "subscriptions:\n"
               "  - {id: orders, source: webhook, workflowId: process-order, "
               "verification: {mode: none}}\n"
               "  - {id: invoices, source: webhook, workflowId: process-order, "
               "verification: {mode: none}}\n";
        ASSERT_TRUE(serve_.start(config_, dir_.file("serve.log"))) << serve_.error;
    }

    http_reply get(const std::string& path, http_headers headers = {}) {
        http_call c;
        c.url = serve_.url() + path;
        c.headers = std::move(headers);
        return perform(c);
    }

    temp_dir dir_;
    std::string config_;
    serve_process serve_;
};

TEST_F(DashboardTest, ServesEmbeddedAssetsWithContentTypesAndStrictHeaders) {
    auto page = get("/ui");
    ASSERT_EQ(page.status, 200) << page.body;
    EXPECT_EQ(page.header("content-type").value_or(""), "text/html; charset=utf-8");
    auto csp = page.header("content-security-policy").value_or("");
    EXPECT_NE(csp.find("script-src 'self'"), std::string::npos) << csp;
    EXPECT_NE(csp.find("frame-ancestors 'none'"), std::string::npos) << csp;
    EXPECT_EQ(csp.find("unsafe-inline"), std::string::npos) << csp;
    EXPECT_EQ(page.header("x-content-type-options").value_or(""), "nosniff");
    EXPECT_EQ(page.header("cache-control").value_or(""), "no-cache");
    EXPECT_NE(page.body.find("<script type=\"module\" src=\"/ui/app.js\"></script>"),
              std::string::npos);
    // No inline script at all: every <script> names a same-origin file.
    EXPECT_EQ(page.body.find("<script>"), std::string::npos);
    EXPECT_EQ(get("/ui/").body, page.body);

    auto js = get("/ui/app.js");
    ASSERT_EQ(js.status, 200);
    EXPECT_EQ(js.header("content-type").value_or(""), "text/javascript; charset=utf-8");
    auto css = get("/ui/style.css");
    ASSERT_EQ(css.status, 200);
    EXPECT_EQ(css.header("content-type").value_or(""), "text/css; charset=utf-8");

    auto etag = js.header("etag").value_or("");
    ASSERT_FALSE(etag.empty());
    auto again = get("/ui/app.js", {{"If-None-Match", etag}});
    EXPECT_EQ(again.status, 304);
    EXPECT_TRUE(again.body.empty());

    EXPECT_EQ(get("/ui/nope.js").status, 404);
    EXPECT_EQ(get("/ui/..%2Fwopbridge.yaml").status, 404);
    // The data behind the page needs the key; the page itself does not.
    EXPECT_EQ(get("/v1/ops/subscriptions").status, 401);
}

TEST_F(DashboardTest, OverviewListsSubscriptionsWithCounts) {
    auto r = get("/v1/ops/subscriptions", {{"Authorization", std::string("Bearer ") + api_key}});
    ASSERT_EQ(r.status, 200) << r.body;
    auto subs = json::parse(r.body).at("subscriptions").as_array();
    ASSERT_EQ(subs.size(), 2u);
    const auto& first = subs[0].as_object(); // ordered by id
    EXPECT_EQ(first.at("subscription").at("subscriptionId"), "invoices");
    EXPECT_EQ(first.at("workflowId"), "process-order");
    EXPECT_EQ(first.at("counts").at("delivered").as_int64(), 0);
    EXPECT_EQ(first.at("deadLetters").as_int64(), 0);
    EXPECT_FALSE(first.contains("lastDelivery"));
}

TEST_F(DashboardTest, OperatorPausesSeesADeadLetterReplaysItAndSeesTheRun) {
    if (auto why = browser_unavailable_reason(); !why.empty()) {
        GTEST_SKIP() << why;
    }
    const std::string shots = std::string(WOPBRIDGE_BINARY_DIR) + "/dashboard";
    std::filesystem::create_directories(shots);
    json::object arg{{"url", serve_.url()},
                     {"apiKey", api_key},
                     {"subscription", "orders"},
                     {"ingestUrl", serve_.url() + "/v1/ingest/orders"},
                     {"workflowScript", dir_.file("gate/process.sh")},
                     {"screenshot", shots + "/dashboard.png"},
                     {"overviewScreenshot", shots + "/dashboard-overview.png"}};
    browser_run run = run_browser_script("dashboard.mjs", json::serialize(arg), 90);
    ASSERT_EQ(run.exit_code, 0) << run.stdout_text;
    json::value parsed;
    ASSERT_NO_THROW(parsed = json::parse(run.last_line)) << run.stdout_text;
    const auto& res = parsed.as_object();
    ASSERT_TRUE(res.at("ok").as_bool()) << run.stdout_text << "\n"
                                  << read_text_file(dir_.file("serve.log"));

    EXPECT_EQ(res.at("keyInSessionStorage"), api_key);
    EXPECT_TRUE(res.at("keyAfterSignOut").is_null());
    EXPECT_TRUE(res.at("keyInUrl").as_array().empty()) << run.last_line;
    EXPECT_TRUE(res.at("consoleErrors").as_array().empty()) << run.last_line;
    EXPECT_TRUE(res.at("pausedSeen").as_bool());
    EXPECT_EQ(res.at("outsidePauseStatus").to_number<int>(), 200);
    EXPECT_LT(res.at("pushedInMs").to_number<int>(), 5000); // pushed, not the 15 s re-read
    EXPECT_EQ(res.at("ingestStatus").to_number<int>(), 202);
    EXPECT_TRUE(res.at("deadLetterSeen").as_bool());
    EXPECT_EQ(res.at("deadLetterReason"), "retries exhausted");
    EXPECT_EQ(res.at("runStatus"), "completed");
    const std::string attempt(res.at("attemptEventId").as_string());
    const std::string replay_run(res.at("replayRunId").as_string());
    EXPECT_NE(std::string(res.at("replayOfText").as_string()).find(attempt), std::string::npos);
    EXPECT_NE(replay_run, std::string(res.at("firstRunId").as_string()));
    // A reload still shows the dead letter replayed, with its replay's state.
    EXPECT_EQ(res.at("replayRunIdAfterReload"), replay_run.c_str());
    EXPECT_EQ(res.at("replayStatusAfterReload"), "delivered");
    EXPECT_TRUE(std::filesystem::file_size(shots + "/dashboard.png") > 10000);

    // The same provenance over the API and in `wopbridge runs show`.
    const std::string bearer = std::string("Bearer ") + api_key;
    auto snap = get("/v1/runs/" + replay_run, {{"Authorization", bearer}});
    ASSERT_EQ(snap.status, 200) << snap.body;
    auto snap_json = json::parse(snap.body).as_object();
    EXPECT_EQ(snap_json.at("status"), "completed");
    EXPECT_EQ(snap_json.at("replayOf").at("attemptEventId"), attempt.c_str());
    EXPECT_EQ(snap_json.at("replayOf").at("subscriptionId"), "orders");

    std::string cmd = std::string(WOPBRIDGE_PROGRAM) + " runs show " + replay_run + " --url " +
                      serve_.url() + " --api-key " + api_key + " 2>&1";
    std::string out;
    if (FILE* p = popen(cmd.c_str(), "r")) {
        char buf[4096];
        std::size_t n;
        while ((n = fread(buf, 1, sizeof buf, p)) > 0) {
            out.append(buf, n);
        }
        EXPECT_EQ(WEXITSTATUS(pclose(p)), 0) << out;
    }
    EXPECT_NE(out.find("replayOf         dead letter " + attempt + " of subscription orders"),
              std::string::npos)
        << out;

    // The CLI shows the dead letter replayed too: its REPLAY column names the delivered run.
    auto cli = [&](const std::string& args) {
        std::string text;
        std::string c = std::string(WOPBRIDGE_PROGRAM) + " " + args + " --url " + serve_.url() +
                        " --api-key " + api_key + " 2>&1";
        if (FILE* p = popen(c.c_str(), "r")) {
            char buf[4096];
            std::size_t n;
            while ((n = fread(buf, 1, sizeof buf, p)) > 0) {
                text.append(buf, n);
            }
            EXPECT_EQ(WEXITSTATUS(pclose(p)), 0) << text;
        }
        return text;
    };
    const std::string dead = cli("dead-letters list orders");
    EXPECT_NE(dead.find("REPLAY"), std::string::npos) << dead;
    EXPECT_NE(dead.find("delivered " + replay_run), std::string::npos) << dead;
    // And `runs list` names the dead letter the replayed run replays.
    const std::string runs = cli("runs list --subscription orders");
    const auto line_at = runs.find(replay_run);
    ASSERT_NE(line_at, std::string::npos) << runs;
    EXPECT_NE(runs.substr(line_at, runs.find('\n', line_at) - line_at).find(attempt),
              std::string::npos)
        << runs;
}

} // namespace
} // namespace wopbridge::testing::dashboard_test
