// The bridge when the store pushes back: a full intake queue, a store that cannot commit, and an
// attempt whose record does not commit.
#include "app/bridge.hpp"
#include "plugins/submit_sink.hpp"

#include "support/fake_clock.hpp"
#include "support/forwarding_store.hpp"
#include "support/scripted_run_starter.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>

namespace wopbridge {
namespace {

class faulty_store final : public testing::forwarding_store {
public:
    using forwarding_store::forwarding_store;

    void intake(intake_request req, intake_callback done) override {
        std::unique_lock lock(mutex_);
        if (hold_intake) {
            held_.emplace_back(std::move(req), std::move(done));
            return;
        }
        lock.unlock();
        if (fail_intake) {
            done(make_error_code(errc::store_unavailable));
            return;
        }
        forwarding_store::intake(std::move(req), std::move(done));
    }
    void release() {
        std::vector<std::pair<intake_request, intake_callback>> held;
        {
            std::lock_guard lock(mutex_);
            hold_intake = false;
            held.swap(held_);
        }
        for (auto& [req, done] : held) {
            forwarding_store::intake(std::move(req), std::move(done));
        }
    }
    result<void> record_attempt(const attempt_record& rec) override {
        if (fail_record_attempts > 0) {
            --fail_record_attempts;
            return make_error_code(errc::store_unavailable);
        }
        return forwarding_store::record_attempt(rec);
    }

    bool hold_intake = false;
    std::atomic<bool> fail_intake{false};
    std::atomic<int> fail_record_attempts{0};

private:
    std::mutex mutex_;
    std::vector<std::pair<intake_request, intake_callback>> held_;
};

class BridgeStoreFaultsTest : public ::testing::Test {
protected:
    void SetUp() override {
        settings_.host_key_file = dir_.file("host.key");
        settings_.max_pending_intake = 2;
        settings_.delivery_lease_ms = 60000;
        sqlite_options o;
        o.path = dir_.file("bridge.db");
        auto inner = open_sqlite_store(o);
        ASSERT_TRUE(inner.has_value());
        auto st = std::make_unique<faulty_store>(std::move(*inner));
        store_ = st.get();
        auto starter = std::make_unique<testing::scripted_run_starter>(std::vector<std::string>{"wf"});
        starter_ = starter.get();
        bridge_ = std::make_unique<bridge>(settings_, std::move(st), std::move(starter), clock_, random_);
        registration_request req;
        req.tenant = "acme";
        req.workflow_id = "wf";
        sub_id_ = bridge_->register_subscription(req).value().record.id;
    }
    void TearDown() override { bridge_.reset(); }

    void submit(const std::string& event_id, std::vector<submit_result>& out, std::mutex& m) {
        inbound_submission s;
        s.subscription_id = sub_id_;
        s.provider_event_id = event_id;
        s.content_json = R"({"webhook":{}})";
        bridge_->submit(s, [&](submit_result r) {
            std::lock_guard lock(m);
            out.push_back(std::move(r));
        });
    }

    testing::temp_dir dir_;
    testing::fake_clock clock_;
    testing::seeded_random random_{17};
    bridge_settings settings_;
    faulty_store* store_ = nullptr;
    testing::scripted_run_starter* starter_ = nullptr;
    std::unique_ptr<bridge> bridge_;
    std::string sub_id_;
};

TEST_F(BridgeStoreFaultsTest, SubmissionsPastThePendingBoundAreOverloaded) {
    store_->hold_intake = true;
    std::mutex m;
    std::vector<submit_result> results;
    submit("e1", results, m);
    submit("e2", results, m);
    submit("e3", results, m);
    {
        std::lock_guard lock(m);
        ASSERT_EQ(results.size(), 1u); // answered at once, without touching the store
        EXPECT_EQ(results[0].status, submit_status::overloaded);
        EXPECT_GT(results[0].retry_after_seconds, 0);
    }
    // What connectors are told (queue sources pause, SMTP answers 452) is the same bound.
    EXPECT_FALSE(bridge_->has_intake_capacity());
    EXPECT_FALSE(bridge_submit_sink(*bridge_).has_capacity());
    store_->release();
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (;;) {
        {
            std::lock_guard lock(m);
            if (results.size() == 3u || std::chrono::steady_clock::now() > deadline) {
                break;
            }
        }
        std::this_thread::yield();
    }
    std::lock_guard lock(m);
    ASSERT_EQ(results.size(), 3u);
    EXPECT_EQ(results[1].status, submit_status::accepted);
    EXPECT_EQ(results[2].status, submit_status::accepted);
    EXPECT_TRUE(bridge_submit_sink(*bridge_).has_capacity());
}

TEST_F(BridgeStoreFaultsTest, StoreThatCannotCommitAnswersUnavailableWithRetryAfter) {
    store_->fail_intake = true;
    std::mutex m;
    std::vector<submit_result> results;
    submit("e1", results, m);
    std::lock_guard lock(m);
    ASSERT_EQ(results.size(), 1u);
    EXPECT_EQ(results[0].status, submit_status::unavailable);
    EXPECT_EQ(results[0].retry_after_seconds, 5);
    EXPECT_TRUE(results[0].run_id.empty());
}

TEST_F(BridgeStoreFaultsTest, AnUncommittedAttemptStartsNothingAndIsRetriedAfterTheLease) {
    std::mutex m;
    std::vector<submit_result> results;
    submit("e1", results, m);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
        std::lock_guard lock(m);
        if (!results.empty()) {
            break;
        }
    }
    ASSERT_EQ(results.size(), 1u);
    store_->fail_record_attempts = 1;
    EXPECT_EQ(bridge_->run_due(clock_.now_ms()), 1);
    EXPECT_EQ(starter_->starts(), 0); // local order: no commit, no start
    EXPECT_EQ(bridge_->run_due(clock_.now_ms() + 1000), 0); // still leased
    EXPECT_EQ(bridge_->run_due(clock_.now_ms() + settings_.delivery_lease_ms), 1);
    EXPECT_EQ(starter_->starts(), 1);
    auto run = bridge_->get_run("acme", results[0].run_id);
    ASSERT_TRUE(run.has_value());
}

} // namespace
} // namespace wopbridge
