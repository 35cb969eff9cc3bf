#include "runs/run_starter.hpp"

#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

namespace wopbridge {
namespace {

class recording_lifecycle_sink final : public run_lifecycle_sink {
public:
    struct outcome {
        bool succeeded;
        int exit_code;
    };
    void on_run_finished(const std::string& run_id, bool succeeded, int exit_code) override {
        std::lock_guard lock(mu_);
        finished_[run_id] = {succeeded, exit_code};
        cv_.notify_all();
    }
    std::optional<outcome> wait_for(const std::string& run_id,
                                    std::chrono::milliseconds limit = std::chrono::seconds(10)) {
        std::unique_lock lock(mu_);
        if (!cv_.wait_for(lock, limit, [&] { return finished_.count(run_id) > 0; })) {
            return std::nullopt;
        }
        return finished_.at(run_id);
    }

private:
    std::mutex mu_;
    std::condition_variable cv_;
    std::map<std::string, outcome> finished_;
};

class LocalRunStarterTest : public ::testing::Test {
protected:
    testing::temp_dir dir_;
    recording_lifecycle_sink sink_;

    std::unique_ptr<run_starter> make(std::vector<local_workflow> wfs, local_run_options o = {}) {
        o.inherit_output = false;
        auto s = make_local_run_starter(std::move(wfs), dir_.path().string(), o);
        s->set_lifecycle_sink(&sink_);
        return s;
    }
    static run_start_request request(std::string run_id, std::string workflow) {
        run_start_request r;
        r.run_id = std::move(run_id);
        r.delivery_id = "dlv_1";
        r.tenant = "default";
        r.workflow_id = std::move(workflow);
        r.subscription_id = "sub_1";
        r.trigger_event_json = R"({"source":"webhook","subscriptionId":"sub_1"})";
        return r;
    }
    static run_start_result start_now(run_starter& s, const run_start_request& r) {
        std::optional<run_start_result> out;
        s.start(r, [&](run_start_result res) { out = std::move(res); });
        EXPECT_TRUE(out.has_value()) << "start() must report before returning";
        return out.value_or(run_start_result{});
    }
};

TEST_F(LocalRunStarterTest, CommandReceivesTheTriggerEventOnStdin) {
    auto out = dir_.file("out.json");
    auto s = make({{"wf", {"/bin/sh", "-c", "cat > \"$OUT\""}, {{"OUT", out}}, 10000}});
    auto req = request("run_a", "wf");
    EXPECT_EQ(s->prepare(req).outcome, run_start_result::kind::started);
    auto r = start_now(*s, req);
    EXPECT_EQ(r.outcome, run_start_result::kind::started);
    EXPECT_EQ(r.status_after, run_status::running);
    auto fin = sink_.wait_for("run_a");
    ASSERT_TRUE(fin);
    EXPECT_TRUE(fin->succeeded);
    EXPECT_EQ(fin->exit_code, 0);
    std::ifstream in(out);
    std::stringstream ss;
    ss << in.rdbuf();
    EXPECT_EQ(ss.str(), req.trigger_event_json);
}

TEST_F(LocalRunStarterTest, LargeInputIsWrittenWithoutBlockingStart) {
    auto out = dir_.file("big.json");
    auto s = make({{"wf", {"/bin/sh", "-c", "cat > \"$OUT\""}, {{"OUT", out}}, 10000}});
    auto req = request("run_big", "wf");
    req.trigger_event_json = "{\"x\":\"" + std::string(1 << 20, 'a') + "\"}";
    EXPECT_EQ(start_now(*s, req).outcome, run_start_result::kind::started);
    ASSERT_TRUE(sink_.wait_for("run_big"));
    EXPECT_EQ(std::filesystem::file_size(out), req.trigger_event_json.size());
}

// Output capture (issue 19): stdout and stderr go to the run's own log, never the service's; past
// the bound the rest is read and dropped, so the command neither blocks nor fails on its output.
TEST_F(LocalRunStarterTest, OutputGoesToTheRunsLogUpToItsBound) {
    local_run_options o;
    o.output_dir = dir_.path().string();
    o.max_output_bytes = 4096;
    auto s = make({{"wf", {"/bin/sh", "-c", "echo to-stdout; echo to-stderr >&2"}, {}, 10000},
                   {"chatty",
                    {"/bin/sh", "-c", "head -c 1000000 /dev/zero | tr '\\0' x; echo; exit 0"},
                    {},
                    10000}},
                  o);
    EXPECT_EQ(start_now(*s, request("run_out", "wf")).outcome, run_start_result::kind::started);
    EXPECT_EQ(start_now(*s, request("run_chatty", "chatty")).outcome,
              run_start_result::kind::started);
    auto quiet = sink_.wait_for("run_out");
    auto chatty = sink_.wait_for("run_chatty");
    ASSERT_TRUE(quiet && chatty);
    EXPECT_TRUE(quiet->succeeded);
    EXPECT_TRUE(chatty->succeeded) << "a command past the output bound must not fail for it";
    auto read = [&](const std::string& name) {
        std::ifstream in(dir_.file(name));
        std::stringstream ss;
        ss << in.rdbuf();
        return ss.str();
    };
    const std::string log = read("run_out.log");
    EXPECT_NE(log.find("to-stdout\n"), std::string::npos) << log;
    EXPECT_NE(log.find("to-stderr\n"), std::string::npos) << log;
    const std::string big = read("run_chatty.log");
    EXPECT_EQ(big.substr(0, 4096), std::string(4096, 'x'));
    EXPECT_EQ(big.substr(4096), "\n[wopbridge: output truncated at 4096 bytes]\n");
    EXPECT_EQ(std::filesystem::status(dir_.file("run_out.log")).permissions() &
                  std::filesystem::perms::mask,
              std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
}

TEST_F(LocalRunStarterTest, NonZeroExitIsReportedAsFailure) {
    auto s = make({{"wf", {"/bin/sh", "-c", "exit 3"}, {}, 10000}});
    EXPECT_EQ(start_now(*s, request("run_b", "wf")).outcome, run_start_result::kind::started);
    auto fin = sink_.wait_for("run_b");
    ASSERT_TRUE(fin);
    EXPECT_FALSE(fin->succeeded);
    EXPECT_EQ(fin->exit_code, 3);
}

TEST_F(LocalRunStarterTest, MissingCommandIsARetryInPrepare) {
    auto s = make({{"wf", {"scripts/not-there.sh"}, {}, 10000}});
    auto r = s->prepare(request("run_c", "wf"));
    EXPECT_EQ(r.outcome, run_start_result::kind::retry);
    EXPECT_FALSE(r.reason.empty());
    std::ofstream(dir_.file("plain.sh")) << "#!/bin/sh\n";
    auto s2 = make({{"wf", {"./plain.sh"}, {}, 10000}}); // exists, not executable
    EXPECT_EQ(s2->prepare(request("run_c", "wf")).outcome, run_start_result::kind::retry);
    auto s3 = make({{"wf", {"no-such-program-wopbridge"}, {}, 10000}});
    EXPECT_EQ(s3->prepare(request("run_c", "wf")).outcome, run_start_result::kind::retry);
}

TEST_F(LocalRunStarterTest, RelativeCommandResolvesAgainstTheWorkingDirectory) {
    auto script = dir_.file("ok.sh");
    std::ofstream(script) << "#!/bin/sh\nexit 0\n";
    std::filesystem::permissions(script, std::filesystem::perms::owner_all);
    auto s = make({{"wf", {"./ok.sh"}, {}, 10000}});
    EXPECT_EQ(s->prepare(request("run_d", "wf")).outcome, run_start_result::kind::started);
    EXPECT_EQ(start_now(*s, request("run_d", "wf")).outcome, run_start_result::kind::started);
    auto fin = sink_.wait_for("run_d");
    ASSERT_TRUE(fin);
    EXPECT_TRUE(fin->succeeded);
}

TEST_F(LocalRunStarterTest, UnknownWorkflowIsPermanent) {
    auto s = make({{"wf", {}, {}, 10000}});
    EXPECT_EQ(s->prepare(request("run_e", "other")).outcome, run_start_result::kind::permanent);
    EXPECT_EQ(start_now(*s, request("run_e", "other")).outcome, run_start_result::kind::permanent);
    EXPECT_EQ(s->workflow_ids(), std::vector<std::string>{"wf"});
    EXPECT_FALSE(s->starts_before_commit());
}

TEST_F(LocalRunStarterTest, WorkflowWithoutCommandCompletesAtOnce) {
    auto s = make({{"noop", {}, {}, 10000}});
    auto r = start_now(*s, request("run_f", "noop"));
    EXPECT_EQ(r.outcome, run_start_result::kind::started);
    EXPECT_EQ(r.status_after, run_status::completed);
    ASSERT_EQ(r.follow_up_events.size(), 1u);
    EXPECT_EQ(r.follow_up_events[0].first, "run.completed");
    EXPECT_EQ(r.follow_up_events[0].second, "{}");
}

TEST_F(LocalRunStarterTest, WorkflowWithoutCommandReportsItsCompletionFromPrepare) {
    // So the engine commits run.completed with run.started (nothing can interrupt it).
    auto s = make({{"noop", {}, {}, 10000}});
    auto r = s->prepare(request("run_f2", "noop"));
    EXPECT_EQ(r.outcome, run_start_result::kind::started);
    EXPECT_EQ(r.status_after, run_status::completed);
    ASSERT_EQ(r.follow_up_events.size(), 1u);
    EXPECT_EQ(r.follow_up_events[0].first, "run.completed");
}

TEST_F(LocalRunStarterTest, TimeoutKillsTheCommandAndReportsFailure) {
    local_run_options o;
    o.kill_grace_ms = 200;
    // The trap ignores SIGTERM, so the SIGKILL escalation is exercised too.
    auto s = make({{"slow", {"/bin/sh", "-c", "trap '' TERM; while :; do read x || sleep 1; done"},
                    {}, 50}},
                  o);
    auto begin = std::chrono::steady_clock::now();
    EXPECT_EQ(start_now(*s, request("run_g", "slow")).outcome, run_start_result::kind::started);
    auto fin = sink_.wait_for("run_g");
    ASSERT_TRUE(fin);
    EXPECT_FALSE(fin->succeeded);
    EXPECT_EQ(fin->exit_code, 128 + SIGKILL);
    EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(5));
}

TEST_F(LocalRunStarterTest, StopWaitsForChildrenAndRefusesNewStarts) {
    local_run_options o;
    o.stop_wait_ms = 100;
    o.kill_grace_ms = 100;
    auto s = make({{"slow", {"/bin/sh", "-c", "sleep 30"}, {}, 60000}}, o);
    EXPECT_EQ(start_now(*s, request("run_h", "slow")).outcome, run_start_result::kind::started);
    s->stop();
    auto fin = sink_.wait_for("run_h", std::chrono::milliseconds(0));
    ASSERT_TRUE(fin); // reaped before stop() returned
    EXPECT_FALSE(fin->succeeded);
    EXPECT_EQ(s->prepare(request("run_i", "slow")).outcome, run_start_result::kind::retry);
}

} // namespace
} // namespace wopbridge
