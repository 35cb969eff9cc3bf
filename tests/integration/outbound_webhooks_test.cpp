// Outbound run-event webhooks against a real receiving HTTP server (tests/support/http_test_server):
// signatures, durable retry and dead-lettering, restart safety, SSRF refusals, best-effort breaker.
#include "contract/wire.hpp"
#include "core/secret_box.hpp"
#include "outbound/webhook_dispatcher.hpp"
#include "store/store.hpp"
#include "support/fake_clock.hpp"
#include "support/http_test_server.hpp"
#include "support/temp_dir.hpp"

#include <wopbridge/signatures.hpp>

#include "support/eventually.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <atomic>
#include <chrono>
#include <map>
#include <set>
#include <thread>

namespace wopbridge::outbound::outbound_webhooks_test {
namespace {

using testing_http = wopbridge::testing::http_test_server;
using wopbridge::testing::http_request;
using wopbridge::testing::http_response;
using wopbridge::testing::eventually;
using wopbridge::testing::fake_clock;
using wopbridge::testing::seeded_random;
using wopbridge::testing::temp_dir;

constexpr millis hour = 3600LL * 1000;

class OutboundWebhooksTest : public ::testing::Test {
protected:
    temp_dir dir_;
    fake_clock clock_;
    seeded_random random_{42};
    std::unique_ptr<store> store_;
    std::unique_ptr<webhook_dispatcher> dispatcher_;
    std::atomic<int> answer_{200};
    testing_http server_{[this](const http_request&) {
        http_response r;
        r.status = answer_.load();
        return r;
    }};
    int run_counter_ = 0;

    void SetUp() override { open_store(); }

    void open_store() {
        dispatcher_.reset();
        store_.reset();
        auto s = open_sqlite_store(sqlite_options{dir_.file("bridge.db")});
        ASSERT_TRUE(s) << s.error().message;
        store_ = std::move(*s);
    }

    dispatcher_options options(bool durable) {
        dispatcher_options o;
        o.durable = durable;
        o.allow_loopback_http = true;
        o.retry = retry_policy{4, backoff_kind::fixed, 1000, 1000, false};
        o.version = "9.9.9";
        return o;
    }

    void make_dispatcher(bool durable) {
        dispatcher_.reset();
        auto box = secret_box::from_key(std::string(32, 'k'));
        ASSERT_TRUE(box);
        dispatcher_ = std::make_unique<webhook_dispatcher>(*store_, *box, clock_, random_,
                                                           options(durable));
    }

    webhook_registered register_hook(const std::string& url, std::vector<std::string> events) {
        webhook_registration req;
        req.tenant = "acme";
        req.url = url;
        req.events = std::move(events);
        auto r = dispatcher_->register_webhook(req);
        EXPECT_TRUE(r) << r.error().message;
        return r ? *r : webhook_registered{};
    }

    // A run of tenant acme, created the way the delivery engine does (intake + delivered attempt).
    std::string make_run() {
        std::string n = std::to_string(++run_counter_);
        if (run_counter_ == 1) {
            subscription s;
            s.id = "sub_1";
            s.tenant = "acme";
            s.workflow_id = "wf";
            s.webhook_id = "wh_in";
            s.secret_fingerprint = "fp";
            s.sealed_secret = "sealed";
            s.created_at = s.updated_at = clock_.now_ms();
            EXPECT_TRUE(store_->insert_subscription(s));
        }
        intake_request r;
        r.subscription_id = "sub_1";
        r.tenant = "acme";
        r.dedup_key = "dk_" + n;
        r.delivery_id = "dlv_" + n;
        r.run_id = "run_" + n;
        r.received_at = r.due_at = clock_.now_ms();
        r.content_json = "{}";
        r.dedup_expires_at = clock_.now_ms() + 24 * hour;
        EXPECT_TRUE(store_->intake_sync(r));
        auto claimed = store_->claim_due(clock_.now_ms(), 10, 60000);
        EXPECT_TRUE(claimed && claimed->size() == 1U);
        const auto& d = claimed->front();
        attempt_record rec;
        rec.delivery_id = d.id;
        rec.subscription_id = d.subscription_id;
        rec.at = clock_.now_ms();
        rec.attempt.subscription_id = d.subscription_id;
        rec.attempt.dedup_key = d.dedup_key;
        rec.attempt.attempt = 1;
        rec.attempt.outcome = attempt_outcome::delivered;
        rec.attempt.run_id = d.run_id;
        rec.attempt_event_id = "evt_att_" + n;
        rec.run = run_record{d.run_id, "acme", "wf", d.subscription_id, d.id,
                             run_status::running, "", clock_.now_ms(), clock_.now_ms()};
        rec.run_started_event_id = "evt_start_" + n;
        rec.run_started_payload_json = R"({"workflowId":"wf"})";
        EXPECT_TRUE(store_->record_attempt(rec));
        return d.run_id;
    }

