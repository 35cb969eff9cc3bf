// bench-loadgen: an HTTP load generator for signed webhook ingest (raw sockets on epoll,
// pre-serialised keep-alive requests; see http_driver.hpp).
//
//   bench-loadgen search --url U --secret S [--kind webhook|slack] [--dup 0.5] [--p99-bound-ms 50]
//                 [--start-rate 500] [--max-rate 200000] [--step-seconds 5] [--half-seconds 10]
//                 [--probe-seconds 0]   (> 0: a closed-loop probe first; the search starts near it)
//   bench-loadgen fixed  --url U --secret S --rate R --seconds N [--capture FILE]
//                 [--reuse-existing N --existing-prefix P]
//   bench-loadgen max    --url U --secret S --seconds N [--rps-guess 60000]
//                 closed loop (like wrk): every connection sends again as soon as it is answered
//   bench-loadgen dump   --url U --secret S --count N --out FILE
//                 N pre-signed requests, each "<length>\n<raw HTTP/1.1 request>", for wrk (bench/wrk/)
//   common: [--connections 64] [--threads 1] [--timeout-ms 10000] [--settle-seconds 1]
//           [--idle-pids PID,PID --settle-max-seconds 30]  (wait for the servers to go idle first)
//   bench-loadgen selftest   checks the histogram's percentiles against exact ones (bench/run runs it)
//
// `search` steps the offered rate (doubling, then bisecting) to the highest rate whose p99 stays
// under the bound with (almost) no errors, then runs at half that rate for the latency figures.
// With --probe-seconds it first measures the closed-loop throughput T and starts at 0.9 T, growing
// by 1.25x instead of 2x, so it needs about three steps instead of eight.
// Output: one JSON object on stdout. Progress goes to stderr.

#include "http_driver.hpp"
#include "request_set.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <algorithm>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace wopbridge::bench;

namespace {

struct options {
    std::string mode;
    std::map<std::string, std::string> values;

