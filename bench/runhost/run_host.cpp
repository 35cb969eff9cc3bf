// bench-runhost: a stand-in OpenWOP run host for the benchmarks. POST /v1/runs answers
// 201 {"runId":...}; with --fail-ratio p it answers 503 to that share of start attempts (drawn
// per request, retries included), which is the retry storm of scenario 5.
// A repeated Idempotency-Key that already started gets the same run id (like a real host).
// GET /stats answers {"requests","started","failed","distinct_started"}. Same Beast stack as the
// bridge (bridge/src/http/server.hpp).
//
//   bench-runhost [--fail-ratio 0.5] [--threads 1]   prints {"port":N} once listening

#include "http/server.hpp"

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <random>
#include <string>
#include <unordered_map>

namespace {

using namespace wopbridge::http;

class run_host final : public request_handler {
public:
    explicit run_host(double fail_ratio) : fail_ratio_(fail_ratio) {}

    std::size_t body_limit(std::string_view, std::string_view) const override { return 1 << 20; }

    void handle(http_request req, std::shared_ptr<response_sink> sink) override {
        if (req.method == "GET" && req.path == "/stats") {
            std::lock_guard lock(mu_);
            char buf[200];
            std::snprintf(buf, sizeof buf,
                          "{\"requests\":%llu,\"started\":%llu,\"failed\":%llu,"
                          "\"distinct_started\":%zu}",
                          static_cast<unsigned long long>(requests_),
                          static_cast<unsigned long long>(started_),
                          static_cast<unsigned long long>(failed_), runs_.size());
            sink->send(http_response::json(200, buf));
            return;
        }
        if (req.method != "POST" || req.path != "/v1/runs") {
            sink->send(http_response::json(404, R"({"error":"not_found"})"));
            return;
        }
        std::string key(req.header("idempotency-key").value_or(""));
        std::string run_id;
        {
            std::lock_guard lock(mu_);
            ++requests_;
            auto it = key.empty() ? runs_.end() : runs_.find(key);
            if (it != runs_.end()) {
                run_id = it->second;
            } else if (coin_(rng_) < fail_ratio_) {
                ++failed_;
            } else {
                run_id = "run_host_" + std::to_string(++started_);
                if (!key.empty()) {
                    runs_.emplace(key, run_id);
                }
            }
        }
        if (run_id.empty()) {
            auto res = http_response::json(503, R"({"error":"unavailable","message":"try later"})");
            sink->send(std::move(res));
            return;
        }
        sink->send(http_response::json(201, "{\"runId\":\"" + run_id + "\",\"status\":\"running\"}"));
    }
    void begin_shutdown() override {}

private:
    double fail_ratio_;
    std::mutex mu_;
    std::mt19937_64 rng_{42};
    std::uniform_real_distribution<double> coin_{0.0, 1.0};
    std::unordered_map<std::string, std::string> runs_;
    unsigned long long requests_ = 0;
    unsigned long long started_ = 0;
    unsigned long long failed_ = 0;
};

} // namespace

int main(int argc, char** argv) {
    server_options so;
    so.host = "127.0.0.1";
    so.port = 0;
    so.threads = 1;
    double fail_ratio = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string k = argv[i];
        if (k == "--fail-ratio") {
            fail_ratio = std::atof(argv[i + 1]);
        } else if (k == "--threads") {
            so.threads = std::atoi(argv[i + 1]);
        }
    }
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);

    run_host handler(fail_ratio);
    server srv(so);
    if (auto r = srv.start(handler); !r) {
        std::fprintf(stderr, "bench-runhost: cannot listen\n");
        return 1;
    }
    std::printf("{\"port\":%u}\n", static_cast<unsigned>(srv.port()));
    std::fflush(stdout);
    int sig = 0;
    sigwait(&signals, &sig);
    srv.stop(std::chrono::milliseconds(2000));
    return 0;
}
