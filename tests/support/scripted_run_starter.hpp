#pragma once
// A small real run starter for bridge tests: a fixed set of workflows, each told how its next starts
// go (start and complete at once, start and keep running, transient failure, permanent failure).
// Answers synchronously; counts prepare/start calls. Either commit order can be chosen.

#include "runs/run_starter.hpp"

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace wopbridge::testing {

class scripted_run_starter final : public run_starter {
public:
    enum class behaviour { complete, keep_running, transient, permanent };

    explicit scripted_run_starter(std::vector<std::string> workflows, bool before_commit = false);

    void set_behaviour(const std::string& workflow, behaviour b, millis retry_after_ms = 0);

    run_start_result prepare(const run_start_request& req) override;
    void start(const run_start_request& req, run_start_callback done) override;
    bool starts_before_commit() const noexcept override { return before_commit_; }
    void set_lifecycle_sink(run_lifecycle_sink* sink) override { sink_ = sink; }
    void stop() override {}
    std::vector<std::string> workflow_ids() const override { return workflows_; }

    run_lifecycle_sink* sink() const { return sink_; }
    int prepares() const { return prepares_.load(); }
    int starts() const { return starts_.load(); }

private:
    run_start_result outcome_for(const run_start_request& req);

    std::vector<std::string> workflows_;
    bool before_commit_;
    std::mutex mutex_;
    std::map<std::string, std::pair<behaviour, millis>> behaviours_;
    run_lifecycle_sink* sink_ = nullptr;
    std::atomic<int> prepares_{0};
    std::atomic<int> starts_{0};
};

} // namespace wopbridge::testing
