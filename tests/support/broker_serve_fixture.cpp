#include "support/broker_serve_fixture.hpp"

#include "support/eventually.hpp"
#include "support/http_client.hpp"
#include "support/http_test_server.hpp"
#include "support/postgres_server.hpp"

#include <csignal>
#include <fcntl.h>
#include <set>
#include <unistd.h>

namespace wopbridge::testing {

namespace json = boost::json;

void broker_serve_fixture::write_host_key(const std::string& key) {
    const int fd = ::open(dir_.file("host.key").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, key.data(), key.size()), static_cast<ssize_t>(key.size()));
    ::close(fd);
}

std::string broker_serve_fixture::config_head(const std::string& runs,
                                              const std::string& store) const {
    std::string head;
    if (store.empty()) {
        head = sqlite_serve_prelude(api_key_);
    } else {
        head = "server: {listen: \"127.0.0.1:0\"}\n"
               "auth:\n"
               "  apiKeys:\n"
               "    - {key: " +
               api_key_ + ", tenant: default, scopes: [webhooks:manage, runs:read]}\n" + store +
               "hostKeyFile: host.key\n";
    }
    return head + runs +
           "delivery:\n"
           "  retryPolicy: {maxAttempts: 3, backoff: none}\n"
           "  lease: 2s\n"
           "  breaker: {failureThreshold: 100}\n"
           "deadLetter: {maxPageSize: 1000}\n"
           "connectors:\n";
}

std::string broker_serve_fixture::refusing_upstream_runs(fake_runs_host& runs_host, int refusals) {
    for (int i = 0; i < refusals; ++i) {
        runs_host.script(http_response{500,
                                       {{"content-type", "application/json"}},
                                       R"({"error":"internal_error","message":"down"})"});
    }
    return "runs: {upstream: {baseUrl: \"" + runs_host.base_url() + "\", timeout: 2s}}\n";
}

bool broker_serve_fixture::log_has_since(std::size_t from, std::string_view needle) const {
    const auto text = log_text();
    return from <= text.size() && text.find(needle, from) != std::string::npos;
}

json::value broker_serve_fixture::get_json(const serve_process& serve,
                                           const std::string& path) const {
    http_call c;
    c.url = serve.url() + path;
    c.headers = {{"authorization", "Bearer " + api_key_}};
    auto r = perform(c);
    if (r.status != 200) {
        ADD_FAILURE() << path << " answered " << r.status << " " << r.body << r.error;
        return json::value{};
    }
    return json::parse(r.body);
}

json::array broker_serve_fixture::deliveries(const serve_process& serve) const {
    json::array all;
    std::string cursor;
    do {
        auto v = get_json(serve, subscription_path() + "/deliveries?limit=1000" +
                                     (cursor.empty() ? "" : "&cursor=" + cursor));
        if (!v.is_object()) {
            return {};
        }
        for (auto& d : v.at("deliveries").as_array()) {
            all.push_back(std::move(d));
        }
        const auto* next = v.as_object().if_contains("nextCursor");
        cursor = next != nullptr ? std::string(next->as_string()) : std::string();
    } while (!cursor.empty());
    return all;
}

std::size_t broker_serve_fixture::delivered_count(const serve_process& serve) const {
    std::size_t n = 0;
    for (const auto& d : deliveries(serve)) {
        n += d.at("status").as_string() == "delivered" ? 1 : 0;
    }
    return n;
}

bool broker_serve_fixture::dead_letters_appear(const serve_process& serve, json::array& dead,
                                               std::chrono::milliseconds limit) const {
    return eventually(
        [&] {
            auto page = get_json(serve, subscription_path() + "/dead-letters?limit=10");
            if (!page.is_object()) {
                return false;
            }
            dead = page.at("deliveries").as_array();
            return !dead.empty();
        },
        limit);
}

int broker_serve_fixture::reactivate_subscription(const serve_process& serve) const {
    http_call patch;
    patch.method = "PATCH";
    patch.url = serve.url() + subscription_path();
    patch.headers = {{"authorization", "Bearer " + api_key_}, {"content-type", "application/json"}};
    patch.body = R"({"state":"active"})";
    return perform(patch).status;
}