    void append(const std::string& run_id, const std::string& type) {
        auto e = store_->append_run_event(run_id, type, R"({"n":1})", "",
                                          "evt_" + std::to_string(++event_counter_),
                                          clock_.now_ms());
        ASSERT_TRUE(e) << e.error().message();
        dispatcher_->on_run_event(*e);
    }
    int event_counter_ = 0;

    std::string url() const { return server_.base_url() + "/hook"; }

    // Drives deliveries with the fake clock: run what is due, then jump to the next due time.
    void drive_until_settled(int max_rounds = 50) {
        for (int i = 0; i < max_rounds; ++i) {
            dispatcher_->run_due(clock_.now_ms());
            auto next = store_->outbound_next_due_at();
            ASSERT_TRUE(next);
            if (!*next) {
                return;
            }
            clock_.set(std::max(clock_.now_ms(), **next));
        }
    }

    std::vector<outbound_delivery> deliveries(const std::string& webhook_id) {
        auto d = store_->list_outbound_deliveries(webhook_id);
        EXPECT_TRUE(d);
        return d ? *d : std::vector<outbound_delivery>{};
    }
};

TEST_F(OutboundWebhooksTest, SignaturesVerifyAndTheBodyIsTheVerbatimEvent) {
    make_dispatcher(false);
    auto hook = register_hook(url(), {"run.completed", "run.started"});
    ASSERT_EQ(hook.secret.size(), 64U);
    EXPECT_EQ(hook.record.secret_fingerprint,
              sig::to_hex(sig::sha256(hook.secret)).substr(0, 8));
    auto run = make_run(); // run.started is enqueued in the same transaction as the event
    append(run, "node.completed"); // not subscribed
    append(run, "run.completed");
    EXPECT_EQ(dispatcher_->run_due(clock_.now_ms()), 2);

    auto reqs = server_.requests();
    ASSERT_EQ(reqs.size(), 2U);
    auto events = store_->run_events_after(run, -1, 100);
    ASSERT_TRUE(events);
    std::map<std::string, run_event> by_type;
    for (const auto& e : *events) {
        by_type[e.type] = e;
    }
    std::set<std::string> types;
    for (const auto& r : reqs) {
        EXPECT_EQ(r.method, "POST");
        EXPECT_EQ(r.target, "/hook");
        EXPECT_EQ(r.header("content-type"), "application/json");
        EXPECT_EQ(r.header("user-agent"), "openwop-webhook-dispatcher/9.9.9");
        EXPECT_EQ(r.header("x-openwop-webhook-id"), hook.record.id);
        EXPECT_EQ(r.header("x-openwop-signature-algorithm"), "v1");
        auto ts = r.header("x-openwop-timestamp");
        EXPECT_EQ(ts, std::to_string(clock_.now_ms() / 1000));
        // Recomputed here from the issued secret and the exact bytes received.
        std::string expected = "sha256=" + sig::to_hex(sig::hmac_sha256(hook.secret, ts + "." + r.body));
        EXPECT_EQ(r.header("x-openwop-signature"), expected);
        EXPECT_EQ(r.body.find(hook.secret), std::string::npos);
        auto body = boost::json::parse(r.body).as_object();
        EXPECT_EQ(body.size(), 3U);
        EXPECT_EQ(std::string(body["runId"].as_string()), run);
        EXPECT_EQ(body["workspaceId"], "acme");
        std::string type = r.header("x-openwop-event-type");
        types.insert(type);
        ASSERT_EQ(by_type.count(type), 1U);
        EXPECT_EQ(body["event"], boost::json::value(wire::run_event(by_type[type])));
    }
    EXPECT_EQ(types, (std::set<std::string>{"run.started", "run.completed"}));
    // Delivered once: nothing more is due.
    EXPECT_EQ(dispatcher_->run_due(clock_.now_ms() + hour), 0);
}

TEST_F(OutboundWebhooksTest, AUrlWithAQueryIsSealedAtRestAndDeliveredWhole) {
    make_dispatcher(false);
    const std::string with_token = url() + "?token=CANARYQUERYTOKEN";
    auto hook = register_hook(with_token, {"run.started"});
    EXPECT_EQ(hook.record.url, with_token); // the registration answer shows what was registered
    auto stored = store_->get_outbound_webhook(hook.record.id);
    ASSERT_TRUE(stored);
    EXPECT_TRUE(stored->url.starts_with("v1:")) << stored->url;
    EXPECT_EQ(stored->url.find("CANARYQUERYTOKEN"), std::string::npos);
    auto read = dispatcher_->get("acme", hook.record.id);
    ASSERT_TRUE(read);
    EXPECT_EQ(read->url, with_token);
    auto listed = dispatcher_->list("acme");
    ASSERT_TRUE(listed);
    ASSERT_EQ(listed->size(), 1U);
    EXPECT_EQ(listed->front().url, with_token);

    make_run();
    EXPECT_EQ(dispatcher_->run_due(clock_.now_ms()), 1);
    auto reqs = server_.requests();
    ASSERT_EQ(reqs.size(), 1U);
    EXPECT_EQ(reqs[0].target, "/hook?token=CANARYQUERYTOKEN");

    // Without a query there is nothing to hide: stored as given, readable by an operator.
    auto plain = register_hook(url(), {"run.completed"});
    EXPECT_EQ(store_->get_outbound_webhook(plain.record.id)->url, url());
}

TEST_F(OutboundWebhooksTest, ASubscriberDownForAWhileGetsEveryEventOnceItIsBack) {
    make_dispatcher(true);
    auto hook = register_hook(url(), {"node.completed"});
    auto run = make_run();
    answer_ = 503;
    for (int i = 0; i < 3; ++i) {
        append(run, "node.completed");
    }
    EXPECT_EQ(dispatcher_->run_due(clock_.now_ms()), 3);
    clock_.advance(1000);
    EXPECT_EQ(dispatcher_->run_due(clock_.now_ms()), 3); // second attempts, still down
    answer_ = 200;
    drive_until_settled();
    auto ds = deliveries(hook.record.id);
    ASSERT_EQ(ds.size(), 3U);
    for (const auto& d : ds) {
        EXPECT_EQ(d.status, "delivered");
        EXPECT_EQ(d.attempts, 3);
    }
    // Each (runId, sequence) reached the subscriber with a 2xx exactly once: the last 3 requests.
    auto reqs = server_.requests();
    ASSERT_EQ(reqs.size(), 9U);
    std::set<std::int64_t> seqs;
    for (std::size_t i = 6; i < reqs.size(); ++i) {
        auto body = boost::json::parse(reqs[i].body).as_object();
        seqs.insert(body["event"].as_object()["sequence"].as_int64());
    }
    EXPECT_EQ(seqs.size(), 3U);
    auto w = dispatcher_->get("acme", hook.record.id);
    ASSERT_TRUE(w);
    EXPECT_EQ(w->state, sub_state::active);
}

TEST_F(OutboundWebhooksTest, ASubscriberThatNeverRecoversEndsDeadLettered) {
    make_dispatcher(true);
    auto hook = register_hook(url(), {"run.completed"});
    answer_ = 500;
    auto run = make_run();
    append(run, "run.completed");
    drive_until_settled();
    EXPECT_EQ(server_.requests().size(), 4U); // maxAttempts 4
    auto w = dispatcher_->get("acme", hook.record.id);
    ASSERT_TRUE(w);
    EXPECT_EQ(w->state, sub_state::dead_lettered);
    auto changes = dispatcher_->state_changes("acme", hook.record.id);
    ASSERT_TRUE(changes);
    ASSERT_EQ(changes->size(), 1U);
    EXPECT_EQ(changes->front().from, sub_state::active);
    EXPECT_EQ(changes->front().to, sub_state::dead_lettered);
    EXPECT_EQ(changes->front().reason, "retry-exhausted");
    auto page = dispatcher_->dead_letters("acme", hook.record.id, page_request{});
    ASSERT_TRUE(page);
    ASSERT_EQ(page->items.size(), 1U);
    const auto& dl = page->items.front();
    EXPECT_EQ(dl.reason, "retries_exhausted");
    EXPECT_EQ(dl.attempts, 4);
    EXPECT_EQ(dl.run_id, run);
    EXPECT_EQ(dl.last_error, "http-500");
    EXPECT_EQ(dl.expires_at - dl.dead_lettered_at, 7 * 24 * hour);
    ASSERT_TRUE(dl.state_change);
    EXPECT_EQ(dl.state_change->to, sub_state::dead_lettered);
    // A dead-lettered subscription gets nothing more, even when the subscriber comes back.
    answer_ = 200;
    append(run, "run.completed");
    clock_.advance(hour);
    EXPECT_EQ(dispatcher_->run_due(clock_.now_ms()), 0);
    // Another tenant cannot read it.
    EXPECT_FALSE(dispatcher_->dead_letters("other", hook.record.id, page_request{}));
}

TEST_F(OutboundWebhooksTest, ARestartMidRetryLosesNothing) {
    make_dispatcher(true);
    auto hook = register_hook(url(), {"node.completed"});
    auto run = make_run();
    answer_ = 503;
    append(run, "node.completed");
    append(run, "node.completed");
    EXPECT_EQ(dispatcher_->run_due(clock_.now_ms()), 2);
    append(run, "node.completed");
    // The third is claimed by a process that dies before answering (lease held, no attempt).
    ASSERT_TRUE(store_->claim_outbound_due(clock_.now_ms(), 10, 10, 60000));

    open_store(); // close and reopen on the same SQLite file
    make_dispatcher(true);
    answer_ = 200;
    clock_.advance(61 * 1000); // past the retry delay and the dead claimer's lease
    drive_until_settled();
    auto ds = deliveries(hook.record.id);
    ASSERT_EQ(ds.size(), 3U);
    for (const auto& d : ds) {
        EXPECT_EQ(d.status, "delivered") << d.id;
    }
    std::set<std::int64_t> delivered;
    auto reqs = server_.requests();
    for (std::size_t i = 2; i < reqs.size(); ++i) {
        auto body = boost::json::parse(reqs[i].body).as_object();
        delivered.insert(body["event"].as_object()["sequence"].as_int64());
    }
    EXPECT_EQ(delivered.size(), 3U);
}

TEST_F(OutboundWebhooksTest, RegistrationRefusesSsrfTargetsAndStoresNothing) {
    make_dispatcher(true);
    for (const char* bad : {"http://hooks.example.com/x", "https://10.0.0.1/x",
                            "https://169.254.169.254/x", "https://localhost/x",
                            "https://metadata.google.internal/x", "https://[::1]/x",
                            "http://localhost:8080/x"}) {
        webhook_registration req;
        req.tenant = "acme";
        req.url = bad;
        req.events = {"run.completed"};
        auto r = dispatcher_->register_webhook(req);
        ASSERT_FALSE(r) << bad;
        EXPECT_EQ(r.error().code, make_error_code(errc::invalid_argument));
        EXPECT_EQ(r.error().field, "url") << bad;
    }
    webhook_registration empty;
    empty.tenant = "acme";
    empty.url = url();
    auto refused = dispatcher_->register_webhook(empty); // events must be non-empty
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().field, "events");
    auto all = dispatcher_->list("acme");
    ASSERT_TRUE(all);
    EXPECT_TRUE(all->empty());
}

TEST_F(OutboundWebhooksTest, BestEffortBreakerOpensAfterFourFailuresAndProbesAfterAnHour) {
    make_dispatcher(false);
    auto hook = register_hook(url(), {"node.completed"});
    auto run = make_run();
    answer_ = 500;
    for (int i = 0; i < 4; ++i) {
        append(run, "node.completed");
        dispatcher_->run_due(clock_.now_ms());
    }
    EXPECT_EQ(server_.requests().size(), 4U);
    clock_.advance(60 * 1000);
    append(run, "node.completed");
    dispatcher_->run_due(clock_.now_ms());
    EXPECT_EQ(server_.requests().size(), 4U) << "open breaker skips";
    clock_.advance(hour);
    append(run, "node.completed"); // half-open: probes, fails, reopens
    dispatcher_->run_due(clock_.now_ms());
    EXPECT_EQ(server_.requests().size(), 5U);
    clock_.advance(60 * 1000);
    append(run, "node.completed");
    dispatcher_->run_due(clock_.now_ms());
    EXPECT_EQ(server_.requests().size(), 5U) << "reopened after a failed probe";
    answer_ = 200;
    clock_.advance(hour);
    append(run, "node.completed"); // probe succeeds: closed
    dispatcher_->run_due(clock_.now_ms());
    EXPECT_EQ(server_.requests().size(), 6U);
    append(run, "node.completed");
    dispatcher_->run_due(clock_.now_ms());
    EXPECT_EQ(server_.requests().size(), 7U);
    int failed = 0;
    int skipped = 0;
    for (const auto& d : deliveries(hook.record.id)) {
        failed += d.status == "failed";
        skipped += d.status == "skipped";
        EXPECT_LE(d.attempts, 1) << "best effort never retries";
    }
    EXPECT_EQ(failed, 5);
    EXPECT_EQ(skipped, 2);
}

TEST_F(OutboundWebhooksTest, BestEffortHundredFailuresInSevenDaysMarkTheSubscriptionFailed) {
    make_dispatcher(false);
    auto hook = register_hook(url(), {"node.completed"});
    auto run = make_run();
    answer_ = 500;
    for (int i = 0; i < 100; ++i) {
        append(run, "node.completed");
        dispatcher_->run_due(clock_.now_ms());
        clock_.advance(hour + 1); // the breaker lets one probe through per hour
    }
    EXPECT_EQ(server_.requests().size(), 100U); // 100 failures in ~4 days
    auto w = dispatcher_->get("acme", hook.record.id);
    ASSERT_TRUE(w);
    EXPECT_EQ(w->state, sub_state::failed);
    auto changes = dispatcher_->state_changes("acme", hook.record.id);
    ASSERT_TRUE(changes);
    ASSERT_EQ(changes->size(), 1U);
    EXPECT_EQ(changes->front().to, sub_state::failed);
    append(run, "node.completed");
    EXPECT_EQ(dispatcher_->run_due(clock_.now_ms()), 0); // failed: nothing more is sent
}

TEST_F(OutboundWebhooksTest, ASlowSubscriberDoesNotDelayAnother) {
    testing_http slow([](const http_request&) {
        http_response r;
        r.delay = std::chrono::milliseconds(4000);
        return r;
    });
    make_dispatcher(false);
    register_hook(slow.base_url() + "/slow", {"node.completed"});
    register_hook(url(), {"node.completed"});
    auto run = make_run();
    dispatcher_->start();
    auto began = std::chrono::steady_clock::now();
    append(run, "node.completed");
    eventually([&] { return !server_.requests().empty(); }, std::chrono::seconds(10));
    auto waited = std::chrono::steady_clock::now() - began;
    ASSERT_EQ(server_.requests().size(), 1U);
    EXPECT_LT(waited, std::chrono::milliseconds(3000)) << "the fast subscriber waited on the slow";
    dispatcher_->stop();
    slow.stop();
}

} // namespace
} // namespace wopbridge::outbound::outbound_webhooks_test
