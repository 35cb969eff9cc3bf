#pragma once
// The HTTP surface end to end: a real http::server on 127.0.0.1:0 in-process, the real bridge on a
// temporary SQLite file, and libcurl as the client. The fixture the http_server tests share.

#include "app/bridge.hpp"
#include "http/api.hpp"
#include "http/server.hpp"
#include "store/store.hpp"
#include "support/eventually.hpp"
#include "support/http_client.hpp"
#include "support/schema_check.hpp"
#include "support/scripted_run_starter.hpp"
#include "support/temp_dir.hpp"
#include "support/webhook_signer.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>

namespace wopbridge::http_server_testing {

namespace json = boost::json;
using testing::eventually;
using testing::http_call;
using testing::http_headers;
using testing::http_reply;
using behaviour = testing::scripted_run_starter::behaviour;

struct webhook_registration {
    std::string id;
    std::string secret;
    std::string ingest_path;
};

class HttpServerTest : public ::testing::Test {
  protected:
    void SetUp() override {
        settings_.host_key_file = dir_.file("host.key");
        settings_.test_seams = true;
        settings_.public_url = "http://127.0.0.1:1";
        settings_.default_retry = {3, backoff_kind::fixed, 100, 100, false};
        settings_.local_workflows = {"conformance-noop", "wf-running", "wf-fail"};
        settings_.dead_letter_max_page_size = 100;
        open_bridge();
        start_server();
    }
    void TearDown() override { stop_all(); }

    void open_bridge() {
        sqlite_options o;
        o.path = dir_.file("bridge.db");
        auto st = open_sqlite_store(o);
        ASSERT_TRUE(st.has_value()) << st.error().message;
        auto starter = std::make_unique<testing::scripted_run_starter>(settings_.local_workflows);
        starter->set_behaviour("wf-running", behaviour::keep_running);
        starter->set_behaviour("wf-fail", behaviour::transient);
        bridge_ = std::make_unique<bridge>(settings_, std::move(*st), std::move(starter), clock_,
                                           random_);
        ASSERT_TRUE(bridge_->start().has_value());
    }

    void start_server(std::size_t max_body = 64 * 1024,
                      std::chrono::milliseconds header_timeout = std::chrono::seconds(10)) {
        http::server_options so;
        so.header_timeout = header_timeout;
        so.idle_timeout = header_timeout * 2;
        so.host = "127.0.0.1";
        so.port = 0;
        so.threads = 2;
        so.worker_threads = 4;
        server_ = std::make_unique<http::server>(so);
        http::api_options ao;
        ao.keys = {{"hk_acme", "acme", {"webhooks:manage", "runs:read", "runs:create"}},
                   {"hk_globex", "globex", {"webhooks:manage", "runs:read", "runs:create"}},
                   {"hk_readonly", "acme", {"runs:read"}}};
        ao.max_body_bytes = max_body;
        ao.ingest_max_body_bytes = max_body;
        api_ = std::make_unique<http::http_api>(ao, *bridge_, nullptr, server_->scheduler());
        ASSERT_TRUE(server_->start(*api_).has_value());
        base_ = "http://127.0.0.1:" + std::to_string(server_->port());
    }

    void stop_server() {
        if (server_) {
            server_->stop(std::chrono::seconds(10));
        }
        server_.reset();
        api_.reset();
    }

    void stop_all() {
        stop_server();
        if (bridge_) {
            bridge_->stop();
        }
        bridge_.reset();
    }

    http_reply call(const std::string& method, const std::string& path,
                    const std::string& body = {}, const std::string& key = "hk_acme",
                    http_headers headers = {}, long timeout_ms = 20000) {
        http_call c;
        c.method = method;
        c.url = base_ + path;
        c.body = body;
        c.headers = std::move(headers);
        c.timeout_ms = timeout_ms;
        if (!key.empty()) {
            c.headers.emplace_back("Authorization", "Bearer " + key);
        }
        if (!body.empty()) {
            c.headers.emplace_back("Content-Type", "application/json");
        }
        return testing::perform(c);
    }

    webhook_registration register_webhook(const std::string& workflow = "conformance-noop",
                                          const std::string& key = "hk_acme") {
        auto r = call("POST", "/v1/trigger-subscriptions",
                      R"({"source":"webhook","workflowId":")" + workflow +
                          R"(","retryPolicy":{"maxAttempts":3,"backoff":"fixed"}})",
                      key);
        EXPECT_EQ(r.status, 201) << r.body;
        auto v = json::parse(r.body);
        EXPECT_TRUE(testing::expect_valid(v, "wopbridge/registration-response.schema.json"));
        webhook_registration reg;
        reg.id = std::string(v.at("subscription").at("subscriptionId").as_string());
        reg.secret = std::string(v.at("binding").at("signingSecret").as_string());
        std::string url(v.at("binding").at("ingestUrl").as_string());
        reg.ingest_path = url.substr(url.find("/v1/ingest/"));
        return reg;
    }

    http_reply ingest(const webhook_registration& reg, const std::string& webhook_id,
                      const std::string& body = R"({"order":42})", std::int64_t skew_s = 0,
                      const std::string& secret_override = {}) {
        auto ts = std::chrono::duration_cast<std::chrono::seconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count() +
                  skew_s;
        auto headers = testing::standard_webhook_headers(
            secret_override.empty() ? reg.secret : secret_override, webhook_id, ts, body);
        return call("POST", reg.ingest_path, body, "", headers);
    }

    static void expect_envelope(const http_reply& r, long status, std::string_view code) {
        EXPECT_EQ(r.status, status) << r.body;
        auto v = json::parse(r.body);
        EXPECT_TRUE(testing::expect_valid(v, "wopbridge/error-envelope.schema.json"));
        EXPECT_EQ(v.at("error").as_string(), code) << r.body;
    }

    testing::temp_dir dir_;
    system_clock_source clock_;
    system_random_source random_;
    bridge_settings settings_;
    std::unique_ptr<bridge> bridge_;
    std::unique_ptr<http::server> server_;
    std::unique_ptr<http::http_api> api_;
    std::string base_;
};

} // namespace wopbridge::http_server_testing
