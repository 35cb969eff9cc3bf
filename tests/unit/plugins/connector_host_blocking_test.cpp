// A connector that blocks inside on_http_request past its deadline: its requests are answered 503
// by the host at the deadline (cut off), it holds at most max_calls_per_instance threads, requests
// past its queue are refused at once, and another connector keeps answering meanwhile.
#include "plugins/connector_host.hpp"

#include "support/build_paths.hpp"
#include "support/fake_clock.hpp"
#include "support/temp_dir.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <thread>

namespace wopbridge {
namespace {

using namespace std::chrono_literals;

class committing_sink final : public submit_sink {
  public:
    void submit(const inbound_submission&, submit_callback done) override {
        submit_result r;
        r.status = submit_status::accepted;
        r.run_id = "run_1";
        done(std::move(r));
    }
    bool has_capacity() const override { return true; }
};

class replies {
  public:
    ingest_reply_callback to() {
        return [this](ingest_reply r) {
            std::lock_guard lk(mu_);
            got_.push_back(std::move(r));
            cv_.notify_all();
        };
    }
    bool wait(std::size_t n) {
        std::unique_lock lk(mu_);
        return cv_.wait_for(lk, 10s, [&] { return got_.size() >= n; });
    }
    std::vector<ingest_reply> all() {
        std::lock_guard lk(mu_);
        return got_;
    }

  private:
    std::mutex mu_;
    std::condition_variable cv_;
    std::vector<ingest_reply> got_;
};

class ConnectorHostBlockingTest : public ::testing::Test {
  protected:
    ConnectorHostBlockingTest() {
        options_.module_dirs = {WOPBRIDGE_TEST_MODULE_DIR};
        options_.respond_timeout_ms = 1000;
        options_.stop_timeout_ms = 5000;
        options_.max_calls_per_instance = 2;
        options_.max_queued_calls = 2;
        options_.log_sink = [this](const std::string& l) {
            std::lock_guard lk(mu_);
            if (l.find("entered") != std::string::npos) {
                ++entered_;
                cv_.notify_all();
            }
        };
        host_ = std::make_unique<connector_host>(options_, sink_, clock_, random_);
    }
    ~ConnectorHostBlockingTest() override {
        std::ofstream(release_file()) << "go";
        host_.reset();
    }

    std::string release_file() const { return dir_.file("release"); }

    static subscription sub(const std::string& id, const std::string& connector) {
        subscription s;
        s.id = id;
        s.connector = connector;
        s.workflow_id = "wf";
        return s;
    }
    static inbound_http_request request(const std::string& target) {
        inbound_http_request r;
        r.target = target;
        r.headers = {{"content-type", "application/json"}, {"x-event-id", target}};
        r.body = "{}";
        return r;
    }
    bool wait_entered(int n) {
        std::unique_lock lk(mu_);
        return cv_.wait_for(lk, 10s, [&] { return entered_ >= n; });
    }

