// The provider catalogue against the providers' own signing code, through the real
// `wopbridge serve`: a request signed by the provider's SDK (GitHub's @octokit/webhooks-methods,
// Stripe's generateTestHeaderString) or its documented recipe (Shopify, Linear, Mailgun;
// tests/providers/sign.mjs) is accepted and starts one run caused by its attempt; one byte
// changed is refused 401; a provider retry with the same delivery id is a duplicate answered with
// the prior run id; a Stripe signature outside the tolerance is refused. Discord's PING and Zoom's
// URL validation are answered only when their own signature verified, and start no run.
#include "support/child_process.hpp"
#include "support/http_client.hpp"
#include "support/serve_probe.hpp"
#include "support/serve_process.hpp"
#include "support/temp_dir.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <csignal>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

namespace wopbridge::testing::provider_sdk_serve_test {
namespace {
namespace json = boost::json;
using http_client::http_call;
using http_client::perform;

const std::string providers_dir = std::string(WOPBRIDGE_SOURCE_DIR) + "/tests/providers";

std::string node_path() {
    for (const char* candidate : {"/usr/bin/node", "/usr/local/bin/node"}) {
        if (::access(candidate, X_OK) == 0) {
            return candidate;
        }
    }
    return {};
}

struct signed_request {
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
    json::object extra; // sign.mjs's "publicKey" (Discord), "expected" (Zoom's encryptedToken)
};

// tests/providers/sign.mjs: the provider's own code signs.
signed_request sdk_sign(const std::string& provider, const std::string& secret,
                        const std::string& body, std::int64_t timestamp) {
    json::object arg{{"provider", provider}, {"secret", secret}, {"body", body}, {"timestamp", timestamp}};
    auto run = run_program({node_path(), providers_dir + "/sign.mjs", json::serialize(arg)}, 60,
                           {{"NODE_PATH", providers_dir + "/node_modules"}});
    signed_request out;
    boost::system::error_code ec;
    auto v = json::parse(run.last_line, ec);
    EXPECT_FALSE(ec) << run.last_line;
    if (ec) {
        return out;
    }
    for (const auto& [k, h] : v.at("headers").as_object()) {
        out.headers.emplace_back(std::string(k), std::string(h.as_string()));
    }
    out.body = std::string(v.at("body").as_string());
    out.extra = v.as_object();
    return out;
}

// RFC 8032 §7.1 TEST 1's key pair: the seed signs (tweetnacl), the public key is configured.
const std::string discord_seed = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";
const std::string discord_public_key = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";

class ProviderSdkServeTest : public ::testing::Test {
protected:
    void SetUp() override {
        struct stat st{};
        ASSERT_FALSE(node_path().empty()) << "node not installed (scripts/setup-debian.sh providers)";
        ASSERT_EQ(::stat((providers_dir + "/node_modules/stripe").c_str(), &st), 0)
            << "the providers' SDKs are not installed (scripts/setup-debian.sh providers runs npm ci)";
        std::filesystem::create_directories(dir_.file("events"));
        std::ofstream(dir_.file("wopbridge.yaml"))
            << probe_config_prelude(dir_.path().string(), "https://bridge.example.test")
            << "runs:\n  local:\n    workflows:\n"
            << capturing_workflow_yaml("wf", dir_.file("events"))
            << "subscriptions:\n"
               "  - {id: gh, workflowId: wf, provider: github, signingSecret: gh-secret-1}\n"
               "  - {id: st, workflowId: wf, provider: stripe, signingSecret: whsec_test1234567890abcdef}\n"
               "  - {id: sh, workflowId: wf, provider: shopify, signingSecret: shpss_0123456789}\n"
               "  - {id: ln, workflowId: wf, provider: linear, signingSecret: lin_wh_0123456789}\n"
               "  - {id: mg, workflowId: wf, provider: mailgun, signingSecret: key-0123456789}\n"
               "  - {id: tg, workflowId: wf, provider: telegram, signingSecret: tg_Secret-0123}\n"
               "  - {id: dc, workflowId: wf, provider: discord, signingSecret: " + discord_public_key + "}\n"
               "  - {id: zm, workflowId: wf, provider: zoom, signingSecret: zoom_secret_token}\n";
        ASSERT_TRUE(serve_.start(dir_.file("wopbridge.yaml"), dir_.file("serve.log"))) << serve_.error;
    }
    void TearDown() override {
        if (serve_.pid() > 0) {
            serve_.signal(SIGTERM);
            EXPECT_EQ(serve_.wait_exit(), 0) << read_text_file(dir_.file("serve.log"));
        }
    }

