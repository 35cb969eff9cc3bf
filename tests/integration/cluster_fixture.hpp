#pragma once
// The cluster tests' fixture: several real `wopbridge serve` nodes on one PostgreSQL database,
// runs going to a fake upstream OpenWOP host that tells the nodes apart by their API key and can
// hold one node's run starts open, so that node is certainly mid-delivery when it is killed.
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

namespace wopbridge::testing::cluster {

inline constexpr const char* secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

struct ingest_job {
    ingest_job(std::string id, int to) : webhook_id(std::move(id)), node(to) {}
    std::string webhook_id;
    int node = 0;
    long status = 0; // 0: no answer (refused, reset, the node died)
    std::string body;
    std::string retry_after;
};

inline std::string run_id_of(const std::string& body) {
    auto at = body.find("\"runId\":\"");
    if (at == std::string::npos) {
        return {};
    }
    at += 9;
    return body.substr(at, body.find('"', at) - at);
}

inline bool acknowledged(long status) {
    return status >= 200 && status < 300;
}

// Sends every job as a signed POST with one libcurl multi handle, at most `parallel` at a time.
// `on_done(completed)` runs on this thread after each answer and may block (it pauses sending).
inline void send_all(std::vector<ingest_job>& jobs, const std::vector<std::string>& urls,
                     int parallel, const std::function<void(int)>& on_done) {
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
        for (const auto& [k, v] :
             standard_webhook_headers(secret, jobs[i].webhook_id, std::time(nullptr), t->payload)) {
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
            << lease_
            << ", maxInFlight: 16, attemptTimeout: 40s}\n"
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

} // namespace wopbridge::testing::cluster
