// Forged posts against the real `wopbridge serve`. From one address the default per-address rate
// limit answers 429 + Retry-After past its burst, before any verification or write, while every
// post verified and refused within the record budget leaves its content-free dead letter
// (CONTRACT.md (b)). From many addresses the per-address limit never trips: the record budget
// (deadLetter.refusedSignatureRecords) bounds the rows written per subscription and in all, the
// answers stay 401, the rest are counted, and signed posts are still taken.
#include "support/http_client.hpp"
#include "support/serve_probe.hpp"
#include "support/serve_process.hpp"
#include "support/temp_dir.hpp"
#include "support/webhook_signer.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace wopbridge::testing::forged_flood_serve_test {
namespace {

using http_client::http_call;
using http_client::perform;

constexpr const char* secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

http_call forged_post(const std::string& url, const std::string& id) {
    http_call c;
    c.method = "POST";
    c.url = url;
    c.headers = {{"content-type", "application/json"},
                 {"webhook-id", id},
                 {"webhook-timestamp", std::to_string(std::time(nullptr))},
                 {"webhook-signature", "v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}};
    c.body = R"({"forged":true})";
    return c;
}

// Every dead letter of a subscription, through the contract's paged read.
std::size_t dead_letters(const std::string& base, const std::string& sub) {
    http_call page;
    page.url = base + "/v1/trigger-subscriptions/" + sub + "/dead-letters";
    page.headers = {{"authorization", "Bearer hk_probe"}};
    std::size_t stored = 0;
    for (int guard = 0; guard < 100; ++guard) {
        auto r = perform(page);
        EXPECT_EQ(r.status, 200) << r.body;
        if (r.status != 200) {
            break;
        }
        auto v = boost::json::parse(r.body).as_object();
        stored += v.at("deliveries").as_array().size();
        const auto* next = v.if_contains("nextCursor");
        if (next == nullptr || !next->is_string()) {
            break;
        }
        page.url = base + "/v1/trigger-subscriptions/" + sub +
                   "/dead-letters?cursor=" + std::string(next->as_string());
    }
    return stored;
}

// The value of one series in a Prometheus text scrape (0 when absent).
double series_value(const std::string& scrape, const std::string& series) {
    std::istringstream in(scrape);
    for (std::string line; std::getline(in, line);) {
        if (line.rfind(series + " ", 0) == 0) {
            return std::stod(line.substr(series.size() + 1));
        }
    }
    return 0;
}

TEST(ForgedFloodServeTest, DefaultPerAddressLimitAnswers429BeforeAnyWrite) {
    temp_dir dir;
    std::ofstream(dir.file("wopbridge.yaml"))
        << probe_config_prelude(dir.path().string(), "https://bridge.example.test")
        << "runs: {local: {workflows: [{id: wf}]}}\n"
           // A record budget above the per-address burst: each refusal here is written.
           "deadLetter: {refusedSignatureRecords: {perSubscription: {rate: 1, burst: 1000}}}\n"
           "subscriptions:\n"
           "  - {id: orders, source: webhook, workflowId: wf,\n"
           "     signingSecret: \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"}\n";
    serve_process serve;
    ASSERT_TRUE(serve.start(dir.file("wopbridge.yaml"), dir.file("serve.log"))) << serve.error;

    int refused = 0;
    int throttled = 0;
    std::string retry_after;
    for (int i = 0; i < 400 && throttled == 0; ++i) {
        auto c = forged_post(serve.url() + "/v1/ingest/orders",
                             "msg_forged" + std::to_string(100000 + i));
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
    EXPECT_GE(refused, 50); // the documented burst of refusals is admitted
    EXPECT_FALSE(retry_after.empty());

    // Every verified-and-refused post kept its dead letter; the throttled one wrote nothing.
    const std::size_t stored = dead_letters(serve.url(), "orders");
    EXPECT_EQ(stored, static_cast<std::size_t>(refused));

    serve.signal(SIGTERM);
    EXPECT_EQ(serve.wait_exit(), 0) << read_text_file(dir.file("serve.log"));
}

TEST(ForgedFloodServeTest, ManyAddressesWriteNoMoreThanTheRecordBudget) {
    temp_dir dir;
    std::ofstream(dir.file("wopbridge.yaml"))
        << probe_config_prelude(dir.path().string(), "https://bridge.example.test")
        << "runs: {local: {workflows: [{id: wf}]}}\n"
           "deadLetter:\n"
           "  refusedSignatureRecords:\n"
           "    perSubscription: {rate: 2, burst: 20}\n"
           "    total: {rate: 3, burst: 30}\n"
           "subscriptions:\n"
           "  - {id: orders, source: webhook, workflowId: wf, signingSecret: \""
        << secret
        << "\"}\n"
           "  - {id: refunds, source: webhook, workflowId: wf, signingSecret: \""
        << secret << "\"}\n";
    serve_process serve;
    ASSERT_TRUE(serve.start(dir.file("wopbridge.yaml"), dir.file("serve.log"))) << serve.error;

    const std::string db = dir.file("bridge.db");
    auto store_bytes = [&] {
        std::uintmax_t n = 0;
        for (const std::string f : {db, db + "-wal"}) {
            std::error_code ec;
            const auto size = std::filesystem::file_size(f, ec);
            n += ec ? 0 : size;
        }
        return n;
    };
    const std::uintmax_t bytes_before = store_bytes();

    // 40 peers, 10 posts each, the two subscriptions in turn: every peer stays inside its own
    // per-address burst (100), so only the record budget stands between the flood and the disk.
    constexpr int peers = 40;
    constexpr int per_peer = 10;
    const auto began = std::chrono::steady_clock::now();
    int refused = 0;
    for (int i = 0; i < per_peer; ++i) {
        for (int p = 0; p < peers; ++p) {
            const std::string sub = (p + i) % 2 == 0 ? "orders" : "refunds";
            auto c = forged_post(serve.url() + "/v1/ingest/" + sub,
                                 "msg_forged_flood_" + std::to_string(p) + "_" + std::to_string(i));
            c.local_address = "127.0.0." + std::to_string(2 + p);
            auto r = perform(c);
            ASSERT_EQ(r.status, 401) << r.body << r.error;
            ASSERT_NE(r.body.find("\"signature_invalid\""), std::string::npos) << r.body;
            ++refused;
        }
    }
    const double elapsed_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();

    // A signed post is taken as ever: the budget spends refusals only.
    const std::string body = R"({"genuine":true})";
    http_call good;
    good.method = "POST";
    good.url = serve.url() + "/v1/ingest/orders";
    for (auto& [k, v] :
         standard_webhook_headers(secret, fresh_webhook_id(), std::time(nullptr), body)) {
        good.headers.emplace_back(k, v);
    }
    good.headers.emplace_back("content-type", "application/json");
    good.body = body;
    good.local_address = "127.0.0.2";
    auto taken = perform(good);
    EXPECT_EQ(taken.status, 202) << taken.body;

    // Rows: each bucket holds its burst and refills at its rate for as long as the flood lasted
    // (+1 for a token refilled while the last request was in flight).
    const std::size_t orders = dead_letters(serve.url(), "orders");
    const std::size_t refunds = dead_letters(serve.url(), "refunds");
    const double per_sub_bound = 20 + 2 * elapsed_s + 1;
    const double total_bound = 30 + 3 * elapsed_s + 1;
    EXPECT_LE(static_cast<double>(orders), per_sub_bound) << elapsed_s << " s";
    EXPECT_LE(static_cast<double>(refunds), per_sub_bound) << elapsed_s << " s";
    EXPECT_LE(static_cast<double>(orders + refunds), total_bound) << elapsed_s << " s";
    // The first 30 refusals (15 each, in turn) fit every bucket: the record the contract needs
    // is kept up to the budget.
    EXPECT_GE(orders, 15u);
    EXPECT_GE(refunds, 15u);

    // What was not written is counted, per subscription, and logged once a minute at most.
    http_call scrape;
    scrape.url = serve.url() + "/metrics";
    scrape.headers = {{"authorization", "Bearer hk_probe"}};
    const auto m = perform(scrape);
    ASSERT_EQ(m.status, 200) << m.body;
    const double unrecorded =
        series_value(m.body, "wopbridge_verification_refusals_unrecorded_total"
                             "{subscription=\"orders\"}") +
        series_value(m.body, "wopbridge_verification_refusals_unrecorded_total"
                             "{subscription=\"refunds\"}");
    EXPECT_EQ(static_cast<std::size_t>(unrecorded) + orders + refunds,
              static_cast<std::size_t>(refused));
    const std::string log = read_text_file(dir.file("serve.log"));
    std::size_t lines = 0;
    for (auto at = log.find("\"dead_letter.refusals_unrecorded\""); at != std::string::npos;
         at = log.find("\"dead_letter.refusals_unrecorded\"", at + 1)) {
        ++lines;
    }
    EXPECT_GE(lines, 1u);
    EXPECT_LE(lines, 2u + static_cast<std::size_t>(elapsed_s / 60) * 2) << log;

    serve.signal(SIGTERM);
    EXPECT_EQ(serve.wait_exit(), 0) << read_text_file(dir.file("serve.log"));
    // Bytes follow the rows: a record and its attempt event are ~0.5–0.7 KB with their index
    // entries (docs/guarantees/overload.md); 2 KiB each, plus a few fresh pages per index.
    const std::uintmax_t grown = store_bytes() - std::min(store_bytes(), bytes_before);
    EXPECT_LE(static_cast<double>(grown), total_bound * 2048 + 64 * 1024)
        << grown << " bytes for " << orders + refunds << " records";
}

} // namespace
} // namespace wopbridge::testing::forged_flood_serve_test
