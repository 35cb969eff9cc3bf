// The operator-facing observability of the bridge: the /metrics families added for operations
// (run-start latency, due / in-flight / held gauges, stored dead letters, per-subscription state,
// commit latency by operation, connector counters), the exposition's syntax, the dashboard's
// overview and the provenance of a replayed run.

#include "app/bridge.hpp"

#include "contract/wire.hpp"
#include "core/log.hpp"
#include "plugins/connector_metrics.hpp"
#include "store/store.hpp"
#include "support/fake_clock.hpp"
#include "support/scripted_run_starter.hpp"
#include "support/temp_dir.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <map>
#include <regex>
#include <set>
#include <sstream>

namespace wopbridge {
namespace {

using behaviour = testing::scripted_run_starter::behaviour;

// Checks Prometheus text format 0.0.4 line by line; returns the problems found.
std::vector<std::string> exposition_problems(const std::string& text) {
    static const std::regex sample(
        R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*")"
        R"((?:,[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*")*\})? )"
        R"((-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|[+-]Inf|NaN)$)");
    static const std::regex type_line(
        R"(^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram)$)");
    static const std::regex help_line(R"(^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) .+$)");
    std::vector<std::string> problems;
    std::map<std::string, std::string> types;
    std::set<std::string> helped;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        std::smatch m;
        if (std::regex_match(line, m, type_line)) {
            if (!types.emplace(m[1], m[2]).second) {
                problems.push_back("TYPE twice: " + line);
            }
            continue;
        }
        if (std::regex_match(line, m, help_line)) {
            helped.insert(m[1]);
            continue;
        }
        if (!std::regex_match(line, m, sample)) {
            problems.push_back("not a sample: " + line);
            continue;
        }
        std::string name = m[1];
        std::string family = name;
        for (const char* suffix : {"_bucket", "_sum", "_count"}) {
            const std::string s(suffix);
            if (!types.count(family) && name.size() > s.size() &&
                name.compare(name.size() - s.size(), s.size(), s) == 0) {
                family = name.substr(0, name.size() - s.size());
            }
        }
        if (!types.count(family)) {
            problems.push_back("sample without TYPE: " + line);
        } else if (!helped.count(family)) {
            problems.push_back("sample without HELP: " + line);
        } else if (family != name && types[family] != "histogram") {
            problems.push_back("suffix on a non-histogram: " + line);
        }
    }
    return problems;
}

class ObservabilityTest : public ::testing::Test {
protected:
    ObservabilityTest() {
        settings_.host_key_file = dir_.file("host.key");
        settings_.default_retry = {2, backoff_kind::fixed, 1000, 60000, false};
        settings_.default_breaker = {100, 30000};
        sqlite_options o;
        o.path = dir_.file("bridge.db");
        auto st = open_sqlite_store(o);
        EXPECT_TRUE(st.has_value());
        auto starter = std::make_unique<testing::scripted_run_starter>(
            std::vector<std::string>{"wf", "wf-fail"}, false);
        starter_ = starter.get();
        starter_->set_behaviour("wf-fail", behaviour::transient);
        bridge_ = std::make_unique<bridge>(settings_, std::move(*st), std::move(starter), clock_,
                                           random_);
    }
    ~ObservabilityTest() override { bridge_.reset(); }

    std::string register_sub(const std::string& workflow = "wf", bool hold = false) {
        registration_request req;
        req.tenant = "acme";
        req.workflow_id = workflow;
        req.verification = verification_mode::none;
        req.hold_when_not_active = hold;
        auto r = bridge_->register_subscription(req);
        EXPECT_TRUE(r.has_value());
        return r ? r->record.id : std::string();
    }

    submit_result submit(const std::string& sub_id, const std::string& event_id) {
        inbound_submission s;
        s.subscription_id = sub_id;
        s.provider_event_id = event_id;
        s.received_at = clock_.now_ms();
        s.verified = true;
        s.content_json = R"({"webhook":{"method":"POST","headers":{},"body":{}}})";
        auto p = std::make_shared<std::promise<submit_result>>();
        auto f = p->get_future();
        bridge_->submit(s, [p](submit_result r) { p->set_value(std::move(r)); });
        EXPECT_EQ(f.wait_for(std::chrono::seconds(10)), std::future_status::ready);
        return f.get();
    }

