#include "core/log.hpp"

#include "core/clock.hpp"

#include <boost/json/serialize.hpp>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>

namespace wopbridge {
namespace {

int rank(std::string_view level) {
    if (level == "trace") {
        return 0;
    }
    if (level == "debug") {
        return 1;
    }
    if (level == "warn") {
        return 3;
    }
    if (level == "error") {
        return 4;
    }
    return 2;
}

std::atomic<int> threshold{2};
std::mutex write_mu;

} // namespace

void set_log_level(std::string_view level) { threshold.store(rank(level)); }

bool log_enabled(std::string_view level) { return rank(level) >= threshold.load(); }

void log_line(std::string_view level, std::string_view event, boost::json::object fields) {
    if (!log_enabled(level)) {
        return;
    }
    boost::json::object line;
    line["ts"] = format_iso8601(system_clock_source{}.now_ms());
    line["level"] = level;
    line["event"] = event;
    for (auto& kv : fields) {
        line[kv.key()] = std::move(kv.value());
    }
    std::string text = boost::json::serialize(line);
    text.push_back('\n');
    std::lock_guard lock(write_mu);
    std::fwrite(text.data(), 1, text.size(), stderr);
    std::fflush(stderr);
}

} // namespace wopbridge
