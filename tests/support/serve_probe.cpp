#include "support/serve_probe.hpp"

#include "support/eventually.hpp"
#include "support/http_client.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <regex>
#include <set>
#include <sstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace wopbridge::testing {
namespace json = boost::json;

namespace {

struct run_log {
    std::vector<json::object> events;
    bool complete = false;
};

} // namespace

std::vector<delivery_row> serve_probe::deliveries(const std::string& subscription_id) const {
    // Every page: a subscription with more than one page of deliveries is checked whole.
    bool ok = false;
    auto rows = read_all_deliveries(base_url_, api_key_, subscription_id, ok);
    if (!ok) {
        // An unreadable list must not pass for an empty one.
        ADD_FAILURE() << "deliveries of " << subscription_id << " could not be read";
        return {};
    }
    std::reverse(rows.begin(), rows.end()); // the pages are newest first
    return rows;
}

std::string serve_probe::subscription_state(const std::string& subscription_id) const {
    http_call c;
    c.url = base_url_ + "/v1/trigger-subscriptions/" + subscription_id;
    c.headers = {{"authorization", "Bearer " + api_key_}};
    auto r = perform(c);
    boost::system::error_code ec;
    auto v = json::parse(r.body, ec);
    if (r.status != 200 || ec || !v.is_object()) {
        return {};
    }
    const auto* state = v.as_object().at("subscription").as_object().if_contains("state");
    return state && state->is_string() ? std::string(state->as_string()) : std::string();
}

long serve_probe::ingest_count(const std::string& subscription_id,
                               const std::string& outcome) const {
    http_call c;
    c.url = base_url_ + "/metrics";
    c.headers = {{"authorization", "Bearer " + api_key_}}; // per-subscription series need a key
    auto r = perform(c);
    std::istringstream lines(r.body);
    std::string line;
    const std::string sub_label = "subscription=\"" + subscription_id + "\"";
    const std::string outcome_label = "outcome=\"" + outcome + "\"";
    while (std::getline(lines, line)) {
        if (line.rfind("wopbridge_ingests_total{", 0) == 0 &&
            line.find(sub_label) != std::string::npos &&
            line.find(outcome_label) != std::string::npos) {
            return std::stol(line.substr(line.rfind(' ') + 1));
        }
    }
    return 0;
}

namespace {

// Reads the run's whole log through the poll route until it is complete or the deadline passes.
run_log read_run_log(const std::string& base_url, const std::string& api_key,
                     const std::string& run_id, bool until_complete) {
    run_log log;
    std::string last;
    // Each step is one long poll (up to 1 s): done when the run is complete (or has started, when
    // that is all the caller needs); an unreadable answer is simply polled again.
    eventually(
        [&] {
            http_call c;
            c.url = base_url + "/v1/runs/" + run_id + "/events/poll?timeout=1" +
                    (last.empty() ? "" : "&lastSequence=" + last);
            c.headers = {{"authorization", "Bearer " + api_key}};
            auto r = perform(c);
            boost::system::error_code ec;
            auto v = json::parse(r.body, ec);
            if (r.status != 200 || ec || !v.is_object()) {
                return false;
            }
            for (const auto& e : v.at("events").as_array()) {
                log.events.push_back(e.as_object());
                last = std::to_string(e.at("sequence").to_number<std::int64_t>());
            }
            log.complete = v.at("isComplete").as_bool();
            bool started = false;
            for (const auto& e : log.events) {
                started = started || e.at("type") == "run.started";
            }
            return log.complete || (!until_complete && started);
        },
        std::chrono::seconds(15));
    return log;
}

} // namespace

