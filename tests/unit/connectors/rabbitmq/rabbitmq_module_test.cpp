// Module-level tests: the built rabbitmq.so loaded through the connector harness, consuming a
// real RabbitMQ node (tests/support/rabbitmq_server.hpp, one per test program, one queue per
// test); messages are published and queues inspected with the real C client (rabbitmq-c).
//
// "Unacked" is shown the way the broker shows it: a message delivered to the module and not acked
// is not `ready`; when the module lets go of its connection it is `ready` again.

#include "support/connector_harness.hpp"
#include "support/listener_module_test.hpp"
#include "support/eventually.hpp"
#include "support/rabbitmq_server.hpp"
#include "support/schema_check.hpp"

#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace wopbridge::testing {
namespace {

using namespace std::chrono_literals;

class RabbitmqModuleTest : public ::testing::Test {
  protected:
    void SetUp() override {
        WOPBRIDGE_REQUIRE_RABBITMQ();
        broker_ = rabbitmq_server::shared();
        ASSERT_NE(broker_, nullptr) << rabbitmq_server::shared_error();
        queue_ = std::string("module-") +
                 ::testing::UnitTest::GetInstance()->current_test_info()->name();
        client_ = std::make_unique<amqp_client>(broker_->port());
        ASSERT_TRUE(client_->declare_queue(queue_, queue_ + "-dlq")) << client_->error;
        ASSERT_TRUE(client_->declare_queue(queue_ + "-dlq")) << client_->error;
        harness_ = std::make_unique<connector_harness>("rabbitmq");
    }

    void TearDown() override {
        if (harness_) {
            EXPECT_TRUE(harness_->violations().empty());
        }
    }

    // Connector settings: test defaults, overridden/extended by `extra` (key -> JSON value).
    std::string config(const std::map<std::string, std::string>& extra = {}) const {
        return settings_json({{"url", "\"" + broker_->url() + "\""},
                              {"reconnectWaitMs", "100"},
                              {"retryDelayMs", "50"}},
                             extra);
    }
    std::string sub_settings() const { return R"({"queue":")" + queue_ + R"("})"; }

    // create + start + subscribe; then waits until the module consumes the queue.
    void bring_up(const std::map<std::string, std::string>& extra = {}) {
        std::string error;
        ASSERT_EQ(harness_->bring_up(config(extra), queue_sub("sub-1", sub_settings()), &error),
                  WB_OK)
            << error;
        ASSERT_TRUE(eventually([&] { return consumers() == 1; })) << "never consumed";
    }

    void publish(const std::string& data, const std::string& message_id) {
        EXPECT_TRUE(client_->publish(queue_, data, message_id)) << client_->error;
    }
    std::string id(const std::string& message_id) const { return queue_ + ":id:" + message_id; }

    std::uint32_t ready(const std::string& queue = {}) {
        auto d = client_->depth(queue.empty() ? queue_ : queue);
        return d ? d->ready : 0xffffffffu;
    }
    std::uint32_t consumers() {
        auto d = client_->depth(queue_);
        return d ? d->consumers : 0;
    }

    std::map<std::string, int> count(wb_submit_status outcome) const {
        return submits_by_event(*harness_, outcome);
    }
    bool submitted_with(const std::string& provider_id, wb_submit_status outcome) const {
        return count(outcome).count(provider_id) != 0;
    }
    bool logged(const std::string& text) const {
        return logged_line(*harness_, text);
    }

