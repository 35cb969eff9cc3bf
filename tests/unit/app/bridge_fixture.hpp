#pragma once
// The bridge unit tests' fixture: a real bridge on a temporary SQLite file with a fake clock,
// seeded randomness and a scripted run starter ("wf" starts, "wf-fail" fails transiently).
#include "app/bridge.hpp"

#include "contract/events.hpp"
#include "runs/run_starter.hpp"
#include "store/store.hpp"
#include "support/fake_clock.hpp"
#include "support/scripted_run_starter.hpp"
#include "support/temp_dir.hpp"

#include <wopbridge/signatures.hpp>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <future>
#include <thread>

namespace wopbridge::bridge_testing {

namespace json = boost::json;
using behaviour = testing::scripted_run_starter::behaviour;

class BridgeTest : public ::testing::Test {
  protected:
    BridgeTest() {
        settings_.host_key_file = dir_.file("host.key");
        settings_.test_seams = true;
        settings_.public_url = "http://127.0.0.1:9999/";
        settings_.default_retry = {3, backoff_kind::fixed, 1000, 60000, false};
        settings_.default_breaker = {100, 30000};
        settings_.attempt_timeout_ms = 5000;
    }
    ~BridgeTest() override { bridge_.reset(); }

    void open(bool before_commit = false) {
        sqlite_options o;
        o.path = dir_.file("bridge.db");
        auto st = open_sqlite_store(o);
        ASSERT_TRUE(st.has_value()) << st.error().message;
        auto starter = std::make_unique<testing::scripted_run_starter>(
            std::vector<std::string>{"wf", "wf-fail"}, before_commit);
        starter_ = starter.get();
        starter_->set_behaviour("wf-fail", behaviour::transient);
        bridge_ = std::make_unique<bridge>(settings_, std::move(*st), std::move(starter), clock_,
                                           random_);
    }

    registration_result register_webhook(const std::string& workflow = "wf",
                                         std::optional<retry_policy> retry = {},
                                         verification_mode mode = verification_mode::required,
                                         const std::string& tenant = "acme") {
        registration_request req;
        req.tenant = tenant;
        req.workflow_id = workflow;
        req.retry = retry;
        req.verification = mode;
        auto r = bridge_->register_subscription(req);
        EXPECT_TRUE(r.has_value());
        return r.value();
    }

    template <class Start> static submit_result wait_submit(Start start) {
        auto p = std::make_shared<std::promise<submit_result>>();
        auto f = p->get_future();
        start([p](submit_result r) { p->set_value(std::move(r)); });
        EXPECT_EQ(f.wait_for(std::chrono::seconds(10)), std::future_status::ready);
        return f.get();
    }

    submit_result submit(const std::string& sub_id, const std::string& event_id) {
        inbound_submission s;
        s.subscription_id = sub_id;
        s.provider_event_id = event_id;
        s.received_at = clock_.now_ms();
        s.content_json = R"({"webhook":{"method":"POST","headers":{},"body":{"secret-ish":"x"}}})";
        return wait_submit([&](submit_callback cb) { bridge_->submit(s, std::move(cb)); });
    }

    inbound_http_request signed_post(const registration_result& reg, const std::string& webhook_id,
                                     const std::string& body = R"({"hello":"world"})") {
        std::int64_t ts = clock_.now_ms() / 1000;
        inbound_http_request r;
        r.target = "/v1/ingest/" + reg.record.id;
        r.body = body;
        r.headers = {{"content-type", "application/json"},
                     {"webhook-id", webhook_id},
                     {"webhook-timestamp", std::to_string(ts)},
                     {"webhook-signature",
                      *sig::sign_standard_webhooks(reg.signing_secret, webhook_id, ts, body)}};
        return r;
    }

    submit_result ingest(const std::string& id, const inbound_http_request& req) {
        return wait_submit(
            [&](submit_callback cb) { bridge_->ingest_webhook(id, req, std::move(cb)); });
    }

    std::vector<run_event> run_log(const std::string& run_id, const std::string& tenant = "acme") {
        auto r = bridge_->read_events(tenant, run_id, -1, 1000);
        EXPECT_TRUE(r.has_value());
        return r ? r->events : std::vector<run_event>{};
    }

    static json::object payload(const run_event& e) {
        return json::parse(e.payload_json).as_object();
    }

    sub_state state_of(const std::string& id, const std::string& tenant = "acme") {
        return bridge_->get_subscription(tenant, id).value().record.state;
    }

    testing::temp_dir dir_;
    testing::fake_clock clock_;
    testing::seeded_random random_{11};
    bridge_settings settings_;
    testing::scripted_run_starter* starter_ = nullptr;
    std::unique_ptr<bridge> bridge_;
};

} // namespace wopbridge::bridge_testing
