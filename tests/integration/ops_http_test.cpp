// Operator routes end to end: a real http::server on 127.0.0.1:0, the real bridge on a temporary
// SQLite file, libcurl as the client. Held events, dead-letter replay (one and bulk), /metrics,
// the run listing and the dead letters with their replays.

#include "store/store.hpp"
#include "support/api_bridge_fixture.hpp"
#include "support/eventually.hpp"
#include "support/http_client.hpp"
#include "support/schema_check.hpp"
#include "support/scripted_run_starter.hpp"
#include "support/temp_dir.hpp"
#include "support/webhook_signer.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <cstring>
#include <set>
#include <sstream>
#include <thread>

namespace wopbridge::ops_http_test {
namespace {

namespace json = boost::json;
using testing::eventually;
using testing::http_reply;
using behaviour = testing::scripted_run_starter::behaviour;

class OpsHttpTest : public testing::api_bridge_fixture {
protected:
    void SetUp() override {
        settings_.public_url = "http://127.0.0.1:1";
        settings_.default_retry = {1, backoff_kind::none, 0, 0, false};
        settings_.local_workflows = {"wf", "wf-flaky"};
        auto starter = std::make_unique<testing::scripted_run_starter>(settings_.local_workflows);
        starter_ = starter.get();
        starter_->set_behaviour("wf-flaky", behaviour::permanent);
        http::api_options ao;
        ao.keys = {{"hk_acme", "acme", {"webhooks:manage", "runs:read"}},
                   {"hk_globex", "globex", {"webhooks:manage", "runs:read"}},
                   {"hk_reader", "acme", {"runs:read"}}};
        start_stack(std::move(starter), ao, 1);
    }

    struct reg {
        std::string id, secret, path;
    };

    reg register_webhook(const std::string& workflow, const std::string& extra = "") {
        auto r = call("POST", "/v1/trigger-subscriptions",
                      R"({"source":"webhook","workflowId":")" + workflow + "\"" + extra + "}");
        EXPECT_EQ(r.status, 201) << r.body;
        auto v = json::parse(r.body);
        reg out;
        out.id = std::string(v.at("subscription").at("subscriptionId").as_string());
        out.secret = std::string(v.at("binding").at("signingSecret").as_string());
        std::string url(v.at("binding").at("ingestUrl").as_string());
        out.path = url.substr(url.find("/v1/ingest/"));
        return out;
    }

    http_reply ingest(const reg& r, const std::string& body = R"({"n":1})") {
        auto ts = std::chrono::duration_cast<std::chrono::seconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
        return call("POST", r.path, body, "",
                    testing::standard_webhook_headers(r.secret, testing::fresh_webhook_id(), ts, body));
    }


    json::array dead_letters(const std::string& sub) {
        auto r = call("GET", "/v1/trigger-subscriptions/" + sub + "/dead-letters");
        if (r.status != 200) {
            return {};
        }
        auto v = json::parse(r.body).as_object();
        for (const char* k : {"deliveries", "deadLetters", "items"}) {
            if (auto* a = v.if_contains(k); a && a->is_array()) {
                return a->as_array();
            }
        }
        return {};
    }