    // The dead letter of one event on a failing subscription (the subscription dead-letters too).
    dead_letter dead_lettered(const std::string& sub_id, const std::string& event_id) {
        EXPECT_EQ(submit(sub_id, event_id).status, submit_status::accepted);
        bridge_->run_due(clock_.now_ms());
        clock_.advance(1000);
        bridge_->run_due(clock_.now_ms());
        auto page = bridge_->list_dead_letters("acme", sub_id, {}).value();
        EXPECT_EQ(page.items.size(), 1u);
        return page.items.empty() ? dead_letter{} : page.items.front();
    }

    static bool has(const std::string& text, const std::string& line) {
        return text.find(line + "\n") != std::string::npos;
    }

    testing::temp_dir dir_;
    testing::fake_clock clock_;
    testing::seeded_random random_{29};
    bridge_settings settings_;
    testing::scripted_run_starter* starter_ = nullptr;
    std::unique_ptr<bridge> bridge_;
};

TEST_F(ObservabilityTest, RunStartLatencyIsIntakeToRunStarted) {
    auto sub = register_sub();
    ASSERT_EQ(submit(sub, "evt-latency").status, submit_status::accepted);
    clock_.advance(200); // the engine gets to it 200 ms after intake
    ASSERT_EQ(bridge_->run_due(clock_.now_ms()), 1);
    auto text = bridge_->metrics_text();
    EXPECT_TRUE(has(text, "wopbridge_run_start_latency_seconds_count 1")) << text;
    EXPECT_TRUE(has(text, "wopbridge_run_start_latency_seconds_sum 0.20000000000000001")) << text;
    EXPECT_TRUE(
        has(text, "wopbridge_run_start_latency_seconds_bucket{le=\"0.10000000000000001\"} 0"))
        << text;
    EXPECT_TRUE(has(text, "wopbridge_run_start_latency_seconds_bucket{le=\"0.25\"} 1")) << text;
    // Both kinds of store write are timed, labelled by operation.
    EXPECT_TRUE(has(text, "wopbridge_store_commit_latency_seconds_count{operation=\"intake\"} 1"))
        << text;
    EXPECT_TRUE(has(text, "wopbridge_store_commit_latency_seconds_count{operation=\"attempt\"} 1"))
        << text;
}

TEST_F(ObservabilityTest, FailedAttemptsDoNotObserveRunStartLatency) {
    auto sub = register_sub("wf-fail");
    dead_lettered(sub, "evt-no-run");
    auto text = bridge_->metrics_text();
    EXPECT_EQ(text.find("wopbridge_run_start_latency_seconds_count"), std::string::npos) << text;
    EXPECT_TRUE(has(text, "wopbridge_store_commit_latency_seconds_count{operation=\"attempt\"} 2"))
        << text;
}

TEST_F(ObservabilityTest, GaugesShowDueHeldDeadLettersAndStates) {
    auto busy = register_sub();
    auto held = register_sub("wf", true);
    auto failing = register_sub("wf-fail");
    ASSERT_TRUE(bridge_->set_state("acme", held, sub_state::paused).has_value());
    ASSERT_EQ(submit(held, "evt-h1").status, submit_status::held);
    ASSERT_EQ(submit(held, "evt-h2").status, submit_status::held);
    dead_lettered(failing, "evt-dead");
    ASSERT_EQ(submit(busy, "evt-due").status, submit_status::accepted); // not run: stays due

    auto text = bridge_->metrics_text();
    EXPECT_TRUE(has(text, "wopbridge_deliveries_due 1")) << text;
    EXPECT_TRUE(has(text, "wopbridge_deliveries_pending 1")) << text;
    EXPECT_TRUE(has(text, "wopbridge_deliveries_in_flight 0")) << text;
    EXPECT_TRUE(has(text, "wopbridge_deliveries_held 2")) << text;
    EXPECT_TRUE(has(text, "wopbridge_dead_letters_stored{subscription=\"" + failing + "\"} 1"))
        << text;
    EXPECT_EQ(text.find("wopbridge_dead_letters_stored{subscription=\"" + busy), std::string::npos);
    EXPECT_TRUE(has(text, "wopbridge_subscription_state{subscription=\"" + held +
                              "\",state=\"paused\"} 1"))
        << text;
    EXPECT_TRUE(has(text, "wopbridge_subscription_state{subscription=\"" + held +
                              "\",state=\"active\"} 0"))
        << text;
    EXPECT_TRUE(has(text, "wopbridge_subscription_state{subscription=\"" + failing +
                              "\",state=\"dead-lettered\"} 1"))
        << text;
    EXPECT_TRUE(has(text, "wopbridge_dead_letters_total{reason=\"retries_exhausted\"} 1")) << text;

    // Gauges follow the store: the due delivery runs, the paused one resumes.
    bridge_->run_due(clock_.now_ms());
    ASSERT_TRUE(bridge_->set_state("acme", held, sub_state::active).has_value());
    text = bridge_->metrics_text();
    EXPECT_TRUE(has(text, "wopbridge_deliveries_held 0")) << text;
    EXPECT_TRUE(has(text, "wopbridge_deliveries_due 2")) << text; // released, due now
}