    std::string str(const std::string& k, const std::string& def = "") const {
        auto it = values.find(k);
        return it == values.end() ? def : it->second;
    }
    double num(const std::string& k, double def) const {
        auto it = values.find(k);
        return it == values.end() ? def : std::atof(it->second.c_str());
    }
};

struct step_result {
    double rate = 0;
    load_result r;
    bool closed = false;
    int connections = 0;
    int threads = 1;
    bool pass = false;
};

double ms(std::uint64_t us) {
    return static_cast<double>(us) / 1000.0;
}

std::string step_json(const step_result& s) {
    const auto& r = s.r;
    double achieved = r.elapsed_s > 0 ? static_cast<double>(r.ok) / r.elapsed_s : 0;
    char buf[1024];
    std::snprintf(buf, sizeof buf,
                  "{\"mode\":\"%s\",\"offered_rps\":%.1f,\"achieved_rps\":%.1f,\"sent\":%llu,"
                  "\"ok\":%llu,\"errors\":%llu,\"status_5xx\":%llu,\"transport_errors\":%llu,"
                  "\"reconnects\":%llu,\"connections\":%d,\"threads\":%d,\"elapsed_s\":%.3f,"
                  "\"p50_ms\":%.3f,\"p90_ms\":%.3f,\"p99_ms\":%.3f,\"p999_ms\":%.3f,"
                  "\"max_ms\":%.3f,\"mean_ms\":%.3f,\"max_launch_lag_ms\":%.3f,\"cycled\":%s,"
                  "\"end_unix_ms\":%.3f,\"pass\":%s}",
                  s.closed ? "closed" : "open", s.rate, achieved,
                  static_cast<unsigned long long>(r.sent), static_cast<unsigned long long>(r.ok),
                  static_cast<unsigned long long>(r.errors),
                  static_cast<unsigned long long>(r.status_5xx),
                  static_cast<unsigned long long>(r.transport_errors),
                  static_cast<unsigned long long>(r.reconnects), s.connections, s.threads,
                  r.elapsed_s, ms(r.latency.percentile(0.50)), ms(r.latency.percentile(0.90)),
                  ms(r.latency.percentile(0.99)), ms(r.latency.percentile(0.999)),
                  ms(r.latency.max()), r.latency.mean() / 1000.0, ms(r.max_launch_lag_us),
                  r.cycled ? "true" : "false", r.end_wall_ms, s.pass ? "true" : "false");
    return buf;
}

request_set_options set_options(const options& o, std::uint32_t seed) {
    request_set_options ro;
    ro.kind = o.str("kind", "webhook") == "slack" ? request_kind::slack_event
                                                   : request_kind::standard_webhook;
    ro.secret = o.str("secret");
    ro.id_prefix = o.str("id-prefix", "msg_bench_") +
                   std::to_string(std::chrono::system_clock::now().time_since_epoch().count() %
                                  100000000) + "_" + std::to_string(seed) + "_";
    ro.duplicate_ratio = o.num("dup", 0);
    ro.reuse_existing = static_cast<std::uint64_t>(o.num("reuse-existing", 0));
    ro.existing_prefix = o.str("existing-prefix");
    ro.seed = seed;
    ro.to = parse_url(o.str("url"));
    return ro;
}

load_options driver_options(const options& o) {
    load_options lo;
    lo.to = parse_url(o.str("url"));
    lo.connections = static_cast<int>(o.num("connections", 64));
    lo.threads = static_cast<int>(o.num("threads", 1));
    lo.timeout_ms = static_cast<long>(o.num("timeout-ms", 10000));
    return lo;
}

// An open-loop step at `rate` for `seconds`.
step_result run_step(const options& o, double rate, double seconds, std::uint32_t seed,
                     const response_observer& observe = {}) {
    request_set set;
    auto count = static_cast<std::size_t>(std::max(1.0, std::round(rate * seconds)));
    set.build(set_options(o, seed), count);
    load_options lo = driver_options(o);
    lo.rate = rate;
    lo.count = count;
    lo.capture_bodies = static_cast<bool>(observe);
    step_result s;
    s.rate = rate;
    s.connections = lo.connections;
    s.threads = lo.threads;
    s.r = run_load(lo, set, observe);
    double bound_ms = o.num("p99-bound-ms", 50);
    double achieved = s.r.elapsed_s > 0 ? static_cast<double>(s.r.ok) / s.r.elapsed_s : 0;
    s.pass = ms(s.r.latency.percentile(0.99)) <= bound_ms &&
             static_cast<double>(s.r.errors) <= 0.001 * static_cast<double>(s.r.sent) &&
             achieved >= 0.9 * rate;
    std::fprintf(stderr, "  step %s\n", step_json(s).c_str());
    return s;
}

// A closed-loop run for `seconds` (every connection busy all the time, like wrk). The request set
// holds seconds x --rps-guess requests; past that, ids repeat ("cycled").
step_result run_closed(const options& o, double seconds, std::uint32_t seed) {
    request_set set;
    auto count = static_cast<std::size_t>(std::max(1000.0, seconds * o.num("rps-guess", 60000)));
    set.build(set_options(o, seed), count);
    load_options lo = driver_options(o);
    lo.rate = 0;
    lo.seconds = seconds;
    lo.cycle = true;
    step_result s;
    s.closed = true;
    s.connections = lo.connections;
    s.threads = lo.threads;
    s.r = run_load(lo, set);
    s.pass = s.r.ok > 0 && static_cast<double>(s.r.errors) <= 0.001 * static_cast<double>(s.r.sent);
    std::fprintf(stderr, "  closed %s\n", step_json(s).c_str());
    return s;
}

// CPU ticks (utime + stime) of the processes in --idle-pids, -1 when none is readable.
long long cpu_ticks(const std::string& pids) {
    long long total = -1;
    std::size_t at = 0;
    while (at < pids.size()) {
        auto comma = pids.find(',', at);
        std::string pid = pids.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
        at = comma == std::string::npos ? pids.size() : comma + 1;
        std::ifstream f("/proc/" + pid + "/stat");
        std::string line;
        if (!std::getline(f, line)) {
            continue;
        }
        // Fields after the ")" that closes the command name: state is field 3, utime 14, stime 15.
        auto close = line.rfind(')');
        if (close == std::string::npos) {
            continue;
        }
        std::istringstream rest(line.substr(close + 2));
        std::string field;
        long long utime = 0;
        long long stime = 0;
        for (int i = 3; i <= 15 && rest >> field; ++i) {
            if (i == 14) {
                utime = std::atoll(field.c_str());
            } else if (i == 15) {
                stime = std::atoll(field.c_str());
            }
        }
        total = (total < 0 ? 0 : total) + utime + stime;
    }
    return total;
}

// Between steps: at least --settle-seconds, then until the servers (--idle-pids) are idle, i.e.
// the bridge's delivery engine has worked off the previous step's runs, so every step starts
// from the same state. Bounded by --settle-max-seconds.
void settle(const options& o) {
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    std::this_thread::sleep_for(std::chrono::milliseconds(
        static_cast<long>(o.num("settle-seconds", 1) * 1000)));
    const std::string pids = o.str("idle-pids");
    if (pids.empty()) {
        return;
    }
    const auto until = start + std::chrono::milliseconds(
                                   static_cast<long>(o.num("settle-max-seconds", 30) * 1000));
    const double hz = static_cast<double>(sysconf(_SC_CLK_TCK));
    long long before = cpu_ticks(pids);
    while (before >= 0 && clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        long long after = cpu_ticks(pids);
        if (after < 0 || static_cast<double>(after - before) / hz < 0.3 * 0.05) {
            return; // under 5 % of one core over the last 300 ms
        }
        before = after;
    }
    if (before >= 0) {
        std::fprintf(stderr, "  (servers still busy after %.0f s; going on)\n",
                     o.num("settle-max-seconds", 30));
    }
}

int search(const options& o) {
    double rate = o.num("start-rate", 500);
    const double max_rate = o.num("max-rate", 200000);
    const double step_s = o.num("step-seconds", 5);
    const int max_steps = static_cast<int>(o.num("max-steps", 12));
    double growth = 2;
    double good = 0;
    double bad = 0;
    std::string steps;
    std::string probe = "null";
    std::uint32_t seed = 1;
    settle(o); // the previous scenario may still be delivering
    if (double probe_s = o.num("probe-seconds", 0); probe_s > 0) {
        auto p = run_closed(o, probe_s, seed++);
        probe = step_json(p);
        double achieved = p.r.elapsed_s > 0 ? static_cast<double>(p.r.ok) / p.r.elapsed_s : 0;
        if (achieved > 0) {
            rate = std::max(10.0, std::round(0.9 * achieved));
            growth = 1.25;
        }
        settle(o);
    }
    for (int i = 0; i < max_steps; ++i) {
        auto s = run_step(o, rate, step_s, seed++);
        steps += (steps.empty() ? "" : ",") + step_json(s);
        if (s.pass) {
            good = rate;
        } else {
            bad = rate;
        }
        settle(o);
        if (bad == 0) {
            if (rate >= max_rate) {
                break;
            }
            rate = std::min(max_rate, std::round(rate * growth));
        } else if (good == 0) {
            rate = std::round(rate / 2);
            if (rate < 10) {
                break;
            }
        } else {
            if (bad / good < o.num("precision", 1.15)) {
                break;
            }
            rate = std::round((good + bad) / 2);
        }
    }
    std::string half = "null";
    if (good > 0) {
        auto h = run_step(o, good / 2, o.num("half-seconds", 10), seed++);
        half = step_json(h);
    }
    std::printf("{\"max_rps\":%.1f,\"p99_bound_ms\":%.1f,\"probe\":%s,\"at_half\":%s,"
                "\"steps\":[%s]}\n",
                good, o.num("p99-bound-ms", 50), probe.c_str(), half.c_str(), steps.c_str());
    return good > 0 ? 0 : 1;
}

int max_mode(const options& o) {
    settle(o);
    auto s = run_closed(o, o.num("seconds", 5), 1);
    std::printf("%s\n", step_json(s).c_str());
    return s.r.ok > 0 ? 0 : 1;
}

// Pre-signed requests for wrk: "<length>\n<bytes>" per request (bench/wrk/signed.lua reads them).
int dump(const options& o) {
    auto count = static_cast<std::size_t>(o.num("count", 10000));
    request_set set;
    set.build(set_options(o, static_cast<std::uint32_t>(o.num("seed", 1))), count);
    std::FILE* f = std::fopen(o.str("out").c_str(), "wb");
    if (!f) {
        std::fprintf(stderr, "bench-loadgen: cannot write %s\n", o.str("out").c_str());
        return 1;
    }
    std::size_t bytes = 0;
    for (std::size_t i = 0; i < set.size(); ++i) {
        const auto& w = set[i].wire;
        std::fprintf(f, "%zu\n", w.size());
        std::fwrite(w.data(), 1, w.size(), f);
        bytes += w.size();
    }
    if (std::fclose(f) != 0) {
        return 1;
    }
    std::printf("{\"requests\":%zu,\"bytes\":%zu}\n", set.size(), bytes);
    return 0;
}

int fixed(const options& o) {
    std::ofstream capture;
    if (!o.str("capture").empty()) {
        capture.open(o.str("capture"));
    }
    response_observer observe;
    if (capture.is_open()) {
        observe = [&capture](std::size_t, double scheduled_wall_ms, const std::string& body) {
            auto at = body.find("\"runId\":\"");
            if (at == std::string::npos) {
                return;
            }
            at += 9;
            auto end = body.find('"', at);
            if (end == std::string::npos) {
                return;
            }
            char ts[64];
            std::snprintf(ts, sizeof ts, "%.3f", scheduled_wall_ms);
            capture << body.substr(at, end - at) << '\t' << ts << '\n';
        };
    }
    settle(o);
    auto s = run_step(o, o.num("rate", 100), o.num("seconds", 5), 1, observe);
    std::printf("%s\n", step_json(s).c_str());
    return s.r.errors == 0 ? 0 : 1;
}

// The recorder against exact order statistics of a heavy-tailed sample: every reported percentile
// must be within the histogram's resolution (1/64 relative, plus 1 us) above the exact value and
// never below it.
int selftest() {
    std::mt19937_64 rng(11);
    std::lognormal_distribution<double> dist(7.0, 1.5); // median ~1.1 ms, long tail
    latency_histogram h;
    std::vector<std::uint64_t> exact;
    for (int i = 0; i < 200000; ++i) {
        auto v = static_cast<std::uint64_t>(dist(rng));
        h.record(v);
        exact.push_back(v);
    }
    std::sort(exact.begin(), exact.end());
    int failures = 0;
    for (double q : {0.5, 0.9, 0.99, 0.999, 1.0}) {
        auto want = exact[static_cast<std::size_t>(
            std::clamp<double>(std::ceil(q * static_cast<double>(exact.size())), 1,
                               static_cast<double>(exact.size())) - 1)];
        auto got = h.percentile(q);
        bool ok = got >= want && static_cast<double>(got - want) <= want / 64.0 + 1;
        std::fprintf(stderr, "  p%g exact %llu us, histogram %llu us %s\n", q * 100,
                     static_cast<unsigned long long>(want), static_cast<unsigned long long>(got),
                     ok ? "ok" : "WRONG");
        failures += ok ? 0 : 1;
    }
    if (h.count() != exact.size() || h.max() != exact.back()) {
        ++failures;
    }
    std::printf("{\"selftest\":\"%s\"}\n", failures == 0 ? "ok" : "failed");
    return failures == 0 ? 0 : 1;
}

} // namespace