    testing::scripted_run_starter* starter_ = nullptr;
};

TEST_F(OpsHttpTest, HeldWhilePausedThenDeliveredOnResume) {
    auto r = register_webhook("wf", R"(,"whenNotActive":"hold")");
    ASSERT_EQ(call("PATCH", "/v1/trigger-subscriptions/" + r.id, R"({"state":"paused"})").status, 200);
    auto held = ingest(r);
    ASSERT_EQ(held.status, 202) << held.body;
    auto v = json::parse(held.body);
    EXPECT_EQ(v.at("outcome"), "held");
    std::string run_id(v.at("runId").as_string());
    ASSERT_EQ(call("PATCH", "/v1/trigger-subscriptions/" + r.id, R"({"state":"active"})").status, 200);
    EXPECT_TRUE(eventually([&] { return call("GET", "/v1/runs/" + run_id).status == 200; }));

    auto refuse = register_webhook("wf");
    ASSERT_EQ(call("PATCH", "/v1/trigger-subscriptions/" + refuse.id, R"({"state":"paused"})").status,
              200);
    EXPECT_EQ(ingest(refuse).status, 409);
    EXPECT_EQ(call("POST", "/v1/trigger-subscriptions",
                   R"({"source":"webhook","workflowId":"wf","whenNotActive":"maybe"})")
                  .status,
              400);
}

TEST_F(OpsHttpTest, ReplayOneAndBulkAndJobStatus) {
    auto r = register_webhook("wf-flaky");
    ASSERT_EQ(ingest(r, R"({"n":1})").status, 202);
    ASSERT_TRUE(eventually([&] { return dead_letters(r.id).size() == 1; }));
    auto dl = dead_letters(r.id);
    std::string attempt(dl[0].at("attemptEventId").as_string());
    starter_->set_behaviour("wf-flaky", behaviour::complete);
    ASSERT_EQ(call("PATCH", "/v1/trigger-subscriptions/" + r.id, R"({"state":"active"})").status, 200);

    auto base = "/v1/trigger-subscriptions/" + r.id + "/dead-letters/";
    EXPECT_EQ(call("POST", base + attempt + "/replay", "{}", "hk_globex").status, 404);
    auto one = call("POST", base + attempt + "/replay", "{}");
    ASSERT_EQ(one.status, 202) << one.body;
    std::string run_id(json::parse(one.body).at("runId").as_string());
    ASSERT_TRUE(eventually([&] {
        auto p = call("GET", "/v1/runs/" + run_id + "/events/poll?timeout=1");
        return p.status == 200 && p.body.find("replayOf") != std::string::npos;
    }));

    EXPECT_EQ(call("POST", base + "replay", R"({"rate":0})").status, 400);
    auto bulk = call("POST", base + "replay", R"({"all":true,"rate":200})");
    ASSERT_EQ(bulk.status, 202) << bulk.body;
    std::string job(json::parse(bulk.body).at("jobId").as_string());
    EXPECT_EQ(call("GET", "/v1/replay-jobs/" + job, "", "hk_globex").status, 404);
    ASSERT_TRUE(eventually([&] {
        auto s = call("GET", "/v1/replay-jobs/" + job);
        return s.status == 200 && json::parse(s.body).at("state") == "completed";
    }));
    // Completed means every item settled: the counters are exact, the last item included.
    auto done = json::parse(call("GET", "/v1/replay-jobs/" + job).body);
    EXPECT_GE(done.at("total").to_number<int>(), 1) << done;
    EXPECT_EQ(done.at("replayed"), done.at("total")) << done;
    EXPECT_EQ(done.at("delivered"), done.at("total")) << done;
    EXPECT_EQ(done.at("failed").to_number<int>(), 0) << done;
}

// Every sample line is `name{labels} value` or `name value`, each family announced by HELP/TYPE.
void expect_prometheus_text(const std::string& text) {
    std::istringstream lines(text);
    std::string line;
    std::set<std::string> typed;
    while (std::getline(lines, line)) {
        if (line.rfind("# TYPE ", 0) == 0) {
            typed.insert(line.substr(7, line.find(' ', 7) - 7));
            continue;
        }
        if (line.empty() || line[0] == '#') {
            continue;
        }
        const auto name_end = line.find_first_of("{ ");
        ASSERT_NE(name_end, std::string::npos) << line;
        std::string name = line.substr(0, name_end);
        for (const char* suffix : {"_bucket", "_sum", "_count"}) {
            if (!typed.contains(name) && name.ends_with(suffix)) {
                name.resize(name.size() - std::strlen(suffix));
            }
        }
        EXPECT_TRUE(typed.contains(name)) << "sample before its TYPE: " << line;
        const auto value_at = line.rfind(' ');
        EXPECT_TRUE(line[name_end] == ' ' || line[value_at - 1] == '}') << line;
        std::size_t used = 0;
        const std::string value = line.substr(value_at + 1);
        if (value != "+Inf" && value != "-Inf" && value != "NaN") {
            EXPECT_NO_THROW((void)std::stod(value, &used)) << line;
            EXPECT_EQ(used, value.size()) << line;
        }
    }
}

TEST_F(OpsHttpTest, MetricsWithoutCredentialsNameNoSubscription) {
    auto a = register_webhook("wf");
    ASSERT_EQ(ingest(a).status, 202);
    auto m = call("GET", "/metrics", "", "");
    ASSERT_EQ(m.status, 200);
    EXPECT_EQ(m.header("content-type").value_or("").rfind("text/plain", 0), 0u);
    // Aggregate only: the outcome counter without the subscription label, no id anywhere.
    EXPECT_NE(m.body.find("wopbridge_ingests_total{outcome=\"accepted\"} 1"), std::string::npos)
        << m.body;
    EXPECT_EQ(m.body.find("subscription=\""), std::string::npos) << m.body;
    EXPECT_EQ(m.body.find(a.id), std::string::npos) << m.body;
    EXPECT_NE(m.body.find("# TYPE wopbridge_subscriptions gauge"), std::string::npos);
    expect_prometheus_text(m.body);
}

TEST_F(OpsHttpTest, MetricsPerSubscriptionNeedAKeyAndShowOnlyItsTenant) {
    auto mine = register_webhook("wf");
    ASSERT_EQ(ingest(mine).status, 202);
    auto r = call("POST", "/v1/trigger-subscriptions", R"({"source":"webhook","workflowId":"wf"})",
                  "hk_globex");
    ASSERT_EQ(r.status, 201) << r.body;
    const std::string theirs(
        json::parse(r.body).at("subscription").at("subscriptionId").as_string());

    auto m = call("GET", "/metrics"); // hk_acme: webhooks:manage
    ASSERT_EQ(m.status, 200) << m.body;
    EXPECT_NE(m.body.find("wopbridge_ingests_total{subscription=\"" + mine.id +
                          "\",outcome=\"accepted\"} 1"),
              std::string::npos)
        << m.body;
    EXPECT_EQ(m.body.find(theirs), std::string::npos) << m.body; // another tenant's id
    expect_prometheus_text(m.body);

    EXPECT_EQ(call("GET", "/metrics", "", "hk_unknown").status, 401);
    EXPECT_EQ(call("GET", "/metrics", "", "hk_reader").status, 403); // runs:read only
}

TEST_F(OpsHttpTest, MetricsCountEveryDocumentedIngestOutcome) {
    auto a = register_webhook("wf");
    ASSERT_EQ(call("PATCH", "/v1/trigger-subscriptions/" + a.id, R"({"state":"paused"})").status,
              200);
    EXPECT_EQ(ingest(a).status, 409);                                   // not_active
    EXPECT_EQ(call("POST", "/v1/ingest/sub_unknown", "{}", "").status, 404); // not_found
    reg forged = a;
    forged.secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    ASSERT_EQ(call("PATCH", "/v1/trigger-subscriptions/" + a.id, R"({"state":"active"})").status,
              200);
    EXPECT_EQ(ingest(forged).status, 401); // signature_invalid
    auto m = call("GET", "/metrics", "", "");
    ASSERT_EQ(m.status, 200);
    for (const char* outcome : {"not_active", "not_found", "signature_invalid"}) {
        EXPECT_NE(m.body.find(std::string("wopbridge_ingests_total{outcome=\"") + outcome +
                              "\"} 1"),
                  std::string::npos)
            << outcome << "\n"
            << m.body;
    }
    auto scoped = call("GET", "/metrics");
    EXPECT_NE(scoped.body.find("wopbridge_ingests_total{subscription=\"" + a.id +
                               "\",outcome=\"not_active\"} 1"),
              std::string::npos)
        << scoped.body;
    // The unknown id is never a label value.
    EXPECT_EQ(scoped.body.find("sub_unknown"), std::string::npos);
    expect_prometheus_text(m.body);
}

json::array runs_of(const http_reply& r) {
    if (r.status != 200) {
        return {};
    }
    return json::parse(r.body).at("runs").as_array();
}

TEST_F(OpsHttpTest, RunsListFiltersPagesNewestFirstAndStaysInTheTenant) {
    auto a = register_webhook("wf");
    for (int i = 0; i < 3; ++i) {
        ASSERT_EQ(ingest(a, R"({"n":)" + std::to_string(i) + "}").status, 202);
    }
    const std::string by_sub = "/v1/runs?subscriptionId=" + a.id;
    ASSERT_TRUE(eventually([&] {
        auto runs = runs_of(call("GET", by_sub + "&status=completed"));
        return runs.size() == 3;
    }));
    auto all = call("GET", "/v1/runs");
    ASSERT_EQ(all.status, 200) << all.body;
    EXPECT_TRUE(
        testing::expect_valid(std::string_view(all.body), "wopbridge/runs-page.schema.json"));
    EXPECT_EQ(runs_of(all).size(), 3u);

    // Pages of two, newest first, no run twice; the cursor only continues the same filters.
    auto first = call("GET", by_sub + "&limit=2");
    ASSERT_EQ(first.status, 200) << first.body;
    EXPECT_TRUE(
        testing::expect_valid(std::string_view(first.body), "wopbridge/runs-page.schema.json"));
    auto p1 = json::parse(first.body).as_object();
    ASSERT_EQ(p1.at("runs").as_array().size(), 2u);
    const std::string cursor(p1.at("nextCursor").as_string());
    auto second = call("GET", by_sub + "&limit=2&cursor=" + cursor);
    ASSERT_EQ(second.status, 200) << second.body;
    auto p2 = json::parse(second.body).as_object();
    ASSERT_EQ(p2.at("runs").as_array().size(), 1u);
    EXPECT_FALSE(p2.contains("nextCursor"));
    std::set<std::string> ids;
    std::string previous = "9999";
    for (const auto* pg : {&p1, &p2}) {
        for (const auto& run : pg->at("runs").as_array()) {
            ids.insert(std::string(run.at("runId").as_string()));
            const std::string created(run.at("createdAt").as_string());
            EXPECT_LE(created, previous);
            previous = created;
            EXPECT_EQ(run.at("subscriptionId"), a.id.c_str());
            EXPECT_EQ(run.at("workflowId"), "wf");
        }
    }
    EXPECT_EQ(ids.size(), 3u);
    auto foreign = call("GET", "/v1/runs?workflowId=wf&limit=2&cursor=" + cursor);
    EXPECT_EQ(foreign.status, 400) << foreign.body;
    EXPECT_NE(foreign.body.find("\"field\":\"cursor\""), std::string::npos) << foreign.body;

    // Filters.
    EXPECT_EQ(runs_of(call("GET", "/v1/runs?workflowId=wf")).size(), 3u);
    EXPECT_EQ(runs_of(call("GET", "/v1/runs?workflowId=wf-flaky")).size(), 0u);
    EXPECT_EQ(runs_of(call("GET", "/v1/runs?status=failed")).size(), 0u);
    EXPECT_EQ(runs_of(call("GET", "/v1/runs?subscriptionId=other")).size(), 0u);
    EXPECT_EQ(runs_of(call("GET", "/v1/runs?from=2100-01-01T00:00:00Z")).size(), 0u);
    EXPECT_EQ(runs_of(call("GET", "/v1/runs?to=2000-01-01T00:00:00Z")).size(), 0u);
    EXPECT_EQ(runs_of(call("GET", "/v1/runs?from=2000-01-01T00:00:00Z&to=2100-01-01T00:00:00Z"))
                  .size(),
              3u);
    auto bad_status = call("GET", "/v1/runs?status=done");
    EXPECT_EQ(bad_status.status, 400);
    EXPECT_NE(bad_status.body.find("\"field\":\"status\""), std::string::npos);
    EXPECT_EQ(call("GET", "/v1/runs?from=yesterday").status, 400);
    EXPECT_EQ(call("GET", "/v1/runs?limit=0").status, 400);

    // Tenant-scoped, and runs:read is the scope.
    EXPECT_EQ(runs_of(call("GET", "/v1/runs", "", "hk_globex")).size(), 0u);
    EXPECT_EQ(runs_of(call("GET", "/v1/runs", "", "hk_reader")).size(), 3u);
    EXPECT_EQ(call("GET", "/v1/runs", "", "").status, 401);
}

TEST_F(OpsHttpTest, DeadLettersViewShowsEachReplayAndRunsNameWhatTheyReplay) {
    auto r = register_webhook("wf-flaky");
    ASSERT_EQ(ingest(r).status, 202);
    ASSERT_TRUE(eventually([&] { return dead_letters(r.id).size() == 1; }));
    const std::string view_path = "/v1/ops/subscriptions/" + r.id + "/dead-letters";
    auto before = call("GET", view_path);
    ASSERT_EQ(before.status, 200) << before.body;
    EXPECT_TRUE(
        testing::expect_valid(std::string_view(before.body),
                              "wopbridge/dead-letters-view.schema.json"));
    auto item = json::parse(before.body).at("deadLetters").at(0).as_object();
    EXPECT_FALSE(item.contains("replay"));
    const std::string attempt(item.at("deadLetter").at("attemptEventId").as_string());
    // The wrapped record is exactly the contract's dead-letter record.
    EXPECT_TRUE(testing::expect_valid(
        json::value(item.at("deadLetter")),
        "trigger-dead-letter-page.schema.json#/$defs/deadLetteredTriggerDelivery"));

    // Replayed while the subscription is dead-lettered: held.
    auto one = call("POST", "/v1/trigger-subscriptions/" + r.id + "/dead-letters/" + attempt +
                                "/replay",
                    "{}");
    ASSERT_EQ(one.status, 202) << one.body;
    const std::string run_id(json::parse(one.body).at("runId").as_string());
    auto held = call("GET", view_path);
    EXPECT_TRUE(
        testing::expect_valid(std::string_view(held.body),
                              "wopbridge/dead-letters-view.schema.json"));
    auto held_item = json::parse(held.body).at("deadLetters").at(0).as_object();
    ASSERT_TRUE(held_item.contains("replay")) << held.body;
    EXPECT_EQ(held_item.at("replay").at("status"), "held");
    EXPECT_EQ(held_item.at("replay").at("runId"), run_id.c_str());

    // Re-activated: the replay is delivered; the run says what it replays.
    starter_->set_behaviour("wf-flaky", behaviour::complete);
    ASSERT_EQ(call("PATCH", "/v1/trigger-subscriptions/" + r.id, R"({"state":"active"})").status,
              200);
    ASSERT_TRUE(eventually([&] {
        auto v = call("GET", view_path);
        return v.status == 200 &&
               v.body.find("\"status\":\"delivered\"") != std::string::npos;
    }));
    auto runs = runs_of(call("GET", "/v1/runs?subscriptionId=" + r.id));
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_EQ(runs[0].at("runId"), run_id.c_str());
    EXPECT_EQ(runs[0].at("replayOf").at("attemptEventId"), attempt.c_str());

    EXPECT_EQ(call("GET", view_path, "", "hk_globex").status, 404);
    EXPECT_EQ(call("GET", view_path, "", "hk_reader").status, 403);
    EXPECT_EQ(call("GET", view_path + "?cursor=garbage").status, 400);
}

// The dashboard's live channel: a change frame follows each write to the tenant (an ingest, its
// delivery, a pause), none follows another tenant's, and every frame is content-free.
TEST_F(OpsHttpTest, ChangeStreamTellsTheTenantOfItsOwnWritesOnly) {
    auto acme = register_webhook("wf");
    std::atomic<bool> stop{false};
    std::mutex mu;
    std::string acme_seen, globex_seen;
    auto follow = [&](const std::string& key, std::string& seen) {
        testing::http_call c;
        c.url = base_ + "/v1/ops/changes";
        c.headers = {{"Authorization", "Bearer " + key}};
        c.timeout_ms = 20000;
        return testing::perform_streaming(c, [&](const std::string& body) {
            std::lock_guard lock(mu);
            seen = body;
            return stop.load();
        });
    };
    http_reply acme_reply, globex_reply;
    std::thread a([&] { acme_reply = follow("hk_acme", acme_seen); });
    std::thread g([&] { globex_reply = follow("hk_globex", globex_seen); });
    auto count = [&](const std::string& seen, const std::string& what) {
        std::lock_guard lock(mu);
        std::size_t n = 0;
        for (auto at = seen.find(what); at != std::string::npos; at = seen.find(what, at + 1)) {
            ++n;
        }
        return n;
    };
    ASSERT_TRUE(eventually([&] {
        return count(acme_seen, "event: ready") == 1 && count(globex_seen, "event: ready") == 1;
    }));

    ASSERT_EQ(ingest(acme).status, 202);
    EXPECT_TRUE(eventually([&] { return count(acme_seen, "event: change") >= 1; }));
    const auto after_ingest = count(acme_seen, "event: change");
    ASSERT_EQ(call("PATCH", "/v1/trigger-subscriptions/" + acme.id, R"({"state":"paused"})").status, 200);
    EXPECT_TRUE(eventually([&] { return count(acme_seen, "event: change") > after_ingest; }));

    // A globex write reaches globex's stream: by then any acme frame it was sent would be there too.
    auto globex_sub = call("POST", "/v1/trigger-subscriptions", R"({"source":"webhook","workflowId":"wf"})",
                           "hk_globex");
    ASSERT_EQ(globex_sub.status, 201);
    EXPECT_TRUE(eventually([&] { return count(globex_seen, "event: change") == 1; }));
    stop = true;
    ASSERT_EQ(ingest(acme).status, 409); // paused: refused, and nothing to tell
    ASSERT_EQ(call("PATCH", "/v1/trigger-subscriptions/" + acme.id, R"({"state":"active"})").status, 200);
    a.join();
    ASSERT_EQ(call("POST", "/v1/trigger-subscriptions", R"({"source":"webhook","workflowId":"wf"})",
                   "hk_globex").status, 201);
    g.join();

    EXPECT_EQ(acme_reply.status, 200);
    EXPECT_EQ(acme_reply.header("content-type").value_or(""), "text/event-stream");
    for (const auto* seen : {&acme_seen, &globex_seen}) {
        std::istringstream lines(*seen);
        for (std::string line; std::getline(lines, line);) {
            if (line.rfind("data:", 0) == 0) {
                EXPECT_EQ(line, "data: {}"); // content-free
            }
        }
    }
    EXPECT_EQ(call("GET", "/v1/ops/changes", "", "hk_reader").status, 403);
    EXPECT_EQ(call("GET", "/v1/ops/changes", "", "").status, 401);
}

} // namespace
} // namespace wopbridge::ops_http_test