::testing::AssertionResult
serve_probe::one_start_caused_by_its_attempt(const std::string& run_id) const {
    run_log log = read_run_log(base_url_, api_key_, run_id, true);
    int started = 0;
    std::string causation;
    std::set<std::string> delivered_attempts;
    std::string types;
    for (const auto& e : log.events) {
        const std::string type(e.at("type").as_string());
        types += type + " ";
        if (type == "run.started") {
            ++started;
            if (const auto* c = e.if_contains("causationId"); c && c->is_string()) {
                causation = std::string(c->as_string());
            }
        }
        if (type == "trigger.delivery.attempted" &&
            e.at("payload").as_object().at("outcome") == "delivered") {
            delivered_attempts.insert(std::string(e.at("eventId").as_string()));
        }
    }
    if (started != 1) {
        return ::testing::AssertionFailure()
               << "run " << run_id << " has " << started << " run.started events: " << types;
    }
    if (delivered_attempts.size() != 1 || causation != *delivered_attempts.begin()) {
        return ::testing::AssertionFailure()
               << "run " << run_id << ": causationId '" << causation
               << "' is not the eventId of its one delivered attempt (" << delivered_attempts.size()
               << " delivered attempts): " << types;
    }
    return ::testing::AssertionSuccess();
}

::testing::AssertionResult serve_probe::runs_started(const std::string& subscription_id,
                                                     std::size_t count,
                                                     std::vector<std::string>* run_ids) const {
    std::vector<delivery_row> rows;
    const bool settled = eventually([&] {
        rows = deliveries(subscription_id);
        if (rows.size() != count) {
            return false;
        }
        for (const auto& r : rows) {
            if (r.status != "delivered" || r.run_id.empty()) {
                return false;
            }
        }
        return true;
    });
    if (!settled) {
        std::ostringstream why;
        why << subscription_id << ": expected " << count << " delivered deliveries, have "
            << rows.size() << ":";
        for (const auto& r : rows) {
            why << " " << r.delivery_id << "/" << r.status << "/" << r.run_id;
        }
        return ::testing::AssertionFailure() << why.str();
    }
    std::set<std::string> distinct;
    for (const auto& r : rows) {
        if (!distinct.insert(r.run_id).second) {
            return ::testing::AssertionFailure() << "run " << r.run_id << " is shared";
        }
        if (auto ok = one_start_caused_by_its_attempt(r.run_id); !ok) {
            return ok;
        }
        if (run_ids != nullptr) {
            run_ids->push_back(r.run_id);
        }
    }
    if (auto state = subscription_state(subscription_id); state != "active") {
        return ::testing::AssertionFailure() << subscription_id << " is '" << state << "'";
    }
    return ::testing::AssertionSuccess();
}

::testing::AssertionResult serve_probe::nothing_started(const std::string& subscription_id,
                                                        std::size_t count) const {
    auto rows = deliveries(subscription_id);
    if (rows.size() != count) {
        return ::testing::AssertionFailure()
               << subscription_id << ": " << rows.size() << " deliveries, expected " << count;
    }
    if (auto state = subscription_state(subscription_id); state != "active") {
        return ::testing::AssertionFailure() << subscription_id << " is '" << state << "'";
    }
    return ::testing::AssertionSuccess();
}

bool serve_probe::run_finished(const std::string& run_id) const {
    return read_run_log(base_url_, api_key_, run_id, true).complete;
}

std::string probe_config_prelude(const std::string& dir, const std::string& public_url) {
    return "server: {listen: \"127.0.0.1:0\", publicUrl: \"" + public_url +
           "\", maxBodyBytes: 10485760}\n"
           "auth:\n"
           "  apiKeys:\n"
           "    - {key: hk_probe, tenant: default, scopes: [webhooks:manage, runs:read]}\n"
           "store: {sqlite: {path: \"" +
           dir + "/bridge.db\"}}\n"
                 "hostKeyFile: \"" +
           dir + "/host.key\"\n";
}

std::string capturing_workflow_yaml(const std::string& workflow_id,
                                    const std::string& events_dir) {
    return "      - id: " + workflow_id +
           "\n"
           "        command: [sh, -c, 'cat > \"$EVENT_DIR/$WOPBRIDGE_RUN_ID.json\"']\n"
           "        env: {EVENT_DIR: \"" +
           events_dir + "\"}\n";
}

} // namespace wopbridge::testing