void broker_serve_fixture::expect_clean_stop(serve_process& serve) const {
    serve.signal(SIGTERM);
    EXPECT_EQ(serve.wait_exit(), 0) << log_text();
}

std::string broker_serve_fixture::postgres_store_line(std::string& why) {
    auto* pg = postgres_server::shared();
    if (pg == nullptr) {
        why = "PostgreSQL unavailable: " + postgres_server::shared_unavailable_reason();
        return {};
    }
    const auto db = pg->create_database();
    if (db.empty()) {
        ADD_FAILURE() << "CREATE DATABASE failed";
        return {};
    }
    return "store: {postgres: {url: \"" + pg->url(db) + "\"}}\n";
}

void broker_serve_fixture::start_nodes(serve_process (&nodes)[2],
                                       const std::string (&configs)[2]) const {
    for (int i = 0; i < 2; ++i) {
        ASSERT_TRUE(nodes[i].start(configs[i], dir_.file("node" + std::to_string(i) + ".log")))
            << nodes[i].error;
    }
}

void broker_serve_fixture::expect_clean_stops(serve_process (&nodes)[2]) {
    for (auto& node : nodes) {
        node.signal(SIGTERM);
    }
    for (auto& node : nodes) {
        EXPECT_EQ(node.wait_exit(), 0);
    }
}

void broker_serve_fixture::expect_one_delivered_run_each(
    const serve_process& serve, std::size_t count, const char* what,
    std::map<std::string, std::string>& key_of_run,
    const std::function<bool(const std::string&)>& known_key) const {
    const auto all = deliveries(serve);
    EXPECT_EQ(all.size(), count);
    std::set<std::string> seen_keys;
    std::set<std::string> runs;
    for (const auto& dv : all) {
        const auto& d = dv.as_object();
        const std::string key(d.at("dedupKey").as_string());
        if (known_key) {
            EXPECT_TRUE(known_key(key)) << "a delivery for no produced " << what << ": " << key;
        }
        EXPECT_TRUE(seen_keys.insert(key).second)
            << "two deliveries of one " << what << ": " << key;
        EXPECT_EQ(d.at("status").as_string(), "delivered") << json::serialize(d);
        ASSERT_TRUE(d.contains("runId")) << json::serialize(d);
        const std::string run(d.at("runId").as_string());
        EXPECT_TRUE(runs.insert(run).second);
        key_of_run[run] = key;
    }
    EXPECT_EQ(runs.size(), count);
    EXPECT_EQ(seen_keys.size(), count);
}

void broker_serve_fixture::expect_runs_caused_by_their_attempts(
    const serve_process& serve, const std::map<std::string, std::string>& key_of_run,
    const attempt_key_check& check_key) const {
    for (const auto& [run_id, run_key] : key_of_run) {
        const auto poll = get_json(serve, "/v1/runs/" + run_id + "/events/poll?timeout=1");
        ASSERT_TRUE(poll.is_object());
        std::string attempt_event_id;
        std::string causation;
        int started = 0;
        for (const auto& ev : poll.at("events").as_array()) {
            const auto& e = ev.as_object();
            if (e.at("type").as_string() == "trigger.delivery.attempted") {
                const auto& p = e.at("payload").as_object();
                if (p.at("outcome").as_string() == "delivered") {
                    EXPECT_EQ(p.at("runId").as_string(), run_id);
                    const std::string key(p.at("dedupKey").as_string());
                    if (check_key) {
                        check_key(run_id, key);
                    } else {
                        EXPECT_EQ(key, run_key);
                    }
                    attempt_event_id = e.at("eventId").as_string();
                }
            } else if (e.at("type").as_string() == "run.started") {
                ++started;
                if (e.contains("causationId")) {
                    causation = e.at("causationId").as_string();
                }
            }
        }
        EXPECT_EQ(started, 1) << run_id;
        EXPECT_FALSE(attempt_event_id.empty()) << run_id;
        EXPECT_EQ(causation, attempt_event_id) << run_id;
    }
}

} // namespace wopbridge::testing
