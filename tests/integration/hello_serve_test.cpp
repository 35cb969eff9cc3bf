// The hello connector through the real `wopbridge serve`, configured exactly as
// examples/hello-connector/wopbridge.yaml (paths and port moved to the test's own): a signed POST
// starts one run with the right causationId, the same x-hello-id again is a duplicate of that run,
// a bad signature starts nothing.
#include "support/http_client.hpp"
#include "support/provider_signing.hpp"
#include "support/serve_probe.hpp"
#include "support/serve_process.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <ctime>
#include <fstream>
#include <string>

namespace wopbridge::testing::hello_serve_test {
namespace {

constexpr const char* secret = "hello-serve-secret-0123456789";

class HelloServeTest : public ::testing::Test {
protected:
    void SetUp() override {
        // The example's connectors/subscriptions sections, verbatim, after the test's prelude.
        std::string example = read_text_file(std::string(WOPBRIDGE_SOURCE_DIR) +
                                             "/examples/hello-connector/wopbridge.yaml");
        auto at = example.find("connectors:");
        ASSERT_NE(at, std::string::npos);
        ::setenv("HELLO_SECRET", secret, 1);
        std::ofstream(dir_.file("wopbridge.yaml"))
            << probe_config_prelude(dir_.path().string(), "http://127.0.0.1:8080")
            << "runs: {local: {workflows: [{id: my-workflow}]}}\n"
            << example.substr(at);
        ASSERT_TRUE(serve_.start(dir_.file("wopbridge.yaml"), dir_.file("serve.log")))
            << serve_.error;
        probe_ = std::make_unique<serve_probe>(serve_.url(), "hk_probe");
    }

    void TearDown() override {
        if (probe_) {
            serve_.signal(SIGTERM);
            EXPECT_EQ(serve_.wait_exit(), 0) << read_text_file(dir_.file("serve.log"));
        }
    }

    http_reply post(const std::string& id, const std::string& body, const std::string& key) {
        const std::string ts = std::to_string(std::time(nullptr));
        http_call c;
        c.method = "POST";
        c.url = serve_.url() + "/v1/ingest/demo";
        c.headers = {{"content-type", "application/json"},
                     {"x-hello-id", id},
                     {"x-hello-timestamp", ts},
                     {"x-hello-signature", "sha256=" + hmac_sha256_hex(key, ts + "." + body)}};
        c.body = body;
        return perform(c);
    }

    temp_dir dir_;
    serve_process serve_;
    std::unique_ptr<serve_probe> probe_;
};

TEST_F(HelloServeTest, SignedPostStartsOneRunAndItsRepeatIsADuplicate) {
    auto r = post("evt-1", R"({"n":1})", secret);
    ASSERT_EQ(r.status, 202) << r.body;
    std::vector<std::string> runs;
    ASSERT_TRUE(probe_->runs_started("demo", 1, &runs));
    EXPECT_NE(r.body.find(runs[0]), std::string::npos) << r.body;

    auto again = post("evt-1", R"({"n":1})", secret);
    EXPECT_EQ(again.status, 200) << again.body;
    EXPECT_NE(again.body.find("duplicate"), std::string::npos) << again.body;
    EXPECT_NE(again.body.find(runs[0]), std::string::npos) << again.body;
    EXPECT_TRUE(probe_->runs_started("demo", 1));

    EXPECT_EQ(post("evt-2", R"({"n":2})", "not-the-secret-0123456789").status, 401);
    EXPECT_TRUE(probe_->nothing_started("demo", 1));
}

} // namespace
} // namespace wopbridge::testing::hello_serve_test