    http_client::http_reply post(const std::string& sub, const signed_request& r,
                                    std::vector<std::pair<std::string, std::string>> more = {}) {
        http_call c;
        c.method = "POST";
        c.url = serve_.url() + "/v1/ingest/" + sub;
        c.headers = {{"content-type", "application/json"}};
        for (const auto& h : r.headers) {
            c.headers.push_back(h);
        }
        for (auto& h : more) {
            c.headers.push_back(std::move(h));
        }
        c.body = r.body;
        return perform(c);
    }

    // Signed by the provider: accepted; a retry with the same delivery id: the same run; one
    // byte changed: refused. Then exactly one run, caused by its attempt.
    void accepted_once(const std::string& sub, const signed_request& r,
                       const std::vector<std::pair<std::string, std::string>>& ids,
                       bool body_signed = true) {
        auto first = post(sub, r, ids);
        ASSERT_EQ(first.status, 202) << sub << " " << first.body;
        auto run_id = json::parse(first.body).at("runId");
        auto again = post(sub, r, ids);
        ASSERT_EQ(again.status, 200) << sub << " " << again.body;
        EXPECT_EQ(json::parse(again.body).at("outcome").as_string(), "duplicate");
        EXPECT_EQ(json::parse(again.body).at("runId"), run_id);
        if (body_signed) {
            auto altered = r;
            altered.body.back() = altered.body.back() == '}' ? ' ' : '}';
            auto refused = post(sub, altered, ids);
            EXPECT_EQ(refused.status, 401) << sub << " " << refused.body;
        }
        EXPECT_TRUE(probe().runs_started(sub, 1)) << sub;
    }

    temp_dir dir_;
    serve_process serve_;
    serve_probe probe() { return serve_probe(serve_.url(), "hk_probe"); }
};

TEST_F(ProviderSdkServeTest, EachProvidersOwnSignatureStartsOneRunAndAnAlteredByteIsRefused) {
    const std::int64_t now = std::time(nullptr);
    accepted_once("gh", sdk_sign("github", "gh-secret-1", R"({"zen":"Keep it logically awesome."})", now),
                  {{"x-github-delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958"}, {"x-github-event", "ping"}});
    accepted_once("st", sdk_sign("stripe", "whsec_test1234567890abcdef",
                                 R"({"id":"evt_1QxYzSdk","object":"event","type":"charge.succeeded"})", now),
                  {});
    accepted_once("sh", sdk_sign("shopify", "shpss_0123456789", R"({"id":820982911946154508})", now),
                  {{"x-shopify-webhook-id", "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043"},
                   {"x-shopify-topic", "orders/create"}});
    accepted_once("ln",
                  sdk_sign("linear", "lin_wh_0123456789",
                           R"({"action":"create","type":"Issue","webhookTimestamp":)" +
                               std::to_string(now * 1000) + "}",
                           now),
                  {{"linear-delivery", "234d1a4e-b617-4388-90fe-adc3633d6b72"}, {"linear-event", "Issue"}});
    accepted_once("mg",
                  sdk_sign("mailgun", "key-0123456789",
                           R"({"signature":{"timestamp":")" + std::to_string(now) +
                               R"(","token":"a8ce0edb2dd8301dee6c2405235584e45aa91d1e9f979f3de0",)"
                               R"("signature":""},"event-data":{"event":"delivered"}})",
                           now),
                  {});
    // Telegram's secret token does not sign the body (TLS carries it): a wrong token is refused.
    accepted_once("tg", {{{"x-telegram-bot-api-secret-token", "tg_Secret-0123"}},
                         R"({"update_id":10000,"message":{"text":"hi"}})"},
                  {}, false);
    EXPECT_EQ(post("tg", {{{"x-telegram-bot-api-secret-token", "tg_Secret-9999"}},
                          R"({"update_id":10001})"})
                  .status,
              401);

