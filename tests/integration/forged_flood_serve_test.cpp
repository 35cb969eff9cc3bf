// Forged posts against the real `wopbridge serve` with the default config: the per-address rate
// limit is on, so past its burst a flood from one address is answered 429 + Retry-After before any
// verification or write, while every post that was verified and refused still leaves its
// content-free dead letter (CONTRACT.md (b)).
#include "support/http_client.hpp"
#include "support/serve_probe.hpp"
#include "support/serve_process.hpp"
#include "support/temp_dir.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <csignal>
#include <ctime>
#include <fstream>
#include <string>

namespace wopbridge::testing {
namespace {

TEST(ForgedFloodServeTest, DefaultPerAddressLimitAnswers429BeforeAnyWrite) {
    temp_dir dir;
    std::ofstream(dir.file("wopbridge.yaml"))
        << probe_config_prelude(dir.path().string(), "https://bridge.example.test")
        << "runs: {local: {workflows: [{id: wf}]}}\n"
           "subscriptions:\n"
           "  - {id: orders, source: webhook, workflowId: wf,\n"
           "     signingSecret: \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"}\n";
    serve_process serve;
    ASSERT_TRUE(serve.start(dir.file("wopbridge.yaml"), dir.file("serve.log"))) << serve.error;

    int refused = 0;
    int throttled = 0;
    std::string retry_after;
    for (int i = 0; i < 400 && throttled == 0; ++i) {
        http_call c;
        c.method = "POST";
        c.url = serve.url() + "/v1/ingest/orders";
        c.headers = {{"content-type", "application/json"},
                     {"webhook-id", "msg_forged" + std::to_string(100000 + i)},
                     {"webhook-timestamp", std::to_string(std::time(nullptr))},
                     {"webhook-signature", "v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}};
        c.body = R"({"forged":true})";
        auto r = perform(c);
        if (r.status == 401) {
            ++refused;
        } else if (r.status == 429) {
            ++throttled;
            retry_after = r.header("retry-after").value_or("");
            EXPECT_NE(r.body.find("\"rate_limited\""), std::string::npos) << r.body;
        } else {
            ADD_FAILURE() << "unexpected " << r.status << " " << r.body;
            break;
        }
    }
    EXPECT_EQ(throttled, 1) << "no 429 after " << refused << " forged posts";
    EXPECT_GE(refused, 100); // the documented burst is admitted
    EXPECT_FALSE(retry_after.empty());

    // Every verified-and-refused post kept its dead letter; the throttled one wrote nothing.
    http_call page;
    page.url = serve.url() + "/v1/trigger-subscriptions/orders/dead-letters";
    page.headers = {{"authorization", "Bearer hk_probe"}};
    std::size_t stored = 0;
    for (int guard = 0; guard < 50; ++guard) {
        auto r = perform(page);
        ASSERT_EQ(r.status, 200) << r.body;
        auto v = boost::json::parse(r.body).as_object();
        stored += v.at("deliveries").as_array().size();
        const auto* next = v.if_contains("nextCursor");
        if (next == nullptr || !next->is_string()) {
            break;
        }
        page.url = serve.url() + "/v1/trigger-subscriptions/orders/dead-letters?cursor=" +
                   std::string(next->as_string());
    }
    EXPECT_EQ(stored, static_cast<std::size_t>(refused));

    serve.signal(SIGTERM);
    EXPECT_EQ(serve.wait_exit(), 0) << read_text_file(dir.file("serve.log"));
}

} // namespace
} // namespace wopbridge::testing
