#pragma once
// What the broker serve tests (kafka, nats, rabbitmq, queue) share: a temp dir holding the host
// key, the config up to the connector list, REST reads of the one subscription, the dead-letter
// and re-activation steps, and the "one run per message, started by its delivered attempt" check.
// Each suite derives from it and adds its broker's connector settings and broker-side checks.
#include "support/serve_process.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <string_view>

namespace wopbridge::testing {

class fake_runs_host;

class broker_serve_fixture : public ::testing::Test {
  protected:
    broker_serve_fixture(std::string api_key, std::string subscription_id)
        : api_key_(std::move(api_key)), sub_id_(std::move(subscription_id)) {}

    // Writes `key` to host.key (mode 0600) beside the config.
    void write_host_key(const std::string& key);

    // The config up to and including "connectors:\n": the SQLite prelude when `store` is empty,
    // else loopback, the API key and `store` (a whole "store: ..." line); then `runs`, and the
    // delivery settings every broker test uses (3 attempts without backoff, a 2 s lease so an
    // attempt in flight at a SIGKILL is retried quickly).
    std::string config_head(const std::string& runs, const std::string& store = {}) const;
    // "runs: {upstream: ...}" at `runs_host`, which first refuses `refusals` starts with a
    // retryable 500.
    static std::string refusing_upstream_runs(fake_runs_host& runs_host, int refusals);

    std::string config() const { return dir_.file("wopbridge.yaml"); }
    std::string log_file() const { return dir_.file("serve.log"); }
    std::string log_text() const { return read_text_file(log_file()); }
    // Whether the log holds `needle` after its first `from` bytes.
    bool log_has_since(std::size_t from, std::string_view needle) const;

    boost::json::value get_json(const serve_process& serve, const std::string& path) const;
    std::string subscription_path() const { return "/v1/trigger-subscriptions/" + sub_id_; }
    // Every delivery of the subscription, page after page (of 1000, the maxPageSize).
    boost::json::array deliveries(const serve_process& serve) const;
    std::size_t delivered_count(const serve_process& serve) const;
    // Waits until the subscription's dead-letter page is not empty; `dead` holds it.
    bool dead_letters_appear(const serve_process& serve, boost::json::array& dead,
                             std::chrono::milliseconds limit = std::chrono::seconds(15)) const;
    // PATCHes the subscription back to active; returns the HTTP status.
    int reactivate_subscription(const serve_process& serve) const;
    // SIGTERM, then a clean exit.
    void expect_clean_stop(serve_process& serve) const;

    // Every delivery is delivered with its own run and no dedup key comes twice; there are
    // `count` of them. `key_of_run` receives run id -> dedup key. `known_key`, when set, must
    // accept every dedup key. `what` names a message in failure text ("record", "message").
    void expect_one_delivered_run_each(
        const serve_process& serve, std::size_t count, const char* what,
        std::map<std::string, std::string>& key_of_run,
        const std::function<bool(const std::string&)>& known_key = {}) const;
    // For each run: exactly one run.started, caused by the trigger.delivery.attempted that
    // delivered it; that attempt names the run, and its dedup key passes `check_key` (default:
    // equal to the run's key in `key_of_run`).
    using attempt_key_check =
        std::function<void(const std::string& run_id, const std::string& dedup_key)>;
    void expect_runs_caused_by_their_attempts(const serve_process& serve,
                                              const std::map<std::string, std::string>& key_of_run,
                                              const attempt_key_check& check_key = {}) const;

    // Two nodes on one store (each test's TwoNodesOnPostgres... case). A fresh database on the
    // shared PostgreSQL server as a whole "store: ..." line; empty with the reason in `why` when
    // there is no server (the test skips), empty with a failure when the database is not made.
    static std::string postgres_store_line(std::string& why);
    // Starts node i on `configs[i]`, logging to node<i>.log; asserts each start.
    void start_nodes(serve_process (&nodes)[2], const std::string (&configs)[2]) const;
    std::string node_log(int i) const {
        return read_text_file(dir_.file("node" + std::to_string(i) + ".log"));
    }
    std::string node_logs() const { return node_log(0) + node_log(1); }
    // SIGTERM to both, then both exit cleanly.
    static void expect_clean_stops(serve_process (&nodes)[2]);

    temp_dir dir_;

  private:
    std::string api_key_;
    std::string sub_id_;
};

} // namespace wopbridge::testing
