// A local workflow command's output (issue 19): its stdout and stderr go to the run's own log,
// readable with GET /v1/runs/{id}/output and `wopbridge runs output`, never into the service's
// JSON log stream. Real serve, a real signed webhook, a real command.
#include "support/build_paths.hpp"
#include "support/child_process.hpp"
#include "support/eventually.hpp"
#include "support/http_client.hpp"
#include "support/serve_process.hpp"
#include "support/temp_dir.hpp"
#include "support/webhook_signer.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <csignal>
#include <ctime>
#include <fstream>
#include <string>

namespace wopbridge::testing::run_output_test {
namespace {

using ::testing::HasSubstr;

constexpr const char* whsec = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

TEST(RunOutputTest, ACommandsOutputIsTheRunsOwnAndNotTheServiceLog) {
    temp_dir dir;
    const std::string config = dir.file("wopbridge.yaml");
    std::ofstream(config) << sqlite_serve_prelude("hk_out")
                          << "runs: {local: {workflows: [{id: wf, command: [/bin/sh, -c, "
                             "\"echo printed-by-the-workflow; echo complained-on-stderr >&2\"]}]}}\n"
                             "subscriptions:\n"
                             "  - {id: orders, source: webhook, workflowId: wf, signingSecret: \""
                          << whsec << "\"}\n";
    serve_process serve;
    ASSERT_TRUE(serve.start(config, dir.file("serve.log"))) << serve.error;

    const std::string body = R"({"order":1})";
    http_call post;
    post.method = "POST";
    post.url = serve.url() + "/v1/ingest/orders";
    post.headers = standard_webhook_headers(whsec, fresh_webhook_id(), std::time(nullptr), body);
    post.headers.emplace_back("content-type", "application/json");
    post.body = body;
    auto ingested = perform(post);
    ASSERT_EQ(ingested.status, 202) << ingested.body;
    const std::string run_id(
        boost::json::parse(ingested.body).as_object().at("runId").as_string());

    http_call get;
    get.url = serve.url() + "/v1/runs/" + run_id;
    get.headers = {{"authorization", "Bearer hk_out"}};
    ASSERT_TRUE(eventually([&] {
        return perform(get).body.find("\"status\":\"completed\"") != std::string::npos;
    })) << perform(get).body;

    get.url += "/output";
    auto output = perform(get);
    EXPECT_EQ(output.status, 200);
    EXPECT_EQ(output.header("content-type").value_or(""), "text/plain; charset=utf-8");
    EXPECT_THAT(output.body, HasSubstr("printed-by-the-workflow\n"));
    EXPECT_THAT(output.body, HasSubstr("complained-on-stderr\n"));

    auto cli = run_program({WOPBRIDGE_PROGRAM, "runs", "output", run_id, "--url", serve.url(),
                            "--api-key", "hk_out"});
    EXPECT_EQ(cli.exit_code, 0) << cli.stdout_text;
    EXPECT_THAT(cli.stdout_text, HasSubstr("printed-by-the-workflow"));

    http_call unknown = get;
    unknown.url = serve.url() + "/v1/runs/run_unknown/output";
    EXPECT_EQ(perform(unknown).status, 404);
    http_call anonymous = get;
    anonymous.headers.clear();
    EXPECT_EQ(perform(anonymous).status, 401);

    serve.signal(SIGTERM);
    EXPECT_EQ(serve.wait_exit(), 0);
    const std::string log = read_text_file(dir.file("serve.log"));
    EXPECT_EQ(log.find("printed-by-the-workflow"), std::string::npos) << log;
    EXPECT_EQ(log.find("complained-on-stderr"), std::string::npos) << log;
}

} // namespace
} // namespace wopbridge::testing::run_output_test