TEST_F(ObservabilityTest, ExpositionIsWellFormedAndCarriesExtraSources) {
    auto sub = register_sub();
    ASSERT_EQ(submit(sub, "evt-format").status, submit_status::accepted);
    bridge_->run_due(clock_.now_ms());
    connector_instance_info slack;
    slack.name = "slack-main";
    slack.running = true;
    slack.stats.errors = 3;
    slack.stats.requests = 10;
    slack.stats.timeouts = 1;
    bridge_->add_metrics_source([slack] { return connector_metrics_text({slack}); });

    auto text = bridge_->metrics_text();
    auto problems = exposition_problems(text);
    EXPECT_TRUE(problems.empty()) << problems.front() << "\n" << text;
    EXPECT_TRUE(has(text, "wopbridge_connector_errors_total{connector=\"slack-main\"} 3")) << text;
    EXPECT_TRUE(has(text, "wopbridge_connector_requests_total{connector=\"slack-main\"} 10"));
    EXPECT_TRUE(has(text, "wopbridge_connector_timeouts_total{connector=\"slack-main\"} 1"));
    EXPECT_TRUE(has(text, "wopbridge_connector_running{connector=\"slack-main\"} 1"));
    EXPECT_TRUE(has(text, "# TYPE wopbridge_run_start_latency_seconds histogram"));
    EXPECT_TRUE(has(text, "# TYPE wopbridge_deliveries_due gauge"));
    EXPECT_TRUE(has(text, "# TYPE wopbridge_connector_errors_total counter"));
}

TEST_F(ObservabilityTest, ExpositionCheckerRejectsMalformedText) {
    // The checker above must be able to fail.
    EXPECT_FALSE(exposition_problems("wopbridge_x 1\n").empty()); // no TYPE
    EXPECT_FALSE(exposition_problems("# HELP a b\n# TYPE a gauge\na{l=\"x} 1\n").empty());
    EXPECT_FALSE(exposition_problems("# HELP a b\n# TYPE a gauge\na_count 1\n").empty());
    EXPECT_TRUE(exposition_problems("# HELP a b\n# TYPE a gauge\na{l=\"x\"} 1\n").empty());
}

TEST_F(ObservabilityTest, OverviewCountsDeliveriesPerSubscription) {
    auto ok = register_sub();
    auto failing = register_sub("wf-fail");
    ASSERT_EQ(submit(ok, "evt-o1").status, submit_status::accepted);
    ASSERT_EQ(submit(ok, "evt-o2").status, submit_status::accepted);
    bridge_->run_due(clock_.now_ms());
    dead_lettered(failing, "evt-o3");
    auto view = bridge_->overview("acme");
    ASSERT_TRUE(view.has_value());
    ASSERT_EQ(view->size(), 2u);
    for (const auto& o : *view) {
        ASSERT_TRUE(o.last_delivery.has_value());
        EXPECT_EQ(o.counts.subscription_id, o.record.id);
        if (o.record.id == ok) {
            EXPECT_EQ(o.counts.delivered, 2);
            EXPECT_EQ(o.counts.dead_letters, 0);
            EXPECT_EQ(o.last_delivery->status, delivery_status::delivered);
        } else {
            EXPECT_EQ(o.counts.dead_lettered, 1);
            EXPECT_EQ(o.counts.dead_letters, 1);
            EXPECT_EQ(o.record.state, sub_state::dead_lettered);
        }
    }
    EXPECT_TRUE(bridge_->overview("other-tenant")->empty());
}

