// Several real `wopbridge serve` nodes on one PostgreSQL database (issue 6): a burst of signed
// ingests spread across three nodes with one SIGKILLed mid-burst, a PostgreSQL outage under live
// nodes, schedule ticks and state changes across nodes, outbound webhooks sent for another node's
// runs.
#include "cluster_fixture.hpp"

#include <gtest/gtest.h>

namespace wopbridge::testing::cluster::cluster_failover_test {
namespace {

TEST_F(ClusterTest, SigkilledNodeMidBurstLosesNothingAndItsLeasesMoveOn) {
    stalled_node_key_ = node_key(2);
    ASSERT_NO_FATAL_FAILURE(start_nodes(3));
    ASSERT_EQ(nodes_.size(), 3u);

    // 180 events (216 requests), node i % 3; every tenth also to the two other nodes at once.
    constexpr int events = 180;
    std::vector<ingest_job> jobs;
    std::set<std::string> ids;
    for (int i = 0; i < events; ++i) {
        const std::string id = fresh_webhook_id();
        ids.insert(id);
        jobs.emplace_back(id, i % 3);
        if (i % 10 == 0) {
            jobs.emplace_back(id, (i + 1) % 3);
            jobs.emplace_back(id, (i + 2) % 3);
        }
    }
    bool killed = false;
    send_all(jobs, urls_, 24, [&](int completed) {
        if (killed || completed < static_cast<int>(jobs.size()) / 3) {
            return;
        }
        // Node 2 has run starts in flight (its upstream calls never answer): kill it now.
        ASSERT_TRUE(eventually([&] {
            auto s = starts();
            return std::any_of(s.begin(), s.end(), [&](const auto& e) {
                return std::count(e.second.begin(), e.second.end(), "Bearer " + node_key(2)) > 0;
            });
        })) << node_logs();
        nodes_[2]->signal(SIGKILL);
        EXPECT_EQ(nodes_[2]->wait_exit(10), -1);
        killed = true;
    });
    ASSERT_TRUE(killed);

    // A client retries what got no answer (the dead node's requests) on a live node. Whatever the
    // dead node committed without answering is a duplicate then, with its original run.
    std::vector<ingest_job> retries;
    std::map<std::string, std::set<std::string>> runs_by_id;
    int duplicates_at_once = 0;
    for (const auto& j : jobs) {
        if (acknowledged(j.status)) {
            runs_by_id[j.webhook_id].insert(run_id_of(j.body));
            duplicates_at_once += j.status == 200 ? 1 : 0;
        } else {
            EXPECT_EQ(j.node, 2) << j.status << " " << j.body;
        }
    }
    for (const auto& id : ids) {
        if (!runs_by_id.count(id)) {
            retries.emplace_back(id, 0);
        }
    }
    send_all(retries, urls_, 8, [](int) {});
    for (const auto& j : retries) {
        ASSERT_TRUE(acknowledged(j.status)) << j.status << " " << j.body;
        runs_by_id[j.webhook_id].insert(run_id_of(j.body));
    }
    EXPECT_GT(duplicates_at_once, 0);

    // Every event acknowledged, each with exactly one run id however many nodes answered it.
    ASSERT_EQ(runs_by_id.size(), ids.size());
    std::set<std::string> acked_runs;
    for (const auto& [id, runs] : runs_by_id) {
        ASSERT_EQ(runs.size(), 1u) << id;
        ASSERT_FALSE(runs.begin()->empty()) << id;
        acked_runs.insert(*runs.begin());
    }

    // Every delivery finishes on the live nodes, the dead node's leased ones after their lease.
    ASSERT_TRUE(eventually(
        [&] { return query("SELECT COUNT(*) FROM deliveries WHERE status <> 'delivered'") == "0"; },
        std::chrono::seconds(45)))
        << query("SELECT status, COUNT(*) FROM deliveries GROUP BY status") << "\n"
        << node_logs();

    const std::string n = std::to_string(events);
    EXPECT_EQ(query("SELECT COUNT(*) FROM deliveries"), n);
    EXPECT_EQ(query("SELECT COUNT(*), COUNT(DISTINCT delivery_id) FROM runs"), n + "|" + n);
    EXPECT_EQ(query("SELECT COUNT(*) FROM deliveries WHERE attempts <> 1"), "0");
    std::set<std::string> stored_runs;
    std::istringstream lines(query("SELECT id FROM runs"));
    for (std::string line; std::getline(lines, line);) {
        stored_runs.insert(line);
    }
    EXPECT_EQ(stored_runs, acked_runs);
    // Event sequences per run: 0..n-1 without gaps; exactly one run.started, caused by the
    // attempt that delivered it.
    EXPECT_EQ(query("SELECT COUNT(*) FROM (SELECT run_id FROM run_events GROUP BY run_id "
                    "HAVING MIN(sequence) <> 0 OR MAX(sequence) <> COUNT(*) - 1) g"),
              "0");
    EXPECT_EQ(query("SELECT COUNT(*) FROM runs r WHERE (SELECT COUNT(*) FROM run_events e "
                    "WHERE e.run_id = r.id AND e.type = 'run.started' AND e.causation_id IN "
                    "(SELECT event_id FROM run_events a WHERE a.run_id = r.id AND "
                    "a.type = 'trigger.delivery.attempted')) <> 1"),
              "0");

    // The dead node's claims were taken over: each run start it began was started again, with the
    // same Idempotency-Key, by a live node, and that delivery has its one run.
    int taken_over = 0;
    for (const auto& [key, callers] : starts()) {
        const bool by_dead =
            std::count(callers.begin(), callers.end(), "Bearer " + node_key(2)) > 0;
        if (!by_dead) {
            continue;
        }
        ++taken_over;
        EXPECT_TRUE(std::any_of(callers.begin(), callers.end(), [&](const auto& c) {
            return c != "Bearer " + node_key(2);
        })) << key;
        EXPECT_EQ(query("SELECT status || '|' || (SELECT COUNT(*) FROM runs r WHERE "
                        "r.delivery_id = d.id) FROM deliveries d WHERE d.id = '" +
                        key + "'"),
                  "delivered|1")
            << key;
    }
    EXPECT_GT(taken_over, 0);
}

TEST_F(ClusterTest, PostgresOutageAnswers503ThenNodesReconnectByThemselves) {
    ASSERT_NO_FATAL_FAILURE(start_nodes(2));
    ASSERT_EQ(nodes_.size(), 2u);
    std::vector<ingest_job> before{{fresh_webhook_id(), 0}, {fresh_webhook_id(), 1}};
    send_all(before, urls_, 2, [](int) {});
    for (const auto& j : before) {
        ASSERT_EQ(j.status, 202) << j.body;
    }

    ASSERT_TRUE(pg_->stop());
    std::vector<ingest_job> during{{fresh_webhook_id(), 0}, {fresh_webhook_id(), 1}};
    send_all(during, urls_, 2, [](int) {});
    for (const auto& j : during) {
        EXPECT_EQ(j.status, 503) << j.body;
        EXPECT_FALSE(j.retry_after.empty());
        EXPECT_GT(std::atoi(j.retry_after.c_str()), 0) << j.retry_after;
    }
    http_call ready;
    ready.url = urls_[0] + "/readyz";
    EXPECT_EQ(perform(ready).status, 503);

    // Same processes: once the server is back, both nodes take ingests again, including the
    // events refused during the outage (the sender's retry).
    ASSERT_TRUE(pg_->start());
    for (int node = 0; node < 2; ++node) {
        EXPECT_TRUE(eventually(
            [&] {
                std::vector<ingest_job> again{
                    {during[static_cast<std::size_t>(node)].webhook_id, node}};
                send_all(again, urls_, 1, [](int) {});
                return again[0].status == 202;
            },
            std::chrono::seconds(15)))
            << node_logs();
    }
    EXPECT_EQ(perform(ready).status, 200);
    ASSERT_TRUE(eventually(
        [&] { return query("SELECT COUNT(*) FROM deliveries WHERE status = 'delivered'") == "4"; },
        std::chrono::seconds(15)))
        << node_logs();
    EXPECT_EQ(query("SELECT COUNT(*) FROM runs"), "4");
}

std::int64_t metric_value(const std::string& text, const std::string& series) {
    auto at = text.find("\n" + series + " ");
    if (at == std::string::npos) {
        return 0;
    }
    return std::atoll(text.c_str() + at + series.size() + 2);
}

TEST_F(ClusterTest, ScheduleTicksFireOnceAcrossNodesAndStateChangesReachEveryNode) {
    with_schedule_ = true;
    ASSERT_NO_FATAL_FAILURE(start_nodes(3));
    ASSERT_EQ(nodes_.size(), 3u);

    // Every node evaluates the 1 s schedule; each tick makes one delivery (ticks are epoch-aligned
    // and deduped on the tick time), the other nodes' intakes of it are duplicates.
    ASSERT_TRUE(eventually(
        [&] {
            return std::atoi(query("SELECT COUNT(*) FROM deliveries WHERE subscription_id = "
                                   "'heartbeat' AND status = 'delivered'")
                                 .c_str()) >= 3;
        },
        std::chrono::seconds(20)))
        << node_logs();
    EXPECT_EQ(query("SELECT COUNT(*) - COUNT(DISTINCT received_at) FROM deliveries "
                    "WHERE subscription_id = 'heartbeat'"),
              "0");
    EXPECT_EQ(query("SELECT COUNT(*) FROM runs WHERE subscription_id = 'heartbeat'"),
              query("SELECT COUNT(*) FROM deliveries WHERE subscription_id = 'heartbeat' "
                    "AND status = 'delivered'"));
    std::int64_t duplicates = 0;
    for (const auto& url : urls_) {
        http_call m;
        m.url = url + "/metrics";
        m.headers = {{"authorization", "Bearer hk_cluster"}};
        duplicates += metric_value(perform(m).body, "wopbridge_ingests_total{subscription="
                                                    "\"heartbeat\",outcome=\"duplicate\"}");
    }
    EXPECT_GT(duplicates, 0);

    // A pause through node 0 holds on nodes 1 and 2 as soon as PostgreSQL's change notification
    // reaches them (milliseconds; docs/deployment.md); a resume through node 2 likewise.
    auto patch = [&](int node, const std::string& state) {
        http_call c;
        c.method = "PATCH";
        c.url = urls_[static_cast<std::size_t>(node)] + "/v1/trigger-subscriptions/orders";
        c.headers = {{"authorization", "Bearer hk_cluster"}, {"content-type", "application/json"}};
        c.body = R"({"state":")" + state + R"("})";
        return perform(c).status;
    };
    auto state_on = [&](int node) {
        http_call c;
        c.url = urls_[static_cast<std::size_t>(node)] + "/v1/trigger-subscriptions/orders";
        c.headers = {{"authorization", "Bearer hk_cluster"}};
        auto body = perform(c).body;
        auto at = body.find("\"state\":\"");
        return at == std::string::npos ? std::string{}
                                       : body.substr(at + 9, body.find('"', at + 9) - at - 9);
    };
    ASSERT_EQ(patch(0, "paused"), 200);
    EXPECT_TRUE(eventually([&] { return state_on(1) == "paused" && state_on(2) == "paused"; },
                           std::chrono::seconds(2)));
    std::vector<ingest_job> refused{{fresh_webhook_id(), 1}, {fresh_webhook_id(), 2}};
    send_all(refused, urls_, 2, [](int) {});
    for (const auto& j : refused) {
        EXPECT_EQ(j.status, 409) << j.body;
    }
    ASSERT_EQ(patch(2, "active"), 200);
    EXPECT_TRUE(eventually([&] { return state_on(0) == "active"; }, std::chrono::seconds(2)));
    std::vector<ingest_job> taken{{refused[0].webhook_id, 0}};
    send_all(taken, urls_, 1, [](int) {});
    EXPECT_EQ(taken[0].status, 202) << taken[0].body;
}

// Outbound webhooks on the shared database: registered through one node, fed by runs that another
// node delivers, each run event sent (the outbox rows commit with the run event).
TEST_F(ClusterTest, OutboundWebhookRegisteredOnOneNodeIsSentForRunsOfAnother) {
    with_webhooks_ = true;
    std::mutex got_mu;
    std::vector<std::string> got;
    http_test_server receiver([&](const http_request& r) {
        std::lock_guard lock(got_mu);
        got.push_back(r.body);
        return http_response{};
    });
    ASSERT_NO_FATAL_FAILURE(start_nodes(2));
    ASSERT_EQ(nodes_.size(), 2u);
    http_call reg;
    reg.method = "POST";
    reg.url = urls_[0] + "/v1/webhooks";
    reg.headers = {{"authorization", "Bearer hk_cluster"}, {"content-type", "application/json"}};
    reg.body = R"({"url":")" + receiver.base_url() + R"(/hook","events":["run.started"]})";
    auto created = perform(reg);
    ASSERT_EQ(created.status, 201) << created.body;

    std::vector<ingest_job> jobs{
        {fresh_webhook_id(), 1}, {fresh_webhook_id(), 1}, {fresh_webhook_id(), 1}};
    send_all(jobs, urls_, 3, [](int) {});
    std::set<std::string> runs;
    for (const auto& j : jobs) {
        ASSERT_EQ(j.status, 202) << j.body;
        runs.insert(run_id_of(j.body));
    }
    ASSERT_TRUE(eventually(
        [&] {
            return query("SELECT COUNT(*) FROM outbound_deliveries WHERE status = 'delivered'") ==
                   "3";
        },
        std::chrono::seconds(20)))
        << query("SELECT status, COUNT(*) FROM outbound_deliveries GROUP BY status") << "\n"
        << node_logs();
    std::lock_guard lock(got_mu);
    for (const auto& run : runs) {
        EXPECT_TRUE(std::any_of(got.begin(), got.end(), [&](const std::string& body) {
            return body.find(run) != std::string::npos;
        })) << run;
    }
}

} // namespace
} // namespace wopbridge::testing::cluster::cluster_failover_test