    testing::temp_dir dir_;
    connector_host_options options_;
    committing_sink sink_;
    testing::fake_clock clock_;
    testing::seeded_random random_;
    std::mutex mu_;
    std::condition_variable cv_;
    int entered_ = 0;
    std::unique_ptr<connector_host> host_;
};

TEST_F(ConnectorHostBlockingTest, ABlockingConnectorIsCutOffAtItsDeadlineWithoutStallingOthers) {
    const std::string settings =
        boost::json::serialize(boost::json::object{{"releaseFile", release_file()}});
    ASSERT_TRUE(host_->add_instance({"blocker", "blocks_in_request", settings}));
    ASSERT_TRUE(host_->add_instance({"echo", "good_echo", "{}"}));
    ASSERT_TRUE(host_->subscribe(sub("b1", "blocker")));
    ASSERT_TRUE(host_->subscribe(sub("e1", "echo")));

    // Two calls block inside the module, each on its own (HTTP worker) thread.
    replies blocked;
    std::vector<std::thread> workers;
    for (int i = 0; i < 2; ++i) {
        workers.emplace_back([&, i] {
            host_->handle(sub("b1", "blocker"), request("/v1/ingest/b1?block" + std::to_string(i)),
                          blocked.to());
        });
    }
    ASSERT_TRUE(wait_entered(2));

    // Two more wait in the instance's queue: handle() returns at once, no thread is taken.
    for (int i = 2; i < 4; ++i) {
        host_->handle(sub("b1", "blocker"), request("/v1/ingest/b1?block" + std::to_string(i)),
                      blocked.to());
    }
    // Past the queue: refused at once.
    replies refused;
    host_->handle(sub("b1", "blocker"), request("/v1/ingest/b1?block9"), refused.to());
    ASSERT_TRUE(refused.wait(1));
    EXPECT_EQ(refused.all()[0].status, 503);
    EXPECT_EQ(boost::json::parse(refused.all()[0].body).at("error").as_string(),
              "service_unavailable");

    // The other connector answers meanwhile, on this thread.
    replies echo;
    host_->handle(sub("e1", "echo"), request("/v1/ingest/e1"), echo.to());
    ASSERT_TRUE(echo.wait(1));
    EXPECT_EQ(echo.all()[0].status, 200);

    // At the deadline the host answers all four blocked or queued requests itself.
    EXPECT_TRUE(blocked.all().empty());
    clock_.advance(options_.respond_timeout_ms + 1);
    ASSERT_TRUE(blocked.wait(4));
    for (const auto& r : blocked.all()) {
        EXPECT_EQ(r.status, 503);
        auto v = boost::json::parse(r.body).as_object();
        EXPECT_EQ(v.size(), 2u) << r.body; // the closed envelope {error, message}
        EXPECT_EQ(v.at("error").as_string(), "service_unavailable");
    }

    // The module lets go: the queued requests, already answered, never reach it; late answers are
    // ignored; the instance serves again.
    std::ofstream(release_file()) << "go";
    for (auto& t : workers) {
        t.join();
    }
    auto stats = host_->stats("blocker");
    ASSERT_TRUE(stats);
    EXPECT_EQ(stats->requests, 2u);
    EXPECT_EQ(stats->timeouts, 4u);
    EXPECT_EQ(stats->busy, 1u);
    EXPECT_EQ(blocked.all().size(), 4u);
    replies after;
    host_->handle(sub("b1", "blocker"), request("/v1/ingest/b1"), after.to());
    ASSERT_TRUE(after.wait(1));
    EXPECT_EQ(after.all()[0].status, 200);
}

TEST_F(ConnectorHostBlockingTest, QueuedRequestsRunWhenASlotFrees) {
    const std::string settings =
        boost::json::serialize(boost::json::object{{"releaseFile", release_file()}});
    ASSERT_TRUE(host_->add_instance({"blocker", "blocks_in_request", settings}));
    ASSERT_TRUE(host_->subscribe(sub("b1", "blocker")));
    replies got;
    std::vector<std::thread> workers;
    for (int i = 0; i < 2; ++i) {
        workers.emplace_back([&, i] {
            host_->handle(sub("b1", "blocker"), request("/v1/ingest/b1?block" + std::to_string(i)),
                          got.to());
        });
    }
    ASSERT_TRUE(wait_entered(2));
    host_->handle(sub("b1", "blocker"), request("/v1/ingest/b1?queued"), got.to());
    std::ofstream(release_file())
        << "go"; // before the deadline: everything is answered by the module
    ASSERT_TRUE(got.wait(3));
    for (auto& t : workers) {
        t.join();
    }
    for (const auto& r : got.all()) {
        EXPECT_EQ(r.status, 200) << r.body;
    }
    EXPECT_EQ(host_->stats("blocker")->requests, 3u);
}

} // namespace
} // namespace wopbridge
