#include "wopbridge/broker_listener.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace wopbridge {
namespace {

// What the listener did to its workers, in order ("start a", "stop a", "closed").
struct journal {
    std::vector<std::string> lines;
    std::string text() const {
        std::string out;
        for (const auto& l : lines) {
            out += (out.empty() ? "" : ", ") + l;
        }
        return out;
    }
};

struct fake_worker {
    journal& log;
    std::string name;
    bool stopped = false;
    void stop(std::chrono::steady_clock::time_point) {
        if (!stopped) {
            stopped = true;
            log.lines.push_back("stop " + name);
        }
    }
};

// A subscription consumes one "topic"; "fail" workers cannot start.
struct fake_subscription {
    std::string topic;
    std::string option;
    bool operator==(const fake_subscription&) const = default;
};

class fake_listener final : public broker_listener<fake_worker, fake_subscription> {
  public:
    fake_listener(host& h, journal& j) : broker_listener(h), log_(j) {}
    ~fake_listener() override { stop_workers(std::chrono::steady_clock::now()); }

    status connect = status::ok;

  protected:
    std::optional<fake_subscription> parse_subscription(std::string_view json,
                                                        std::string& error) override {
        // "topic" or "topic/option"
        if (json.empty()) {
            error = "subscription settings: topic is required";
            return std::nullopt;
        }
        const auto slash = json.find('/');
        return fake_subscription{
            std::string(json.substr(0, slash)),
            slash == std::string_view::npos ? std::string() : std::string(json.substr(slash + 1))};
    }
    std::string conflict(const fake_subscription& existing, const std::string& existing_id,
                         const fake_subscription& wanted) const override {
        return existing.topic == wanted.topic
                   ? "topic '" + wanted.topic + "' is consumed by '" + existing_id + "'"
                   : std::string();
    }
    std::shared_ptr<fake_worker> start_worker(const std::string& id, const fake_subscription& s,
                                              std::string& error) override {
        if (s.option == "fail") {
            error = "cannot start " + id;
            log_.lines.push_back("refused " + id);
            return nullptr;
        }
        log_.lines.push_back("start " + id + (s.option.empty() ? "" : "/" + s.option));
        return std::make_shared<fake_worker>(fake_worker{log_, id});
    }
    status before_start() override {
        log_.lines.push_back("connect");
        return connect;
    }
    void after_workers_stopped() override { log_.lines.push_back("closed"); }

  private:
    journal& log_;
};

std::int64_t fixed_now(wb_host*) {
    return 1'000'000;
}

class SdkBrokerListenerTest : public ::testing::Test {
  protected:
    SdkBrokerListenerTest() {
        api_.struct_size = sizeof api_;
        api_.abi_major = WOPBRIDGE_ABI_MAJOR;
        api_.abi_minor = WOPBRIDGE_ABI_MINOR;
        api_.now_ms = fixed_now;
    }

    status subscribe(std::string_view id, std::string_view settings) {
        error_.clear();
        return listener_->subscribe({.id = id,
                                     .source = "queue",
                                     .workflow_id = "wf",
                                     .settings_json = settings,
                                     .ingest_url = ""},
                                    error_);
    }

