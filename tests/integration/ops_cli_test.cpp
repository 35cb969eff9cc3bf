// The CLI client against the real `wopbridge serve` binary on a temporary config (port 0).
// Skipped while the program has no `serve` command (it lands on main separately).

#include "support/build_paths.hpp"
#include "support/http_client.hpp"
#include "support/local_server_process.hpp"
#include "support/temp_dir.hpp"
#include "support/webhook_signer.hpp"

#include <boost/json.hpp>
#include "support/eventually.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <fcntl.h>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace wopbridge::ops_cli_test {
namespace {

struct run_output {
    int code = -1;
    std::string out;
};

run_output run_program(const std::string& args) {
    run_output r;
    std::string cmd = std::string(WOPBRIDGE_PROGRAM) + " " + args + " 2>/dev/null";
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) {
        return r;
    }
    char buf[4096];
    std::size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) {
        r.out.append(buf, n);
    }
    int status = pclose(p);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
}

std::string read_file(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

class OpsCliTest : public ::testing::Test {
protected:
    void SetUp() override {
        // A broken `serve` is a failure of every test here, never a skip.
        auto probe = run_program("serve --help");
        ASSERT_EQ(probe.code, 0) << "`wopbridge serve --help` failed";
        config_ = dir_.file("wopbridge.yaml");
        std::ofstream(config_) << "server: {listen: \"127.0.0.1:0\"}\n"
                                  "auth:\n"
                                  "  apiKeys:\n"
                                  "    - {key: hk_cli, tenant: default, scopes: [webhooks:manage, "
                                  "runs:read, runs:create]}\n"
                                  "store: {sqlite: {path: bridge.db}}\n"
                                  "hostKeyFile: host.key\n"
                                  "runs: {local: {workflows: [{id: conformance-noop}]}}\n"
                                  "subscriptions:\n"
                                  "  - {id: orders, source: webhook, workflowId: conformance-noop, "
                                  "signingSecret: \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"}\n";
        log_ = dir_.file("serve.log");
        testing::server_spawn request;
        request.argv = {WOPBRIDGE_PROGRAM, "serve", "--config", config_};
        request.output_file = log_;
        ASSERT_EQ(testing::spawn_server(request, pid_), 0);
        // The bound port appears in a log line ("port":N); wait for it, bounded.
        std::regex port_re("\"port\"\\s*:\\s*([0-9]+)");
        testing::eventually(
            [&] {
                std::smatch m;
                std::string text = read_file(log_);
                if (std::regex_search(text, m, port_re) && m[1] != "0") {
                    url_ = "http://127.0.0.1:" + m[1].str();
                    return true;
                }
                return false;
            },
            std::chrono::seconds(20));
        ASSERT_FALSE(url_.empty()) << read_file(log_);
    }

    void TearDown() override {
        if (pid_ > 0) {
            kill(pid_, SIGTERM);
            int status = 0;
            waitpid(pid_, &status, 0);
        }
    }

    run_output cli(const std::string& args) {
        return run_program(args + " --url " + url_ + " --api-key hk_cli");
    }

    testing::temp_dir dir_;
    std::string config_;
    std::string log_;
    std::string url_;
    pid_t pid_ = -1;
};

TEST_F(OpsCliTest, SubscriptionsListShowPauseResume) {
    auto list = cli("subscriptions list");
    EXPECT_EQ(list.code, 0);
    EXPECT_NE(list.out.find("ID"), std::string::npos);
    EXPECT_NE(list.out.find("orders"), std::string::npos) << list.out;
    auto js = cli("subscriptions list --json");
    EXPECT_EQ(js.code, 0);
    EXPECT_NO_THROW(boost::json::parse(js.out));
    EXPECT_EQ(cli("subscriptions show orders").code, 0);
    EXPECT_EQ(cli("subscriptions show nope").code, 3);
    auto paused = cli("subscriptions pause orders");
    EXPECT_EQ(paused.code, 0);
    EXPECT_NE(paused.out.find("paused"), std::string::npos);
    EXPECT_EQ(cli("subscriptions resume orders").code, 0);
    EXPECT_EQ(cli("subscriptions pause").code, 2);
}