    rabbitmq_server* broker_ = nullptr;
    std::string queue_;
    std::unique_ptr<amqp_client> client_;
    std::unique_ptr<connector_harness> harness_;
};

TEST_F(RabbitmqModuleTest, DescriptorIsAListenerOfSourceQueueAndBadSettingsAreRefused) {
    expect_queue_listener_descriptor(*harness_, "rabbitmq", nullptr);
    EXPECT_EQ(harness_->validate("{}").first, WB_ERR_INVALID);
    EXPECT_EQ(harness_->validate(config({{"prefetch", "0"}})).first, WB_ERR_INVALID);
    EXPECT_EQ(harness_->validate(config()).first, WB_OK);
    // A TLS file that does not exist is refused at create, naming the setting, not the path.
    std::string error;
    EXPECT_EQ(harness_->create(
                  config({{"tls", "true"}, {"tlsCa", "\"/nonexistent/ca-Secret.pem\""}}), &error),
              WB_ERR_INVALID);
    EXPECT_NE(error.find("tlsCa"), std::string::npos) << error;
    EXPECT_EQ(error.find("ca-Secret"), std::string::npos) << error;
}

TEST_F(RabbitmqModuleTest, OneSubscriptionPerQueue) {
    ASSERT_EQ(harness_->create(config()), WB_OK);
    ASSERT_EQ(harness_->start(), WB_OK);
    std::string error;
    EXPECT_EQ(harness_->subscribe(queue_sub("a", "{}"), &error), WB_ERR_INVALID);
    EXPECT_NE(error.find("queue"), std::string::npos);
    ASSERT_EQ(harness_->subscribe(queue_sub("a", sub_settings()), &error), WB_OK) << error;
    EXPECT_EQ(harness_->subscribe(queue_sub("b", sub_settings()), &error), WB_ERR_INVALID);
    EXPECT_NE(error.find("already consumed"), std::string::npos);
}

TEST_F(RabbitmqModuleTest, EachMessageBecomesExactlyOneEventAndIsAcked) {
    bring_up();
    for (int i = 0; i < 3; ++i) {
        publish(R"({"total":)" + std::to_string(10 * i) + "}", "m-" + std::to_string(i));
    }
    ASSERT_TRUE(harness_->wait_for_submits(3, 10s));
    auto submits = harness_->submits();
    ASSERT_EQ(submits.size(), 3u);
    for (std::size_t i = 0; i < 3; ++i) {
        const auto& s = submits[i];
        EXPECT_EQ(s.subscription_id, "sub-1");
        EXPECT_EQ(s.provider_event_id, id("m-" + std::to_string(i)));
        EXPECT_EQ(s.outcome, WB_SUBMIT_ACCEPTED);
        EXPECT_FALSE(s.verified);
        auto doc = boost::json::parse(s.content_json);
        const auto& st = doc.at("stream").as_object();
        EXPECT_EQ(st.at("topic").as_string(), queue_);
        EXPECT_EQ(st.at("key").as_string(), queue_); // the routing key (default exchange)
        EXPECT_EQ(st.at("message").at("total").as_int64(), 10 * static_cast<int>(i));
        EXPECT_TRUE(
            expect_valid(doc.at("stream"), "v2/trigger-event.schema.json#/$defs/StreamEvent"));
    }
    EXPECT_FALSE(harness_->wait_for_submits(4, 300ms));
    // Acked: nothing comes back when the module lets go of its connection.
    ASSERT_EQ(harness_->stop(), WB_OK);
    EXPECT_TRUE(eventually([&] { return consumers() == 0; }));
    EXPECT_EQ(ready(), 0u);
}

TEST_F(RabbitmqModuleTest, AcksOnlyAfterTheOutcomeAndARedeliveryIsADuplicate) {
    bring_up();
    harness_->pause_submit_completion();
    publish("1", "a");
    ASSERT_TRUE(harness_->wait_for_submits(1, 10s));
    EXPECT_EQ(ready(), 0u); // delivered to the module, held
    // The subscription goes before the commit's outcome arrives: never acked, so the broker
    // requeues it when the consumer's connection closes.
    ASSERT_EQ(harness_->unsubscribe("sub-1"), WB_OK);
    EXPECT_TRUE(eventually([&] { return ready() == 1; }));
    harness_->resume_submit_completion(); // the first submit committed after all
    ASSERT_EQ(harness_->subscribe(queue_sub("sub-1", sub_settings())), WB_OK);
    ASSERT_TRUE(eventually([&] { return submitted_with(id("a"), WB_SUBMIT_DUPLICATE); }));
    EXPECT_EQ(count(WB_SUBMIT_ACCEPTED)[id("a")], 1);
    ASSERT_EQ(harness_->stop(), WB_OK);
    EXPECT_EQ(ready(), 0u) << "the duplicate was acked";
}

TEST_F(RabbitmqModuleTest, StopFinishesInFlightSubmitsAndAcks) {
    bring_up();
    harness_->pause_submit_completion();
    publish("1", "a");
    ASSERT_TRUE(harness_->wait_for_submits(1, 10s));
    // stop() lets the host complete the outcome; the ack goes out before the connection closes.
    ASSERT_EQ(harness_->stop(), WB_OK);
    EXPECT_TRUE(eventually([&] { return consumers() == 0; }));
    EXPECT_EQ(ready(), 0u);
}

TEST_F(RabbitmqModuleTest, RepeatedRefusalsKeepTheMessageBackOffAndResumeOnAcceptance) {
    bring_up();
    harness_->set_submit_mode(submit_mode::refuse, "subscription_not_active");
    publish("1", "a");
    ASSERT_TRUE(harness_->wait_for_submits(1, 10s));
    // retryDelayMs is 50: without a backoff that is ~30 submits in 1.5 s; doubling gives ~5.
    EXPECT_FALSE(eventually([&] { return harness_->submits().size() >= 12; }, 1500ms))
        << harness_->submits().size() << " submits of one refused message";
    EXPECT_EQ(ready(), 0u); // held unacked by the module, not requeued
    harness_->set_submit_mode(submit_mode::accept);
    ASSERT_TRUE(eventually([&] { return submitted_with(id("a"), WB_SUBMIT_ACCEPTED); }));
    EXPECT_TRUE(logged("submit refused (subscription_not_active)"));
    ASSERT_EQ(harness_->stop(), WB_OK);
    EXPECT_EQ(ready(), 0u);
}

TEST_F(RabbitmqModuleTest, InvalidIsResubmittedWithoutPayloadThenRejectedToTheDeadLetterQueue) {
    bring_up();
    harness_->set_submit_mode(submit_mode::refuse, "invalid");
    publish(R"({"n":1})", "a");
    ASSERT_TRUE(harness_->wait_for_submits(2, 10s));
    auto submits = harness_->submits();
    EXPECT_FALSE(boost::json::parse(submits[0].content_json).at("stream").at("message").is_null());
    EXPECT_TRUE(boost::json::parse(submits[1].content_json).at("stream").at("message").is_null());
    ASSERT_TRUE(eventually([&] { return ready(queue_ + "-dlq") == 1; }));
    EXPECT_TRUE(logged("rejected (requeue=false)"));
    EXPECT_FALSE(harness_->wait_for_submits(3, 300ms));
}

TEST_F(RabbitmqModuleTest, MessagesWithoutIdAreRejectedOrHashedAsConfigured) {
    bring_up();
    publish("anonymous", "");
    ASSERT_TRUE(eventually([&] { return ready(queue_ + "-dlq") == 1; }));
    EXPECT_TRUE(logged("message without message_id rejected"));
    EXPECT_TRUE(harness_->submits().empty());
    ASSERT_EQ(harness_->subscribe(queue_sub(
                  "sub-1", R"({"queue":")" + queue_ + R"(","withoutMessageId":"contentHash"})")),
              WB_OK);
    publish("anonymous", "");
    publish("anonymous", ""); // identical: one event
    publish("other", "");
    ASSERT_TRUE(harness_->wait_for_submits(3, 10s));
    const auto accepted = count(WB_SUBMIT_ACCEPTED);
    EXPECT_EQ(accepted.size(), 2u);
    EXPECT_EQ(count(WB_SUBMIT_DUPLICATE).size(), 1u);
    for (const auto& [pid, n] : accepted) {
        EXPECT_EQ(pid.rfind(queue_ + ":sha256:", 0), 0u) << pid;
    }
    EXPECT_TRUE(logged("deduplicated by a hash of their content"));
}

TEST_F(RabbitmqModuleTest, PrefetchBoundsWhatIsHeldAndNoCapacityStopsSubmitting) {
    harness_->set_capacity(false);
    bring_up({{"prefetch", "2"}});
    for (int i = 0; i < 5; ++i) {
        publish(std::to_string(i), "m-" + std::to_string(i));
    }
    // No capacity: nothing submitted; the broker delivered only `prefetch` of them.
    EXPECT_FALSE(harness_->wait_for_submits(1, 500ms));
    EXPECT_TRUE(eventually([&] { return ready() == 3; }));
    harness_->pause_submit_completion();
    harness_->set_capacity(true);
    ASSERT_TRUE(harness_->wait_for_submits(2, 10s));
    EXPECT_FALSE(harness_->wait_for_submits(3, 500ms)); // two outstanding: no third delivery
    EXPECT_EQ(ready(), 3u);
    harness_->resume_submit_completion();
    EXPECT_TRUE(harness_->wait_for_submits(5, 10s));
    EXPECT_TRUE(eventually([&] { return ready() == 0; }));
    ASSERT_EQ(harness_->stop(), WB_OK);
    EXPECT_EQ(ready(), 0u);
}

TEST_F(RabbitmqModuleTest, MissingQueueIsLoggedAndConsumedOnceItExists) {
    std::string error;
    const std::string late = queue_ + "-late";
    ASSERT_EQ(
        harness_->bring_up(config(), queue_sub("sub-1", R"({"queue":")" + late + R"("})"), &error),
        WB_OK)
        << error;
    ASSERT_TRUE(eventually([&] { return logged("404 NOT_FOUND"); })) << "no missing-queue line";
    ASSERT_TRUE(client_->declare_queue(late));
    ASSERT_TRUE(client_->publish(late, "x", "late-1"));
    ASSERT_TRUE(harness_->wait_for_submits(1, 10s));
    EXPECT_EQ(harness_->submits()[0].provider_event_id, late + ":id:late-1");
}

TEST_F(RabbitmqModuleTest, DeletedQueueCancelsTheConsumerWhichComesBackWithTheQueue) {
    bring_up();
    publish("1", "a");
    ASSERT_TRUE(harness_->wait_for_submits(1, 10s));
    // The broker tells us (consumer_cancel_notify) instead of leaving a deaf consumer.
    ASSERT_TRUE(client_->delete_queue(queue_)) << client_->error;
    ASSERT_TRUE(eventually([&] { return logged("consumer cancelled by the broker"); }));
    ASSERT_TRUE(eventually([&] { return logged("404 NOT_FOUND"); }));
    ASSERT_TRUE(client_->declare_queue(queue_)) << client_->error;
    ASSERT_TRUE(eventually([&] { return consumers() == 1; }));
    publish("2", "b");
    ASSERT_TRUE(harness_->wait_for_submits(2, 10s));
    EXPECT_EQ(harness_->submits()[1].provider_event_id, id("b"));
}

TEST_F(RabbitmqModuleTest, ConsumesOverTlsVerifyingTheBrokerAgainstTheCaFile) {
    rabbitmq_server node(rabbitmq_server_options{.tls = true}); // a node with a TLS listener
    ASSERT_TRUE(node.start()) << node.error;
    amqp_client plain(node.port());
    ASSERT_TRUE(plain.declare_queue("tls-orders")) << plain.error;
    const std::string url =
        "amqps://guest:guest@localhost:" + std::to_string(node.tls_port()) + "/";
    std::string error;
    ASSERT_EQ(harness_->bring_up(R"({"url":")" + url + R"(","tlsCa":")" + node.ca_file() +
                                     R"(","reconnectWaitMs":100})",
                                 queue_sub("sub-1", R"({"queue":"tls-orders"})"), &error),
              WB_OK)
        << error;
    ASSERT_TRUE(plain.publish("tls-orders", R"({"secure":true})", "tls-1")) << plain.error;
    ASSERT_TRUE(harness_->wait_for_submits(1, 20s));
    EXPECT_EQ(harness_->submits()[0].provider_event_id, "tls-orders:id:tls-1");
    EXPECT_TRUE(logged("connected to amqps://localhost:"));

    // Without the CA the broker's certificate does not verify: never consumed, and said so.
    connector_harness untrusting("rabbitmq");
    ASSERT_EQ(untrusting.bring_up(R"({"url":")" + url + R"(","reconnectWaitMs":100})",
                                  queue_sub("sub-2", R"({"queue":"tls-orders"})"), &error),
              WB_OK)
        << error;
    const auto said = [&] {
        const auto lines = untrusting.log_lines();
        return std::any_of(lines.begin(), lines.end(), [](const std::string& l) {
            return l.find("no broker reachable yet") != std::string::npos;
        });
    };
    EXPECT_TRUE(eventually(said));
    ASSERT_TRUE(plain.publish("tls-orders", "x", "tls-2")) << plain.error;
    ASSERT_TRUE(harness_->wait_for_submits(2, 10s));
    EXPECT_TRUE(untrusting.submits().empty());
    EXPECT_EQ(untrusting.stop(), WB_OK);
}

} // namespace
} // namespace wopbridge::testing