TEST_F(ObservabilityTest, ReplayedRunNamesTheDeadLetterItReplays) {
    auto sub = register_sub("wf-fail");
    auto dl = dead_lettered(sub, "evt-provenance");
    starter_->set_behaviour("wf-fail", behaviour::complete);
    auto r = bridge_->replay_dead_letter("acme", sub, dl.attempt_event_id);
    ASSERT_TRUE(r.has_value());
    ASSERT_TRUE(bridge_->set_state("acme", sub, sub_state::active).has_value());
    ASSERT_EQ(bridge_->run_due(clock_.now_ms()), 1);

    auto run = bridge_->get_run("acme", r->run_id);
    ASSERT_TRUE(run.has_value());
    EXPECT_EQ(run->replay_of_attempt_event_id, dl.attempt_event_id);
    auto snap = wire::run_snapshot(*run);
    ASSERT_TRUE(snap.contains("replayOf"));
    EXPECT_EQ(snap.at("replayOf").at("attemptEventId"), dl.attempt_event_id.c_str());
    EXPECT_EQ(snap.at("replayOf").at("subscriptionId"), sub.c_str());

    // An ordinary run has no replayOf.
    auto plain = register_sub();
    auto s = submit(plain, "evt-plain");
    bridge_->run_due(clock_.now_ms());
    auto plain_run = bridge_->get_run("acme", s.run_id);
    ASSERT_TRUE(plain_run.has_value());
    EXPECT_TRUE(plain_run->replay_of_attempt_event_id.empty());
    EXPECT_FALSE(wire::run_snapshot(*plain_run).contains("replayOf"));
}

TEST_F(ObservabilityTest, AttemptsStateChangesAndReplaysAreLoggedWithIdsOnly) {
    set_log_level("info");
    auto sub = register_sub("wf-fail");
    ::testing::internal::CaptureStderr();
    auto dl = dead_lettered(sub, "evt-logged-secret");
    starter_->set_behaviour("wf-fail", behaviour::complete);
    auto r = bridge_->replay_dead_letter("acme", sub, dl.attempt_event_id);
    ASSERT_TRUE(r.has_value());
    ASSERT_TRUE(bridge_->set_state("acme", sub, sub_state::active).has_value());
    bridge_->run_due(clock_.now_ms());
    std::string out = ::testing::internal::GetCapturedStderr();

    std::vector<boost::json::object> lines;
    std::istringstream in(out);
    std::string line;
    while (std::getline(in, line)) {
        auto v = boost::json::parse(line); // every line one JSON object
        ASSERT_TRUE(v.is_object()) << line;
        lines.push_back(v.as_object());
    }
    auto count = [&](const char* event, const char* key = nullptr, const char* value = nullptr) {
        int n = 0;
        for (const auto& l : lines) {
            if (l.at("event") == event && (!key || (l.contains(key) && l.at(key) == value))) {
                ++n;
            }
        }
        return n;
    };
    // The retrying attempt is debug (below the threshold); the dead-lettering one is info.
    EXPECT_EQ(count("delivery.attempted", "outcome", "retrying"), 0) << out;
    EXPECT_EQ(count("delivery.attempted", "outcome", "dead-lettered"), 1) << out;
    EXPECT_EQ(count("delivery.attempted", "toState", "dead-lettered"), 1) << out;
    EXPECT_EQ(count("dead_letter.replayed", "attemptEventId", dl.attempt_event_id.c_str()), 1);
    EXPECT_EQ(count("subscription.state_changed", "toState", "active"), 1) << out;
    EXPECT_EQ(count("delivery.attempted", "runId", r->run_id.c_str()), 1) << out;
    for (const auto& l : lines) {
        EXPECT_TRUE(l.contains("ts") && l.contains("level")) << boost::json::serialize(l);
    }
    EXPECT_EQ(out.find("evt-logged-secret"), std::string::npos); // the provider's id: content
    EXPECT_EQ(out.find("webhook\":{"), std::string::npos);

    set_log_level("warn");
    ::testing::internal::CaptureStderr();
    ASSERT_TRUE(bridge_->set_state("acme", sub, sub_state::paused).has_value());
    EXPECT_TRUE(::testing::internal::GetCapturedStderr().empty());
    set_log_level("info");
}

} // namespace
} // namespace wopbridge