    // The event type the entry names reaches the run among the webhook's headers.
    std::vector<std::string> run_ids;
    ASSERT_TRUE(probe().runs_started("gh", 1, &run_ids));
    auto event = json::parse(read_text_file(dir_.file("events/" + run_ids[0] + ".json")));
    const auto& headers = event.at("webhook").at("headers").as_object();
    EXPECT_EQ(headers.at("x-github-event").as_string(), "ping");
    EXPECT_EQ(headers.at("x-github-delivery").as_string(), "72d3162e-cc78-11e3-81ab-4c9367dc0958");
    EXPECT_FALSE(headers.contains("x-hub-signature-256"));
}

TEST_F(ProviderSdkServeTest, HandshakesAreAnsweredOnlyWhenTheirOwnSignatureVerifiedAndStartNoRun) {
    const std::int64_t now = std::time(nullptr);
    auto ping = sdk_sign("discord", discord_seed, R"({"id":"1234","type":1})", now);
    ASSERT_EQ(ping.extra.at("publicKey").as_string(), discord_public_key);
    auto pong = post("dc", ping);
    EXPECT_EQ(pong.status, 200) << pong.body;
    EXPECT_EQ(json::parse(pong.body), json::parse(R"({"type":1})"));
    auto forged_ping = ping;
    forged_ping.body = R"({"id":"1234","type":1 })";
    EXPECT_EQ(post("dc", forged_ping).status, 401); // what Discord's endpoint check requires

    const std::string validation = R"({"payload":{"plainToken":"qgg8vlvZRS6UYooatFL8Aw"},)"
                                   R"("event_ts":1654503849680,"event":"endpoint.url_validation"})";
    auto check = sdk_sign("zoom", "zoom_secret_token", validation, now);
    auto answered = post("zm", check);
    ASSERT_EQ(answered.status, 200) << answered.body;
    auto reply = json::parse(answered.body);
    EXPECT_EQ(reply.at("plainToken").as_string(), "qgg8vlvZRS6UYooatFL8Aw");
    EXPECT_EQ(reply.at("encryptedToken"), check.extra.at("expected"));
    // Another token under a signature that does not verify: refused, nothing signed back.
    auto oracle = check;
    oracle.body = R"({"payload":{"plainToken":"attacker-chosen"},"event":"endpoint.url_validation"})";
    auto refused = post("zm", oracle);
    EXPECT_EQ(refused.status, 401);
    EXPECT_EQ(refused.body.find("encryptedToken"), std::string::npos) << refused.body;

    // The events themselves start runs; the handshakes before them started none.
    accepted_once("dc", sdk_sign("discord", discord_seed, R"({"id":"5678","type":2,"data":{"name":"deploy"}})", now),
                  {});
    accepted_once("zm", sdk_sign("zoom", "zoom_secret_token",
                                 R"({"event":"meeting.started","payload":{"object":{"id":"1"}}})", now),
                  {{"x-zm-trackingid", "v=2.0,s=1,c=a1b2c3"}});
}

TEST_F(ProviderSdkServeTest, AStripeSignatureOutsideItsToleranceIsRefused) {
    const std::int64_t stale = std::time(nullptr) - 600;
    auto r = sdk_sign("stripe", "whsec_test1234567890abcdef", R"({"id":"evt_stale","type":"x"})", stale);
    auto answer = post("st", r);
    EXPECT_EQ(answer.status, 401) << answer.body;
    EXPECT_TRUE(probe().nothing_started("st", 0));
}

} // namespace
} // namespace wopbridge::testing::provider_sdk_serve_test