    wb_host_api api_{};
    host host_{&api_, nullptr};
    journal log_;
    std::unique_ptr<fake_listener> listener_ = std::make_unique<fake_listener>(host_, log_);
    std::string error_;
};

TEST_F(SdkBrokerListenerTest, SubscriptionsBeforeStartStartOnlyAtStart) {
    ASSERT_EQ(subscribe("a", "t1"), status::ok);
    ASSERT_EQ(subscribe("b", "t2"), status::ok);
    EXPECT_EQ(log_.text(), "");
    ASSERT_EQ(listener_->start(), status::ok);
    EXPECT_EQ(log_.text(), "connect, start a, start b");
    ASSERT_EQ(subscribe("c", "t3"), status::ok);
    EXPECT_EQ(log_.text(), "connect, start a, start b, start c");
}

TEST_F(SdkBrokerListenerTest, BadSettingsAreRefusedWithTheParsersMessage) {
    EXPECT_EQ(subscribe("a", ""), status::invalid);
    EXPECT_EQ(error_, "subscription settings: topic is required");
}

TEST_F(SdkBrokerListenerTest, OneConsumerPerTopicAndTheConnectorsRefusal) {
    ASSERT_EQ(subscribe("a", "t1"), status::ok);
    EXPECT_EQ(subscribe("b", "t1"), status::invalid);
    EXPECT_EQ(error_, "topic 't1' is consumed by 'a'");
    // A subscription never conflicts with itself.
    EXPECT_EQ(subscribe("a", "t1/x"), status::ok);
    ASSERT_EQ(listener_->start(), status::ok);
    EXPECT_EQ(log_.text(), "connect, start a/x");
}

TEST_F(SdkBrokerListenerTest, UnchangedSettingsKeepTheWorkerChangedOnesReplaceIt) {
    ASSERT_EQ(listener_->start(), status::ok);
    ASSERT_EQ(subscribe("a", "t1"), status::ok);
    ASSERT_EQ(subscribe("a", "t1"), status::ok);
    EXPECT_EQ(log_.text(), "connect, start a");
    ASSERT_EQ(subscribe("a", "t1/x"), status::ok);
    EXPECT_EQ(log_.text(), "connect, start a, stop a, start a/x");
}

TEST_F(SdkBrokerListenerTest, UnsubscribeStopsTheWorkerAndForgetsTheSettings) {
    ASSERT_EQ(subscribe("a", "t1"), status::ok);
    EXPECT_EQ(listener_->unsubscribe("a"), status::ok);
    EXPECT_EQ(listener_->unsubscribe("never"), status::ok);
    ASSERT_EQ(listener_->start(), status::ok);
    EXPECT_EQ(log_.text(), "connect");
    ASSERT_EQ(subscribe("a", "t1"), status::ok);
    ASSERT_EQ(subscribe("b", "t2"), status::ok);
    EXPECT_EQ(listener_->unsubscribe("a"), status::ok);
    EXPECT_EQ(log_.text(), "connect, start a, start b, stop a");
    // Its topic is free again.
    EXPECT_EQ(subscribe("c", "t1"), status::ok);
}

TEST_F(SdkBrokerListenerTest, StopStopsEveryWorkerOnceThenTheSharedConnection) {
    ASSERT_EQ(subscribe("a", "t1"), status::ok);
    ASSERT_EQ(subscribe("b", "t2"), status::ok);
    ASSERT_EQ(listener_->start(), status::ok);
    EXPECT_EQ(listener_->stop(1'000'500), status::ok);
    EXPECT_EQ(listener_->stop(1'000'500), status::ok);
    EXPECT_EQ(log_.text(), "connect, start a, start b, stop a, stop b, closed");
    // Stopped: nothing starts any more.
    EXPECT_EQ(subscribe("c", "t3"), status::ok);
    EXPECT_EQ(listener_->start(), status::ok);
    listener_.reset();
    EXPECT_EQ(log_.text(), "connect, start a, start b, stop a, stop b, closed, connect");
}

TEST_F(SdkBrokerListenerTest, DestroyingStopsTheWorkers) {
    ASSERT_EQ(subscribe("a", "t1"), status::ok);
    ASSERT_EQ(listener_->start(), status::ok);
    listener_.reset();
    EXPECT_EQ(log_.text(), "connect, start a, stop a, closed");
}

TEST_F(SdkBrokerListenerTest, AFailedConnectStartsNothing) {
    ASSERT_EQ(subscribe("a", "t1"), status::ok);
    listener_->connect = status::internal;
    EXPECT_EQ(listener_->start(), status::internal);
    EXPECT_EQ(log_.text(), "connect");
    ASSERT_EQ(subscribe("b", "t2"), status::ok); // not started: made at the next start()
    EXPECT_EQ(log_.text(), "connect");
    listener_->connect = status::ok;
    EXPECT_EQ(listener_->start(), status::ok);
    EXPECT_EQ(log_.text(), "connect, connect, start a, start b");
}

TEST_F(SdkBrokerListenerTest, AWorkerThatCannotStartRefusesItsSubscriptionOnceStarted) {
    ASSERT_EQ(listener_->start(), status::ok);
    EXPECT_EQ(subscribe("a", "t1/fail"), status::invalid);
    EXPECT_EQ(error_, "cannot start a");
    // Refused, so not kept: its topic is free.
    EXPECT_EQ(subscribe("b", "t1"), status::ok);
    EXPECT_EQ(log_.text(), "connect, refused a, start b");
}

TEST_F(SdkBrokerListenerTest, AWorkerThatCannotStartAtStartKeepsItsSubscription) {
    ASSERT_EQ(subscribe("a", "t1/fail"), status::ok);
    ASSERT_EQ(subscribe("b", "t2"), status::ok);
    EXPECT_EQ(listener_->start(), status::ok);
    EXPECT_EQ(log_.text(), "connect, refused a, start b");
    EXPECT_EQ(subscribe("c", "t1"), status::invalid); // a still holds t1
    ASSERT_EQ(subscribe("a", "t1"), status::ok);      // new settings: tried again
    EXPECT_EQ(log_.text(), "connect, refused a, start b, start a");
}

class listener_module final : public broker_listener<fake_worker, fake_subscription> {
  public:
    static connector_info info() {
        connector_info i;
        i.name = "fake-listener";
        i.version = "0.0.1";
        i.status = "alpha";
        i.security_posture = "none";
        i.source = "queue";
        i.capabilities = WB_CAP_LISTENER;
        return i;
    }
    static status validate(std::string_view, std::string&) { return status::ok; }
    listener_module(host& h, std::string_view) : broker_listener(h) {}

  protected:
    std::optional<fake_subscription> parse_subscription(std::string_view, std::string&) override {
        return fake_subscription{};
    }
    std::string conflict(const fake_subscription&, const std::string&,
                         const fake_subscription&) const override {
        return {};
    }
    std::shared_ptr<fake_worker> start_worker(const std::string&, const fake_subscription&,
                                              std::string&) override {
        return nullptr;
    }
};

TEST(SdkBrokerListenerDescriptorTest, AListenerDescriptorHasNoHttpHandler) {
    const wb_connector_descriptor* plain = detail::descriptor_for<listener_module>();
    const wb_connector_descriptor* listener = detail::listener_descriptor_for<listener_module>();
    ASSERT_NE(plain, nullptr);
    ASSERT_NE(listener, nullptr);
    EXPECT_NE(plain->on_http_request, nullptr);
    EXPECT_EQ(listener->on_http_request, nullptr);
    EXPECT_EQ(std::string(listener->name), "fake-listener");
    EXPECT_EQ(listener->start, plain->start);
    EXPECT_EQ(listener, detail::listener_descriptor_for<listener_module>()); // built once
}

} // namespace
} // namespace wopbridge
