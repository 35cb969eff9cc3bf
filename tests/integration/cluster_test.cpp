// Several real `wopbridge serve` nodes on one PostgreSQL database (issue 6): a burst of signed
// ingests spread across three nodes, the same webhook-id sent to several nodes at once, one node
// SIGKILLed mid-burst with deliveries in flight; a PostgreSQL outage under live nodes; schedule
// ticks and state changes across nodes.
// Runs go to a fake upstream OpenWOP host, which tells the nodes apart by their API key and holds
// the killed node's run starts open, so that node is certainly mid-delivery when it dies.
#include "support/build_paths.hpp"
#include "support/child_process.hpp"
#include "support/eventually.hpp"
#include "support/http_client.hpp"
#include "support/http_test_server.hpp"
#include "support/postgres_server.hpp"
#include "support/serve_process.hpp"
#include "support/temp_dir.hpp"
#include "support/webhook_signer.hpp"

#include <gtest/gtest.h>

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace wopbridge::testing {
namespace {

constexpr const char* secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

struct ingest_job {
    ingest_job(std::string id, int to) : webhook_id(std::move(id)), node(to) {}
    std::string webhook_id;
    int node = 0;
    long status = 0; // 0: no answer (refused, reset, the node died)
    std::string body;
    std::string retry_after;
};

std::string run_id_of(const std::string& body) {
    auto at = body.find("\"runId\":\"");
    if (at == std::string::npos) {
        return {};
    }
    at += 9;
    return body.substr(at, body.find('"', at) - at);
}

bool acknowledged(long status) {
    return status >= 200 && status < 300;
}

// Sends every job as a signed POST with one libcurl multi handle, at most `parallel` at a time.
// `on_done(completed)` runs on this thread after each answer and may block (it pauses sending).
void send_all(std::vector<ingest_job>& jobs, const std::vector<std::string>& urls, int parallel,
              const std::function<void(int)>& on_done) {
    struct transfer {
        CURL* easy = nullptr;
        curl_slist* headers = nullptr;
        std::string payload;
        std::string response;
        std::string retry_after;
        std::size_t job = 0;
    };
    auto write_cb = +[](char* p, size_t n, size_t m, void* user) -> size_t {
        static_cast<std::string*>(user)->append(p, n * m);
        return n * m;
    };
    auto header_cb = +[](char* p, size_t n, size_t m, void* user) -> size_t {
        std::string line(p, n * m);
        std::string lower = line;
        std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
        if (lower.rfind("retry-after:", 0) == 0) {
            std::string v = line.substr(12);
            v.erase(0, v.find_first_not_of(" \t"));
            v.erase(v.find_last_not_of(" \t\r\n") + 1);
            *static_cast<std::string*>(user) = v;
        }
        return n * m;
    };
    CURLM* multi = curl_multi_init();
    std::vector<std::unique_ptr<transfer>> active;
    std::size_t next = 0;
    int completed = 0;
    auto add = [&](std::size_t i) {
        auto t = std::make_unique<transfer>();
        t->job = i;
        t->payload = R"({"order":")" + jobs[i].webhook_id + R"(","amount":42})";
        for (const auto& [k, v] : standard_webhook_headers(secret, jobs[i].webhook_id,
                                                           std::time(nullptr), t->payload)) {
            t->headers = curl_slist_append(t->headers, (k + ": " + v).c_str());
        }
        t->headers = curl_slist_append(t->headers, "Content-Type: application/json");
        t->easy = curl_easy_init();
        const std::string url = urls[static_cast<std::size_t>(jobs[i].node)] + "/v1/ingest/orders";
        curl_easy_setopt(t->easy, CURLOPT_URL, url.c_str());
        curl_easy_setopt(t->easy, CURLOPT_POSTFIELDS, t->payload.c_str());
        curl_easy_setopt(t->easy, CURLOPT_HTTPHEADER, t->headers);
        curl_easy_setopt(t->easy, CURLOPT_WRITEFUNCTION, write_cb);
        curl_easy_setopt(t->easy, CURLOPT_WRITEDATA, &t->response);
        curl_easy_setopt(t->easy, CURLOPT_HEADERFUNCTION, header_cb);
        curl_easy_setopt(t->easy, CURLOPT_HEADERDATA, &t->retry_after);
        curl_easy_setopt(t->easy, CURLOPT_TIMEOUT_MS, 15000L);
        curl_easy_setopt(t->easy, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(t->easy, CURLOPT_PRIVATE, t.get());
        curl_multi_add_handle(multi, t->easy);
        active.push_back(std::move(t));
    };
    while (next < jobs.size() || !active.empty()) {
        while (next < jobs.size() && active.size() < static_cast<std::size_t>(parallel)) {
            add(next++);
        }
        int running = 0;
        curl_multi_perform(multi, &running);
        int queued = 0;
        while (CURLMsg* msg = curl_multi_info_read(multi, &queued)) {
            if (msg->msg != CURLMSG_DONE) {
                continue;
            }
            transfer* t = nullptr;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &t);
            ingest_job& job = jobs[t->job];
            long status = 0;
            if (msg->data.result == CURLE_OK) {
                curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
            }
            job.status = status;
            job.body = t->response;
            job.retry_after = t->retry_after;
            curl_multi_remove_handle(multi, t->easy);
            curl_easy_cleanup(t->easy);
            curl_slist_free_all(t->headers);
            std::erase_if(active, [&](const auto& p) { return p.get() == t; });
            on_done(++completed);
        }
        if (!active.empty()) {
            curl_multi_poll(multi, nullptr, 0, 100, nullptr);
        }
    }
    curl_multi_cleanup(multi);
}

class ClusterTest : public ::testing::Test {
  protected:
    void SetUp() override {
        pg_ = postgres_server::shared();
        if (pg_ == nullptr) {
            GTEST_SKIP() << "PostgreSQL unavailable: "
                         << postgres_server::shared_unavailable_reason();
        }
        db_ = pg_->create_database();
        ASSERT_FALSE(db_.empty());
        upstream_ = std::make_unique<http_test_server>([this](const http_request& r) {
            const std::string key = r.header("idempotency-key");
            const std::string who = r.header("authorization");
            http_response out;
            {
                std::lock_guard lock(mu_);
                starts_[key].push_back(who);
                if (who == "Bearer " + stalled_node_key_) {
                    // Held open until the server stops: this node never finishes a delivery.
                    out.delay = std::chrono::seconds(60);
                }
            }
            out.status = 201;
            out.headers = {{"content-type", "application/json"}};
            out.body = R"({"runId":"up_)" + key + R"("})";
            return out;
        });
    }

    void TearDown() override {
        for (auto& n : nodes_) {
            if (n && n->pid() > 0) {
                n->signal(SIGKILL);
                (void)n->wait_exit(10);
            }
        }
        if (upstream_) {
            upstream_->stop();
        }
    }

    static std::string node_key(int i) { return "up-node" + std::to_string(i); }

    std::string config_for(int i) const {
        const std::string path = dir_.file("node" + std::to_string(i) + ".yaml");
        std::ofstream out(path);
        out << "server: {listen: \"127.0.0.1:0\", "
               "rateLimits: {perSourceAddress: {rate: 100000, burst: 100000}}}\n"
               // a load from loopback: the default per-address limit is raised explicitly
               "auth:\n"
               "  apiKeys:\n"
               "    - {key: hk_cluster, tenant: default, scopes: [runs:read, webhooks:manage]}\n"
               "store: {postgres: {url: \""
            << pg_->url(db_) << "\""
            << (node_timeout_.empty() ? "" : ", nodeTimeout: " + node_timeout_)
            << "}}\n"
               "hostKeyFile: "
            << (i < static_cast<int>(key_files_.size()) ? key_files_[i] : "host.key")
            << "\n"
               "runs: {upstream: {baseUrl: \""
            << upstream_->base_url() << "\", apiKey: " << node_key(i)
            << ", timeout: 30s}}\n"
               "delivery: {lease: "
            << lease_ << ", maxInFlight: 16, attemptTimeout: 40s}\n"
               "subscriptions:\n"
               "  - {id: orders, source: webhook, workflowId: wf-orders, signingSecret: \""
            << secret << "\"}\n";
        if (with_webhooks_) {
            out << "webhooks: {allowLoopbackHttp: true}\n";
        }
        if (with_hello_) {
            out << "connectors:\n  - {name: hello-1, module: hello}\n";
        }
        if (with_schedule_) {
            out << "  - {id: heartbeat, source: schedule, schedule: {cron: \"@every 1s\"}, "
                   "workflowId: wf-heartbeat}\n";
        }
        return path;
    }

    // Nodes start one after the other: the first creates the shared host key file.
    // Nodes up to `n` in all (those already running stay).
    void start_nodes(int n) {
        for (int i = static_cast<int>(nodes_.size()); i < n; ++i) {
            auto node = std::make_unique<serve_process>();
            const std::string log = dir_.file("node" + std::to_string(i) + ".log");
            ASSERT_TRUE(node->start(config_for(i), log)) << node->error;
            urls_.push_back(node->url());
            nodes_.push_back(std::move(node));
        }
    }

    std::string query(const std::string& sql) {
        std::string out;
        EXPECT_TRUE(pg_->sql(db_, sql, &out)) << sql << ": " << out;
        return out;
    }

    std::map<std::string, std::vector<std::string>> starts() {
        std::lock_guard lock(mu_);
        return starts_;
    }

    std::string node_logs() {
        std::string all;
        for (std::size_t i = 0; i < nodes_.size(); ++i) {
            all += "--- node" + std::to_string(i) + "\n" +
                   read_text_file(dir_.file("node" + std::to_string(i) + ".log"));
        }
        return all;
    }

    temp_dir dir_;
    postgres_server* pg_ = nullptr;
    std::string db_;
    std::unique_ptr<http_test_server> upstream_;
    std::mutex mu_;
    std::map<std::string, std::vector<std::string>> starts_; // Idempotency-Key -> callers
    std::string stalled_node_key_;
    std::string lease_ = "3s";
    std::string node_timeout_; // store.postgres.nodeTimeout; the default when empty
    bool with_schedule_ = false;
    bool with_webhooks_ = false;
    bool with_hello_ = false;
    std::vector<std::unique_ptr<serve_process>> nodes_;
    std::vector<std::string> urls_;
    std::vector<std::string> key_files_; // per node; "host.key" (shared) past its end
};

TEST_F(ClusterTest, ANodeWithAnotherHostKeyRefusesToStartAndTheClusterServesOn) {
    key_files_ = {"host.key", "other.key"};
    ASSERT_NO_FATAL_FAILURE(start_nodes(1));
    const std::string config = config_for(1);
    // Node 2's own key file (as the default var/host.key beside each config would be) is not
    // made: the store already has a key.
    auto missing = run_program({WOPBRIDGE_PROGRAM, "serve", "--config", config}, 60, {}, true);
    EXPECT_EQ(missing.exit_code, 2) << missing.stdout_text;
    EXPECT_NE(missing.stdout_text.find(dir_.file("other.key") +
                                       " does not exist, but the store was sealed with a host key"),
              std::string::npos)
        << missing.stdout_text;
    ASSERT_FALSE(std::filesystem::exists(dir_.file("other.key")));
    {
        std::ofstream(dir_.file("other.key"), std::ios::binary) << std::string(32, 'o');
        std::filesystem::permissions(dir_.file("other.key"), std::filesystem::perms::owner_read);
    }
    const std::string expected = "hostKeyFile: the host key in " + dir_.file("other.key") +
                                 " is not a key this store opens with";
    auto served = run_program({WOPBRIDGE_PROGRAM, "serve", "--config", config}, 60, {}, true);
    EXPECT_EQ(served.exit_code, 2) << served.stdout_text;
    EXPECT_NE(served.stdout_text.find(config + ":"), std::string::npos) << served.stdout_text;
    EXPECT_NE(served.stdout_text.find(expected), std::string::npos) << served.stdout_text;
    auto checked = run_program({WOPBRIDGE_PROGRAM, "check-config", config}, 60, {}, true);
    EXPECT_EQ(checked.exit_code, 2) << checked.stdout_text;
    EXPECT_NE(checked.stdout_text.find(expected), std::string::npos) << checked.stdout_text;

    // The node that holds the store's key still takes signed events.
    std::vector<ingest_job> jobs;
    jobs.emplace_back(fresh_webhook_id(), 0);
    send_all(jobs, urls_, 1, [](int) {});
    EXPECT_EQ(jobs[0].status, 202) << jobs[0].body;
}

// A planned host key rotation with the cluster serving throughout (docs/guarantees/host-key.md):
// `host-key add` lets the store open with a new key, node 2 restarts on it, `host-key retire`
// drops the old key. Signatures verify and dedup keys match on every node at every step.
TEST_F(ClusterTest, AHostKeyRotationKeepsSignaturesAndDedupAcrossTheCluster) {
    key_files_ = {"host.key", "host.key"};
    ASSERT_NO_FATAL_FAILURE(start_nodes(2));
    auto post = [&](int node, const std::string& webhook_id) {
        std::vector<ingest_job> jobs;
        jobs.emplace_back(webhook_id, node);
        send_all(jobs, urls_, 1, [](int) {});
        return jobs[0].status;
    };
    const std::string before = fresh_webhook_id();
    ASSERT_EQ(post(0, before), 202);

    const std::string new_key = dir_.file("host-2027.key");
    auto added = run_program({WOPBRIDGE_PROGRAM, "host-key", "add", "--config", config_for(1),
                              "--key-file", new_key},
                             60, {}, true);
    ASSERT_EQ(added.exit_code, 0) << added.stdout_text;
    EXPECT_NE(added.stdout_text.find("created and added " + new_key), std::string::npos)
        << added.stdout_text;
    EXPECT_EQ(std::filesystem::status(new_key).permissions() & std::filesystem::perms::mask,
              std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);

    // Node 2 moves to the new key; node 1 serves on with the old one.
    nodes_[1]->signal(SIGTERM);
    ASSERT_EQ(nodes_[1]->wait_exit(30), 0);
    key_files_[1] = new_key;
    auto moved = std::make_unique<serve_process>();
    ASSERT_TRUE(moved->start(config_for(1), dir_.file("node1.log"))) << moved->error;
    urls_[1] = moved->url();
    nodes_[1] = std::move(moved);
    auto status = run_program({WOPBRIDGE_PROGRAM, "host-key", "status", "--config", config_for(1)},
                              60, {}, true);
    EXPECT_EQ(status.exit_code, 0) << status.stdout_text;
    EXPECT_NE(status.stdout_text.find("2 keys open it"), std::string::npos) << status.stdout_text;

    EXPECT_EQ(post(1, before), 200) << "an event taken before the rotation is still a duplicate";
    const std::string during = fresh_webhook_id();
    EXPECT_EQ(post(1, during), 202) << node_logs();
    EXPECT_EQ(post(0, during), 200);

    auto retired = run_program({WOPBRIDGE_PROGRAM, "host-key", "retire", "--config", config_for(1)},
                               60, {}, true);
    ASSERT_EQ(retired.exit_code, 0) << retired.stdout_text;
    EXPECT_NE(retired.stdout_text.find("retired 1 other key"), std::string::npos)
        << retired.stdout_text;
    // Node 1 still runs on the retired key until it restarts; then it is refused.
    EXPECT_EQ(post(0, fresh_webhook_id()), 202);
    nodes_[0]->signal(SIGTERM);
    ASSERT_EQ(nodes_[0]->wait_exit(30), 0);
    auto refused = run_program({WOPBRIDGE_PROGRAM, "serve", "--config", config_for(0)}, 60, {}, true);
    EXPECT_EQ(refused.exit_code, 2) << refused.stdout_text;
    EXPECT_NE(refused.stdout_text.find("is not a key this store opens with"), std::string::npos)
        << refused.stdout_text;
    EXPECT_EQ(post(1, before), 200);
    EXPECT_EQ(post(1, fresh_webhook_id()), 202);
}

// A connector subscription registered over the API on one node is served by the others (their
// connector sync reads it from the store), and a DELETE on one node ends it on the others.
TEST_F(ClusterTest, AConnectorSubscriptionRegisteredOnOneNodeIsServedByEveryNode) {
    with_hello_ = true;
    ASSERT_NO_FATAL_FAILURE(start_nodes(2));
    http_call reg;
    reg.method = "POST";
    reg.url = urls_[0] + "/v1/trigger-subscriptions";
    reg.headers = {{"authorization", "Bearer hk_cluster"}, {"content-type", "application/json"}};
    reg.body = R"({"source":"webhook","workflowId":"wf-orders","verification":{"mode":"none"},)"
               R"("connector":"hello-1"})";
    auto created = perform(reg);
    ASSERT_EQ(created.status, 201) << created.body;
    const auto at = created.body.find("\"subscriptionId\":\"") + 18;
    const std::string id = created.body.substr(at, created.body.find('"', at) - at);
    auto post_to = [&](int node, const std::string& event_id) {
        http_call c;
        c.method = "POST";
        c.url = urls_[static_cast<std::size_t>(node)] + "/v1/ingest/" + id;
        c.headers = {{"content-type", "application/json"}, {"x-hello-id", event_id}};
        c.body = R"({"n":1})";
        return perform(c).status;
    };
    EXPECT_EQ(post_to(0, "evt-node0"), 202);
    int n = 0;
    EXPECT_TRUE(eventually([&] { return post_to(1, "evt-node1-" + std::to_string(n++)) == 202; }))
        << node_logs();

    http_call del = reg;
    del.method = "DELETE";
    del.url = urls_[1] + "/v1/trigger-subscriptions/" + id;
    del.body.clear();
    auto deleted = perform(del);
    ASSERT_EQ(deleted.status, 204) << deleted.body << "\n" << node_logs();
    EXPECT_TRUE(eventually([&] { return post_to(0, "evt-gone-" + std::to_string(n++)) == 404; }))
        << node_logs();
}

// A SIGKILLed node's claims start elsewhere after the node timeout, not after their lease: with a
// 60 s lease and a 3 s node timeout, the delivery the dead node held is delivered by the other
// node within seconds (issue 16: claims of a dead node reclaimed sooner than a full lease).
TEST_F(ClusterTest, ASigkilledNodesClaimsStartOnAnotherNodeLongBeforeTheirLease) {
    lease_ = "60s";
    node_timeout_ = "3s";
    stalled_node_key_ = node_key(0); // node 0 takes the delivery and never finishes it
    ASSERT_NO_FATAL_FAILURE(start_nodes(1));
    std::vector<ingest_job> jobs;
    jobs.emplace_back(fresh_webhook_id(), 0);
    send_all(jobs, urls_, 1, [](int) {});
    ASSERT_EQ(jobs[0].status, 202) << jobs[0].body;
    ASSERT_TRUE(eventually([&] { return starts().size() == 1; })) << node_logs();
    ASSERT_NO_FATAL_FAILURE(start_nodes(2)); // node 1 joins while node 0 holds the claim
    const auto killed = std::chrono::steady_clock::now();
    nodes_[0]->signal(SIGKILL);
    (void)nodes_[0]->wait_exit(10);
    ASSERT_TRUE(eventually(
        [&] {
            auto s = starts();
            return !s.empty() && s.begin()->second.size() == 2;
        },
        std::chrono::seconds(30)))
        << node_logs();
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
    const auto callers = starts().begin()->second;
    EXPECT_EQ(callers[1], "Bearer " + node_key(1)) << "node 1 started the run the dead node held";
    EXPECT_LT(waited, 15.0) << "reclaimed after " << waited << " s (lease 60 s, node timeout 3 s)";
    EXPECT_NE(read_text_file(dir_.file("node1.log")).find("cluster.claims_released"),
              std::string::npos)
        << node_logs();
    std::printf("[ measured ] a SIGKILLed node's claim started on another node %.2f s after the "
                "kill (lease 60 s, nodeTimeout 3 s)\n", waited);
}

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
        EXPECT_TRUE(std::any_of(callers.begin(), callers.end(),
                                [&](const auto& c) { return c != "Bearer " + node_key(2); }))
            << key;
        EXPECT_EQ(query("SELECT status || '|' || (SELECT COUNT(*) FROM runs r WHERE "
                        "r.delivery_id = d.id) FROM deliveries d WHERE d.id = '" + key + "'"),
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
                std::vector<ingest_job> again{{during[static_cast<std::size_t>(node)].webhook_id,
                                               node}};
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

    std::vector<ingest_job> jobs{{fresh_webhook_id(), 1}, {fresh_webhook_id(), 1},
                                 {fresh_webhook_id(), 1}};
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
} // namespace wopbridge::testing