int main(int argc, char** argv) {
    if (argc >= 2 && std::string(argv[1]) == "selftest") {
        return selftest();
    }
    if (argc < 2) {
        std::fprintf(stderr, "usage: bench-loadgen search|fixed|max|dump --url URL --secret S [options]\n");
        return 2;
    }
    options o;
    o.mode = argv[1];
    for (int i = 2; i + 1 < argc; i += 2) {
        std::string k = argv[i];
        if (k.rfind("--", 0) != 0) {
            std::fprintf(stderr, "bench-loadgen: unexpected argument %s\n", argv[i]);
            return 2;
        }
        o.values[k.substr(2)] = argv[i + 1];
    }
    if (o.str("url").empty()) {
        std::fprintf(stderr, "bench-loadgen: --url is required\n");
        return 2;
    }
    if (parse_url(o.str("url")).host.empty()) {
        std::fprintf(stderr, "bench-loadgen: --url must be http://HOST:PORT/PATH\n");
        return 2;
    }
    int rc = 2;
    if (o.mode == "search") {
        rc = search(o);
    } else if (o.mode == "fixed") {
        rc = fixed(o);
    } else if (o.mode == "max") {
        rc = max_mode(o);
    } else if (o.mode == "dump") {
        rc = dump(o);
    } else {
        std::fprintf(stderr, "bench-loadgen: unknown mode %s\n", o.mode.c_str());
    }
    return rc;
}
