// SIGKILL of the real `wopbridge serve` in the delivery path: during a retry backoff, after an
// upstream run host accepted a start the bridge had not yet recorded, and while local workflow
// commands run. Nothing is lost, the retry schedule survives, and no run happens twice.
#include "support/bridge_reads.hpp"
#include "support/eventually.hpp"
#include "support/http_client.hpp"
#include "support/http_multi.hpp"
#include "support/idempotent_runs_host.hpp"
#include "support/serve_process.hpp"
#include "support/temp_dir.hpp"
#include "support/webhook_signer.hpp"

#include "core/clock.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace wopbridge::testing::crash_delivery_test {
namespace {

constexpr const char* secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
constexpr const char* api_key = "hk_crash";

millis wall_ms(std::chrono::system_clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

// The first start of each key creates the run on the host but is answered only after the bridge
// is dead: the bridge never records it.
std::optional<http_response> hold_first_start(const runs_host_call& c) {
    if (c.nth_for_key == 1) {
        http_response held;
        held.status = 0;
        held.delay = std::chrono::seconds(60);
        return held;
    }
    return std::nullopt;
}

class CrashDeliveryTest : public ::testing::Test {
protected:
    void write_config(const std::string& runs, const std::string& delivery) {
        std::ofstream out(dir_.file("wopbridge.yaml"));
        out << sqlite_serve_prelude(api_key)
            << "runs: " << runs << "\n"
            << "delivery: " << delivery << "\n"
            << "subscriptions:\n"
               "  - {id: orders, source: webhook, workflowId: wf-orders, signingSecret: \""
            << secret << "\"}\n";
    }

    bool start(serve_process& p) {
        return p.start(dir_.file("wopbridge.yaml"), dir_.file("serve.log"));
    }

    http_reply post(const serve_process& p, const std::string& id) {
        return perform(signed_ingest_call(p.url(), "orders", secret, id, R"({"n":")" + id + "\"}"));
    }

    std::optional<delivery_row> delivery(const serve_process& p, const std::string& id) {
        bool ok = false;
        for (auto& d : read_all_deliveries(p.url(), api_key, "orders", ok)) {
            if (d.delivery_id == id) {
                return d;
            }
        }
        return std::nullopt;
    }

    // Waits until the delivery reads "delivered"; `d` holds its last reading.
    bool becomes_delivered(const serve_process& p, const std::string& id,
                           std::optional<delivery_row>& d,
                           std::chrono::milliseconds limit = std::chrono::seconds(15)) {
        return eventually([&] {
            d = delivery(p, id);
            return d && d->status == "delivered";
        }, limit);
    }

    temp_dir dir_;
};

TEST_F(CrashDeliveryTest, SigkillDuringRetryBackoffResumesAttemptCountAndDueTime) {
    // The run host fails the first two starts of every key, then accepts.
    idempotent_runs_host host([](const runs_host_call& c) -> std::optional<http_response> {
        if (c.nth_for_key <= 2) {
            return http_response{503, {{"Content-Type", "application/json"}},
                                 R"({"error":"unavailable"})"};
        }
        return std::nullopt;
    });
    write_config("{upstream: {baseUrl: \"" + host.base_url() + "\", timeout: 5s}}",
                 "{retryPolicy: {maxAttempts: 6, backoff: fixed, baseDelay: 4s, jitter: false}, "
                 "lease: 3s, attemptTimeout: 1s, breaker: {failureThreshold: 100}}");

    serve_process serve;
    ASSERT_TRUE(start(serve)) << serve.error;
    auto accepted = post(serve, fresh_webhook_id());
    ASSERT_EQ(accepted.status, 202) << accepted.body;
    const std::string delivery_id = json_string_field(accepted.body, "deliveryId");
    const std::string run_id = json_string_field(accepted.body, "runId");

    std::optional<delivery_row> before;
    // Two kills: one in each backoff wait.
    for (int attempt = 1; attempt <= 2; ++attempt) {
        ASSERT_TRUE(eventually([&] {
            before = delivery(serve, delivery_id);
            return before && before->attempts == attempt && before->status == "pending";
        })) << "attempt " << attempt << " not recorded";
        millis due = 0;
        ASSERT_TRUE(parse_iso8601(before->due_at, due)) << before->due_at;
        serve.signal(SIGKILL);
        EXPECT_EQ(serve.wait_exit(), -1);
        const millis killed_at = wall_ms(std::chrono::system_clock::now());
        ASSERT_LT(killed_at, due) << "the kill did not land inside the backoff (machine too slow)";
        ASSERT_EQ(host.calls_for(delivery_id).size(), static_cast<std::size_t>(attempt));

        ASSERT_TRUE(start(serve)) << serve.error;
        auto after = delivery(serve, delivery_id);
        const millis read_at = wall_ms(std::chrono::system_clock::now());
        ASSERT_TRUE(after.has_value());
        if (read_at + 5 < due) {
            // Read inside the backoff: the schedule survived the kill (same attempt count, same
            // due time, still pending).
            EXPECT_EQ(after->attempts, attempt);
            EXPECT_EQ(after->due_at, before->due_at);
            EXPECT_EQ(after->status, "pending");
        } else {
            // A restart slower than the rest of the backoff (a loaded sanitizer build): the next
            // attempt may be made already; the count went on from where it was, never reset.
            EXPECT_GE(after->attempts, attempt);
        }

        // The next attempt waits for the due time: it is neither lost nor sent early.
        ASSERT_TRUE(eventually([&] { return host.calls_for(delivery_id).size() > attempt; },
                               std::chrono::seconds(10)));
        const auto next = host.calls_for(delivery_id)[attempt];
        EXPECT_GE(wall_ms(next.at), due - 5) << "retried before its due time";
    }

    std::optional<delivery_row> done;
    ASSERT_TRUE(becomes_delivered(serve, delivery_id, done, std::chrono::seconds(10)));
    EXPECT_EQ(done->attempts, 3);
    EXPECT_EQ(host.calls_for(delivery_id).size(), 3u) << "an attempt was repeated";
    EXPECT_EQ(host.runs_created(), 1);
    auto run = read_run(serve.url(), api_key, run_id);
    EXPECT_EQ(run.http_status, 200);
    EXPECT_EQ(run.upstream_run_id, "up_run_1");
    serve.signal(SIGTERM);
    EXPECT_EQ(serve.wait_exit(), 0);
}

TEST_F(CrashDeliveryTest, SigkillAfterTheUpstreamAcceptedAStartMakesOneUpstreamRun) {
    idempotent_runs_host host(hold_first_start);
    write_config("{upstream: {baseUrl: \"" + host.base_url() + "\", timeout: 30s}}",
                 "{retryPolicy: {maxAttempts: 5, backoff: fixed, baseDelay: 100ms, "
                 "jitter: false}, lease: 2s, attemptTimeout: 1m}");

    serve_process serve;
    ASSERT_TRUE(start(serve)) << serve.error;
    constexpr int events = 5;
    std::vector<std::pair<std::string, std::string>> acked; // deliveryId, runId
    for (int i = 0; i < events; ++i) {
        auto r = post(serve, fresh_webhook_id());
        ASSERT_EQ(r.status, 202) << r.body;
        acked.emplace_back(json_string_field(r.body, "deliveryId"),
                           json_string_field(r.body, "runId"));
    }
    ASSERT_TRUE(eventually([&] { return host.runs_created() == events; }));
    serve.signal(SIGKILL);
    EXPECT_EQ(serve.wait_exit(), -1);

    serve_process again;
    ASSERT_TRUE(start(again)) << again.error;
    for (const auto& [delivery_id, run_id] : acked) {
        std::optional<delivery_row> d;
        ASSERT_TRUE(becomes_delivered(again, delivery_id, d)) << delivery_id;
        // The restart re-sent the start with the same Idempotency-Key and got the same run back.
        auto calls = host.calls_for(delivery_id);
        ASSERT_EQ(calls.size(), 2u);
        EXPECT_EQ(calls[1].nth_for_key, 2);
        auto run = read_run(again.url(), api_key, run_id);
        EXPECT_EQ(run.http_status, 200);
        EXPECT_EQ(run.upstream_run_id, host.runs_by_key().at(delivery_id));
        EXPECT_EQ(d->run_id, run_id);
    }
    EXPECT_EQ(host.runs_created(), events) << "a start made a second upstream run";
    again.signal(SIGTERM);
    EXPECT_EQ(again.wait_exit(), 0);
}

// SQLite: one process serves the store, so the claims a SIGKILLed one held are released at the
// next start instead of after their (here 60 s) leases; a second serve meanwhile is refused.
TEST_F(CrashDeliveryTest, ARestartAfterSigkillReleasesTheDeadProcesssClaimsAtOnce) {
    idempotent_runs_host host(hold_first_start);
    write_config("{upstream: {baseUrl: \"" + host.base_url() + "\", timeout: 90s}}",
                 "{retryPolicy: {maxAttempts: 5, backoff: fixed, baseDelay: 100ms, "
                 "jitter: false}, lease: 60s, attemptTimeout: 80s}");
    serve_process serve;
    ASSERT_TRUE(start(serve)) << serve.error;
    auto r = post(serve, fresh_webhook_id());
    ASSERT_EQ(r.status, 202) << r.body;
    const std::string delivery_id = json_string_field(r.body, "deliveryId");
    ASSERT_TRUE(eventually([&] { return host.runs_created() == 1; }));

    serve_process second;
    EXPECT_FALSE(start(second));
    EXPECT_NE(second.error.find("is in use by another wopbridge serve (pid " +
                                std::to_string(serve.pid()) + ")"),
              std::string::npos)
        << second.error;

    serve.signal(SIGKILL);
    EXPECT_EQ(serve.wait_exit(), -1);
    const auto restarted = std::chrono::steady_clock::now();
    serve_process again;
    ASSERT_TRUE(start(again)) << again.error;
    std::optional<delivery_row> d;
    ASSERT_TRUE(becomes_delivered(again, delivery_id, d, std::chrono::seconds(20)))
        << read_text_file(dir_.file("serve.log"));
    EXPECT_LT(std::chrono::steady_clock::now() - restarted, std::chrono::seconds(30));
    EXPECT_NE(read_text_file(dir_.file("serve.log")).find("\"event\":\"store.claims_released\""),
              std::string::npos);
    EXPECT_EQ(host.runs_created(), 1);
    again.signal(SIGTERM);
    EXPECT_EQ(again.wait_exit(), 0);
}

// A bulk replay job is stored with its selection and progress: SIGKILL mid-job, and the restart
// resumes it where it stopped; its status (read from the store) ends `completed`, and each dead
// letter was replayed into exactly one delivery and one upstream run.
TEST_F(CrashDeliveryTest, SigkillMidBulkReplayResumesTheJobAfterRestartReplayingEachOnce) {
    std::atomic<bool> failing{true};
    idempotent_runs_host host([&](const runs_host_call&) -> std::optional<http_response> {
        if (failing.load()) {
            return http_response{503, {{"Content-Type", "application/json"}},
                                 R"({"error":"unavailable"})"};
        }
        return std::nullopt;
    });
    write_config("{upstream: {baseUrl: \"" + host.base_url() + "\", timeout: 5s}}",
                 "{retryPolicy: {maxAttempts: 1}, lease: 60s, attemptTimeout: 5s, "
                 "breaker: {failureThreshold: 1000}}");
    serve_process serve;
    ASSERT_TRUE(start(serve)) << serve.error;
    auto call = [&](const serve_process& p, const std::string& method, const std::string& path,
                    const std::string& body = {}) {
        http_call c;
        c.method = method;
        c.url = p.url() + path;
        c.headers = {{"authorization", std::string("Bearer ") + api_key},
                     {"content-type", "application/json"}};
        c.body = body;
        return perform(c);
    };
    auto activate = [&](const serve_process& p) {
        return call(p, "PATCH", "/v1/trigger-subscriptions/orders", R"({"state":"active"})")
            .status;
    };
    // Each exhausted delivery dead-letters the subscription too: re-activated before the next.
    constexpr int dead = 12;
    std::set<std::string> originals;
    for (int i = 0; i < dead; ++i) {
        auto r = post(serve, fresh_webhook_id());
        ASSERT_EQ(r.status, 202) << r.body;
        const std::string id = json_string_field(r.body, "deliveryId");
        originals.insert(id);
        ASSERT_TRUE(eventually([&] {
            auto d = delivery(serve, id);
            return d && d->status == "dead_lettered";
        })) << id;
        ASSERT_EQ(activate(serve), 200);
    }
    failing = false;

    auto bulk = call(serve, "POST", "/v1/trigger-subscriptions/orders/dead-letters/replay",
                     R"({"all":true,"rate":4})");
    ASSERT_EQ(bulk.status, 202) << bulk.body;
    const std::string job = json_string_field(bulk.body, "jobId");
    auto job_field = [&](const serve_process& p, const std::string& name) -> std::string {
        auto r = call(p, "GET", "/v1/replay-jobs/" + job);
        if (r.status != 200) {
            return {};
        }
        auto pos = r.body.find("\"" + name + "\":");
        if (pos == std::string::npos) {
            return {};
        }
        pos += name.size() + 3;
        auto end = r.body.find_first_of(",}", pos);
        std::string v = r.body.substr(pos, end - pos);
        if (!v.empty() && v.front() == '"') {
            v = v.substr(1, v.size() - 2);
        }
        return v;
    };
    ASSERT_TRUE(eventually([&] {
        auto n = job_field(serve, "replayed");
        return !n.empty() && std::stoi(n) >= 3;
    })) << read_text_file(dir_.file("serve.log"));
    serve.signal(SIGKILL);
    EXPECT_EQ(serve.wait_exit(), -1);
    const int before_kill = host.runs_created();
    ASSERT_LT(before_kill, dead) << "the job finished before the kill (machine too slow?)";

    serve_process again;
    ASSERT_TRUE(start(again)) << again.error;
    ASSERT_TRUE(eventually([&] { return job_field(again, "state") == "completed"; },
                           std::chrono::seconds(30)))
        << read_text_file(dir_.file("serve.log"));
    EXPECT_EQ(job_field(again, "total"), std::to_string(dead));
    EXPECT_EQ(job_field(again, "replayed"), std::to_string(dead));
    EXPECT_EQ(job_field(again, "delivered"), std::to_string(dead)); // the last item too
    EXPECT_EQ(job_field(again, "failed"), "0");
    EXPECT_FALSE(job_field(again, "finishedAt").empty());
    EXPECT_NE(read_text_file(dir_.file("serve.log")).find("\"event\":\"replay_job.resumed\""),
              std::string::npos);

    // One replay delivery per dead letter (dedup key replay:<attemptEventId>), each delivered into
    // one upstream run.
    std::map<std::string, int> replays_by_key;
    ASSERT_TRUE(eventually([&] {
        bool ok = false;
        replays_by_key.clear();
        int delivered = 0;
        for (const auto& d : read_all_deliveries(again.url(), api_key, "orders", ok)) {
            if (originals.count(d.delivery_id) == 0) {
                ++replays_by_key[d.dedup_key];
                delivered += d.status == "delivered" ? 1 : 0;
            }
        }
        return ok && delivered == dead;
    })) << replays_by_key.size();
    EXPECT_EQ(replays_by_key.size(), static_cast<std::size_t>(dead));
    for (const auto& [key, n] : replays_by_key) {
        EXPECT_EQ(n, 1) << key;
    }
    EXPECT_EQ(host.runs_created(), dead) << "a dead letter was replayed into a second run";
    again.signal(SIGTERM);
    EXPECT_EQ(again.wait_exit(), 0);
}

TEST_F(CrashDeliveryTest, SigkillWhileLocalCommandsRunNeverRunsOneTwice) {
    const std::uint64_t seed = [] {
        const char* s = std::getenv("WOPBRIDGE_TEST_SEED");
        return s ? std::strtoull(s, nullptr, 10) : std::uint64_t{std::random_device{}()};
    }();
    std::printf("[ seed     ] WOPBRIDGE_TEST_SEED=%llu\n", static_cast<unsigned long long>(seed));
    std::mt19937_64 rng(seed);

    // Every execution of the workflow appends its run id: the ledger of what really ran.
    {
        std::ofstream script(dir_.file("run.sh"));
        script << "#!/bin/sh\ncat >/dev/null\necho \"$WOPBRIDGE_RUN_ID\" >> runs.log\nsleep 0.2\n";
    }
    ::chmod(dir_.file("run.sh").c_str(), 0755);
    // A small concurrency starts the runs in waves, so the kill finds some runs completed, some
    // running and some not started yet (with the default, all 120 start in one batch).
    write_config("{local: {workflows: [{id: wf-orders, command: [./run.sh]}]}}",
                 "{retryPolicy: {baseDelay: 50ms, maxDelay: 200ms}, lease: 2s, "
                 "attemptTimeout: 5s, concurrency: 8, batchSize: 8}");
    auto executions = [&] {
        std::map<std::string, int> n;
        std::istringstream in(read_text_file(dir_.file("runs.log")));
        for (std::string line; std::getline(in, line);) {
            if (!line.empty()) {
                ++n[line];
            }
        }
        return n;
    };
    auto executed_total = [&] {
        int total = 0;
        for (const auto& [_, c] : executions()) {
            total += c;
        }
        return total;
    };

    constexpr int events = 120;
    std::map<std::string, std::string> acked; // runId -> deliveryId
    serve_process serve;
    ASSERT_TRUE(start(serve)) << serve.error;
    std::vector<http_call> calls;
    for (int i = 0; i < events; ++i) {
        std::string id = fresh_webhook_id();
        calls.push_back(signed_ingest_call(serve.url(), "orders", secret, id, R"({"n":1})"));
    }
    for (const auto& r : perform_all(calls, 32)) {
        ASSERT_EQ(r.status, 202) << r.body;
        acked[json_string_field(r.body, "runId")] = json_string_field(r.body, "deliveryId");
    }
    // Kill while commands are starting and running, at a seeded point.
    const int kill_after = std::uniform_int_distribution<int>(1, events / 2)(rng);
    ASSERT_TRUE(eventually([&] { return executed_total() >= kill_after; }));
    serve.signal(SIGKILL);
    EXPECT_EQ(serve.wait_exit(), -1);
    std::printf("[ kill     ] after %d executions\n", kill_after);

    serve_process again;
    ASSERT_TRUE(start(again)) << again.error;
    bool all_final = eventually(
        [&] {
            bool ok = false;
            auto rows = read_all_deliveries(again.url(), api_key, "orders", ok);
            if (!ok || rows.size() != acked.size()) {
                return false;
            }
            for (const auto& d : rows) {
                if (d.status != "delivered") {
                    return false;
                }
                auto run = read_run(again.url(), api_key, d.run_id);
                if (run.status != "completed" && run.status != "failed") {
                    return false;
                }
            }
            return true;
        },
        std::chrono::seconds(30));
    ASSERT_TRUE(all_final);

    // Every delivery started its run at most once; runs that completed ran exactly once; runs the
    // kill interrupted were failed by the restart, never started again.
    const auto ran = executions();
    int completed = 0;
    int interrupted = 0;
    for (const auto& [run_id, _] : acked) {
        auto run = read_run(again.url(), api_key, run_id);
        const int n = ran.count(run_id) ? ran.at(run_id) : 0;
        EXPECT_LE(n, 1) << "run " << run_id << " executed " << n << " times";
        if (run.status == "completed") {
            ++completed;
            EXPECT_EQ(n, 1) << run_id;
        } else {
            ++interrupted;
        }
    }
    for (const auto& [run_id, n] : ran) {
        EXPECT_TRUE(acked.count(run_id)) << "an execution of an unknown run " << run_id;
    }
    std::printf("[ runs     ] %d completed, %d interrupted\n", completed, interrupted);
    EXPECT_GT(completed, 0);
    again.signal(SIGTERM);
    EXPECT_EQ(again.wait_exit(), 0);
}

} // namespace
} // namespace wopbridge::testing::crash_delivery_test