TEST_F(OpsCliTest, DeliveriesDeadLettersRunsAndErrors) {
    EXPECT_EQ(cli("deliveries list orders").code, 0);
    EXPECT_EQ(cli("dead-letters list orders").code, 0);
    EXPECT_EQ(cli("dead-letters replay orders evt_missing").code, 3);
    EXPECT_EQ(cli("dead-letters replay orders").code, 2);
    EXPECT_EQ(cli("runs show run_missing").code, 3);
    EXPECT_EQ(run_program("subscriptions list --url http://127.0.0.1:1").code, 1);
    EXPECT_EQ(run_program("subscriptions list --url " + url_ + " --api-key wrong").code, 4);
}

// The line of a table that mentions `needle` ("" when none).
std::string line_with(const std::string& text, const std::string& needle) {
    auto at = text.find(needle);
    if (at == std::string::npos) {
        return {};
    }
    auto begin = text.rfind('\n', at);
    begin = begin == std::string::npos ? 0 : begin + 1;
    return text.substr(begin, text.find('\n', at) - begin);
}

TEST_F(OpsCliTest, SubscriptionsAloneListsWithWorkflowAndCreatedColumns) {
    auto bare = cli("subscriptions");
    EXPECT_EQ(bare.code, 0) << bare.out;
    const std::string row = line_with(bare.out, "orders");
    ASSERT_FALSE(row.empty()) << bare.out;
    EXPECT_NE(row.find("conformance-noop"), std::string::npos) << row;
    EXPECT_FALSE(std::regex_search(row, std::regex("\\s-(\\s|$)"))) << row; // every column filled
    EXPECT_TRUE(std::regex_search(row, std::regex("20[0-9]{2}-[0-9]{2}-[0-9]{2}T"))) << row;
}

TEST_F(OpsCliTest, RunsListShowsTheRunsOfASignedIngestWithFilters) {
    const std::string body = R"({"order":1})";
    testing::http_call post;
    post.method = "POST";
    post.url = url_ + "/v1/ingest/orders";
    post.body = body;
    post.headers = testing::standard_webhook_headers(
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", testing::fresh_webhook_id(),
        std::chrono::duration_cast<std::chrono::seconds>(
            std::chrono::system_clock::now().time_since_epoch())
            .count(),
        body);
    post.headers.emplace_back("Content-Type", "application/json");
    auto accepted = testing::perform(post);
    ASSERT_EQ(accepted.status, 202) << accepted.body;
    const std::string run_id(boost::json::parse(accepted.body).at("runId").as_string());

    testing::eventually(
        [&] {
            return line_with(cli("runs list --status completed").out, run_id).size() > 0;
        },
        std::chrono::seconds(20));
    auto listed = cli("runs list --subscription orders --status completed");
    EXPECT_EQ(listed.code, 0);
    EXPECT_NE(listed.out.find("WORKFLOW"), std::string::npos) << listed.out;
    const std::string row = line_with(listed.out, run_id);
    ASSERT_FALSE(row.empty()) << listed.out;
    EXPECT_NE(row.find("completed"), std::string::npos) << row;
    EXPECT_NE(row.find("conformance-noop"), std::string::npos) << row;
    EXPECT_NE(row.find("orders"), std::string::npos) << row;
    EXPECT_EQ(cli("runs").code, 0); // `runs` alone lists
    EXPECT_TRUE(line_with(cli("runs list --workflow other").out, run_id).empty());
    EXPECT_TRUE(line_with(cli("runs list --from 2100-01-01T00:00:00Z").out, run_id).empty());
    auto js = cli("runs list --json --limit 1");
    EXPECT_EQ(js.code, 0);
    EXPECT_EQ(boost::json::parse(js.out).at("runs").as_array().size(), 1u);
    EXPECT_EQ(cli("runs list --status bogus").code, 4);
    EXPECT_EQ(cli("runs list --cursor nonsense").code, 4);
}

} // namespace
} // namespace wopbridge::ops_cli_test
