// The example connector end to end through the plugin host (no bridge: a recording sink commits).
#include "plugins/connector_host.hpp"
#include "support/build_paths.hpp"
#include "support/fake_clock.hpp"

#include "wopbridge/signatures.hpp"

#include <boost/json.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <filesystem>
#include <mutex>

namespace wopbridge {
namespace {

using ::testing::HasSubstr;

class sink_that_commits final : public submit_sink {
  public:
    void submit(const inbound_submission& s, submit_callback done) override {
        submit_result r;
        {
            std::lock_guard lk(mu_);
            const bool seen =
                std::find(ids_.begin(), ids_.end(), s.provider_event_id) != ids_.end();
            ids_.push_back(s.provider_event_id);
            last_ = s;
            r.status = seen ? submit_status::duplicate : submit_status::accepted;
            r.run_id = "run_" + std::to_string(seen ? 1 : ids_.size());
        }
        done(r);
    }
    inbound_submission last() {
        std::lock_guard lk(mu_);
        return last_;
    }
    std::size_t count() {
        std::lock_guard lk(mu_);
        return ids_.size();
    }

  private:
    std::mutex mu_;
    std::vector<std::string> ids_;
    inbound_submission last_;
};

class HelloConnectorTest : public ::testing::Test {
  protected:
    void SetUp() override {
        if (!std::filesystem::exists(std::string(WOPBRIDGE_MODULE_DIR) + "/hello.so")) {
            GTEST_SKIP() << "hello.so not built";
        }
        connector_host_options o;
        o.module_dirs = {WOPBRIDGE_MODULE_DIR};
        o.log_sink = [](const std::string&) {};
        host_ = std::make_unique<connector_host>(o, sink_, clock_, random_);
        auto r = host_->add_instance({"hi", "hello", R"({"greeting":"hey"})"});
        ASSERT_TRUE(r) << r.error().message;
        ASSERT_TRUE(host_->subscribe(sub("signed", R"({"secret":"0123456789abcdef0123"})")));
        ASSERT_TRUE(host_->subscribe(sub("open", "{}")));
    }

    static subscription sub(const std::string& id, const std::string& settings) {
        subscription s;
        s.id = id;
        s.connector = "hi";
        s.workflow_id = "wf";
        s.connector_settings_json = settings;
        return s;
    }

    ingest_reply send(const std::string& id, const std::string& body,
                      std::vector<std::pair<std::string, std::string>> headers) {
        inbound_http_request r;
        r.target = "/v1/ingest/" + id;
        r.body = body;
        r.headers = std::move(headers);
        std::mutex mu;
        std::condition_variable cv;
        std::optional<ingest_reply> got;
        host_->handle(sub(id, "{}"), r, [&](ingest_reply rep) {
            std::lock_guard lk(mu);
            got = std::move(rep);
            cv.notify_all();
        });
        std::unique_lock lk(mu);
        cv.wait_for(lk, std::chrono::seconds(5), [&] { return got.has_value(); });
        return got.value_or(ingest_reply{0, {}, "no reply"});
    }

    std::vector<std::pair<std::string, std::string>> signed_headers(const std::string& body,
                                                                    std::int64_t ts) {
        const std::string sig = sig::sign_openwop_v1("0123456789abcdef0123", ts, body);
        return {{"content-type", "text/plain"},
                {"x-hello-timestamp", std::to_string(ts)},
                {"x-hello-signature", sig}};
    }

    sink_that_commits sink_;
    testing::fake_clock clock_;
    testing::seeded_random random_;
    std::unique_ptr<connector_host> host_;
};

TEST_F(HelloConnectorTest, AcceptsASignedRequestAfterTheCommit) {
    const std::int64_t now_s = clock_.now_ms() / 1000;
    const auto reply = send("signed", "ping \"1\"", signed_headers("ping \"1\"", now_s));
    EXPECT_EQ(reply.status, 202);
    EXPECT_EQ(reply.body, R"({"status":"accepted","runId":"run_1"})");
    const auto s = sink_.last();
    EXPECT_TRUE(s.verified);
    EXPECT_EQ(s.subscription_id, "signed");
    EXPECT_EQ(s.provider_event_id, sig::to_hex(sig::sha256("ping \"1\"")));
    const auto content = boost::json::parse(s.content_json).as_object();
    EXPECT_EQ(content.at("webhook").at("greeting").as_string(), "hey");
    EXPECT_EQ(content.at("webhook").at("body").as_string(), "ping \"1\"");
    EXPECT_EQ(content.at("webhook").at("contentType").as_string(), "text/plain");
}

TEST_F(HelloConnectorTest, AnswersARepeatAsDuplicate) {
    const std::int64_t now_s = clock_.now_ms() / 1000;
    EXPECT_EQ(send("signed", "x", signed_headers("x", now_s)).status, 202);
    const auto again = send("signed", "x", signed_headers("x", now_s));
    EXPECT_EQ(again.status, 200);
    EXPECT_THAT(again.body, HasSubstr("duplicate"));
}

TEST_F(HelloConnectorTest, RefusesBadStaleAndMissingSignatures) {
    const std::int64_t now_s = clock_.now_ms() / 1000;
    auto tampered = signed_headers("original", now_s);
    EXPECT_EQ(send("signed", "changed", tampered).status, 401);
    EXPECT_EQ(send("signed", "old", signed_headers("old", now_s - 301)).status, 401);
    EXPECT_EQ(send("signed", "future", signed_headers("future", now_s + 301)).status, 401);
    EXPECT_EQ(send("signed", "none", {}).status, 401);
    EXPECT_EQ(sink_.count(), 0u);
}

TEST_F(HelloConnectorTest, SubmitsUnverifiedWithoutASecretAndUsesTheGivenId) {
    const auto reply =
        send("open", "a=1",
             {{"x-hello-id", "evt-42"}, {"content-type", "application/x-www-form-urlencoded"}});
    EXPECT_EQ(reply.status, 202);
    EXPECT_FALSE(sink_.last().verified);
    EXPECT_EQ(sink_.last().provider_event_id, "evt-42");
}

TEST_F(HelloConnectorTest, RefusesBadSettings) {
    auto r = host_->add_instance({"hi2", "hello", R"({"greting":"typo"})"});
    ASSERT_FALSE(r);
    // The host checks the module's declared schemas first (connector.h); the module's own
    // checks stay as a second line.
    EXPECT_THAT(r.error().message,
                HasSubstr("settings of connector instance 'hi2' do not match module hello's "
                          "config schema: /greting: property is not allowed"));
    auto s = host_->subscribe(sub("weak", R"({"secret":"short"})"));
    ASSERT_FALSE(s);
    EXPECT_THAT(s.error().message, HasSubstr("/secret: string length 5 violates minLength 16"));
}

} // namespace
} // namespace wopbridge
