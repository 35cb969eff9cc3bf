// The store contract, run against every backend (SQLite, PostgreSQL). A backend joins by adding a
// store_backend to the INSTANTIATE_TEST_SUITE_P list at the bottom.
#include "store/store.hpp"
#include "support/eventually.hpp"
#include "support/postgres_server.hpp"
#include "support/temp_dir.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <future>
#include <latch>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace wopbridge {
namespace {

using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;
using testing::temp_dir;

constexpr millis t0 = 1767225600000;
constexpr auto wait_limit = std::chrono::seconds(30);

struct store_backend {
    std::string name;
    // Opens (or reopens: same data) the store kept in `dir`.
    std::function<result<std::unique_ptr<store>>(const temp_dir&)> open;
    // Makes the stored data read-only at the storage level and opens it again.
    std::function<result<std::unique_ptr<store>>(const temp_dir&)> open_read_only;
    // Non-empty: why this backend cannot run here (its tests skip).
    std::function<std::string()> unavailable = [] { return std::string{}; };
};

std::ostream& operator<<(std::ostream& os, const store_backend& b) {
    return os << b.name;
}

store_backend sqlite_backend() {
    store_backend b;
    b.name = "sqlite";
    b.open = [](const temp_dir& dir) {
        return open_sqlite_store(sqlite_options{dir.file("bridge.db")});
    };
    b.open_read_only = [](const temp_dir& dir) -> result<std::unique_ptr<store>> {
        std::string path = dir.file("bridge.db");
        std::filesystem::permissions(path, std::filesystem::perms::owner_read |
                                               std::filesystem::perms::group_read |
                                               std::filesystem::perms::others_read);
        // root ignores file modes; asking SQLite for a read-only handle gives the same failure.
        if (::geteuid() == 0) {
            path = "file:" + path + "?mode=ro";
        }
        return open_sqlite_store(sqlite_options{path});
    };
    return b;
}

// PostgreSQL: one server per test binary run; each test's temp dir maps to a fresh database, so a
// reopen (same dir) sees the same data.
std::string postgres_database_for(const temp_dir& dir) {
    static std::mutex mu;
    static std::map<std::string, std::string> databases;
    std::lock_guard lock(mu);
    auto& name = databases[dir.path().string()];
    if (name.empty()) {
        name = testing::postgres_server::shared()->create_database();
    }
    return name;
}

store_backend postgres_backend() {
    store_backend b;
    b.name = "postgres";
    b.open = [](const temp_dir& dir) -> result<std::unique_ptr<store>> {
        auto* server = testing::postgres_server::shared();
        error_info why;
        auto s = open_postgres_store(postgres_options{server->url(postgres_database_for(dir))},
                                     why);
        EXPECT_TRUE(s) << why.message;
        return s;
    };
    b.open_read_only = [](const temp_dir& dir) -> result<std::unique_ptr<store>> {
        auto* server = testing::postgres_server::shared();
        const std::string db = postgres_database_for(dir);
        // New sessions of this database can no longer write: the server-side read-only mode.
        EXPECT_TRUE(server->sql("postgres", "ALTER DATABASE " + db +
                                                " SET default_transaction_read_only = on"));
        error_info why;
        return open_postgres_store(postgres_options{server->url(db)}, why);
    };
    b.unavailable = [] {
        return testing::postgres_server::shared() == nullptr
                   ? testing::postgres_server::shared_unavailable_reason()
                   : std::string{};
    };
    return b;
}

class completion_counter {
  public:
    void done() {
        std::lock_guard lock(mu_);
        ++count_;
        cv_.notify_all();
    }
    bool wait_for(int n) {
        std::unique_lock lock(mu_);
        return cv_.wait_for(lock, wait_limit, [&] { return count_ >= n; });
    }

  private:
    std::mutex mu_;
    std::condition_variable cv_;
    int count_ = 0;
};

class StoreContractTest : public ::testing::TestWithParam<store_backend> {
  protected:
    void SetUp() override {
        if (auto why = GetParam().unavailable(); !why.empty()) {
            GTEST_SKIP() << GetParam().name << " backend unavailable: " << why;
        }
        open();
    }

    void open() {
        store_.reset();
        auto s = GetParam().open(dir_);
        ASSERT_TRUE(s) << s.error().message();
        store_ = std::move(*s);
    }

    static subscription make_subscription(const std::string& id,
                                          sub_state state = sub_state::active) {
        subscription s;
        s.id = id;
        s.tenant = "acme";
        s.state = state;
        s.workflow_id = "wf_orders";
        s.webhook_id = "wh_" + id;
        s.secret_fingerprint = "fp-0123456789abcdef";
        s.sealed_secret = "sealed:AAAA";
        s.created_at = t0;
        s.updated_at = t0;
        return s;
    }

    void add_subscription(const std::string& id, sub_state state = sub_state::active) {
        ASSERT_TRUE(store_->insert_subscription(make_subscription(id, state)));
    }

    static intake_request make_intake(const std::string& sub, const std::string& key,
                                      const std::string& suffix, millis at = t0) {
        intake_request r;
        r.subscription_id = sub;
        r.tenant = "acme";
        r.dedup_key = key;
        r.delivery_id = "dlv_" + suffix;
        r.run_id = "run_" + suffix;
        r.received_at = at;
        r.due_at = at;
        r.content_json = R"({"body":"secret content )" + suffix + R"("})";
        r.dedup_expires_at = at + 24 * 3600 * 1000;
        return r;
    }

    intake_outcome must_intake(intake_request r) {
        auto out = store_->intake_sync(std::move(r));
        EXPECT_TRUE(out) << out.error().message();
        return out ? *out : intake_outcome{};
    }

    static attempt_record base_record(const delivery& d, int attempt, attempt_outcome outcome,
                                      millis at) {
        attempt_record rec;
        rec.delivery_id = d.id;
        rec.subscription_id = d.subscription_id;
        rec.at = at;
        rec.attempt = {d.subscription_id, d.dedup_key, attempt, outcome, {}};
        rec.attempt_event_id = "evt_att_" + d.id + "_" + std::to_string(attempt);
        return rec;
    }

    static attempt_record delivered_record(const delivery& d, int attempt, millis at) {
        auto rec = base_record(d, attempt, attempt_outcome::delivered, at);
        rec.attempt.run_id = d.run_id;
        rec.run = run_record{
            d.run_id, d.tenant, "wf_orders", d.subscription_id, d.id, run_status::running,
            "",       at,       at};
        rec.run_started_event_id = "evt_start_" + d.id;
        rec.run_started_payload_json = R"({"workflowId":"wf_orders"})";
        return rec;
    }

    std::vector<delivery> claim(millis now, int limit = 100, millis lease = 60000) {
        auto c = store_->claim_due(now, limit, lease);
        EXPECT_TRUE(c) << c.error().message();
        return c ? *c : std::vector<delivery>{};
    }

    static std::vector<std::string> ids(const std::vector<delivery>& ds) {
        std::vector<std::string> out;
        for (const auto& d : ds) {
            out.push_back(d.id);
        }
        return out;
    }

    static boost::json::value json(const std::string& text) { return boost::json::parse(text); }

    temp_dir dir_;
    std::unique_ptr<store> store_;
};

TEST_P(StoreContractTest, SubscriptionCrudRoundTrips) {
    auto s = make_subscription("sub_a");
    s.source = source_kind::schedule;
    s.schedule = schedule_spec{"@every 5m", "Europe/Berlin"};
    s.connector = "slack";
    s.connector_settings_json = R"({"channel":"C1"})";
    s.retry.max_attempts = 3;
    s.retry.backoff = backoff_kind::fixed;
    s.verification = verification_mode::best_effort;
    s.origin = subscription::origin_kind::config;
    ASSERT_TRUE(store_->insert_subscription(s));
    EXPECT_EQ(store_->insert_subscription(s).error(), errc::already_exists);

    auto got = store_->get_subscription("sub_a");
    ASSERT_TRUE(got);
    EXPECT_EQ(got->source, source_kind::schedule);
    ASSERT_TRUE(got->schedule);
    EXPECT_EQ(got->schedule->cron, "@every 5m");
    EXPECT_EQ(got->schedule->time_zone, "Europe/Berlin");
    EXPECT_EQ(got->sealed_secret, "sealed:AAAA");
    EXPECT_EQ(got->connector_settings_json, R"({"channel":"C1"})");
    EXPECT_EQ(got->retry.max_attempts, 3);
    EXPECT_EQ(got->retry.backoff, backoff_kind::fixed);
    EXPECT_EQ(got->verification, verification_mode::best_effort);
    EXPECT_EQ(got->origin, subscription::origin_kind::config);

    auto other = make_subscription("sub_b");
    other.tenant = "globex";
    ASSERT_TRUE(store_->insert_subscription(other));
    auto acme = store_->list_subscriptions("acme");
    ASSERT_TRUE(acme);
    ASSERT_EQ(acme->size(), 1u);
    EXPECT_EQ((*acme)[0].id, "sub_a");
    auto all = store_->list_all_subscriptions();
    ASSERT_TRUE(all);
    EXPECT_EQ(all->size(), 2u);

    ASSERT_TRUE(store_->delete_subscription("sub_a"));
    EXPECT_EQ(store_->get_subscription("sub_a").error(), errc::not_found);
    EXPECT_EQ(store_->delete_subscription("sub_a").error(), errc::not_found);
}

TEST_P(StoreContractTest, ConfigUpsertKeepsStateAndBreaker) {
    auto s = make_subscription("sub_cfg");
    s.origin = subscription::origin_kind::config;
    ASSERT_TRUE(store_->upsert_config_subscription(s)); // inserts when new
    ASSERT_TRUE(store_->change_state({"sub_cfg", source_kind::webhook, sub_state::active,
                                      sub_state::paused, state_reason::operator_paused},
                                     "evt_sc_1", t0 + 1));

    s.workflow_id = "wf_new";
    s.sealed_secret = "sealed:BBBB";
    s.state = sub_state::active;
    s.updated_at = t0 + 5;
    ASSERT_TRUE(store_->upsert_config_subscription(s));
    auto got = store_->get_subscription("sub_cfg");
    ASSERT_TRUE(got);
    EXPECT_EQ(got->workflow_id, "wf_new");
    EXPECT_EQ(got->sealed_secret, "sealed:BBBB");
    EXPECT_EQ(got->state, sub_state::paused);
    EXPECT_EQ(got->created_at, t0);
    EXPECT_EQ(got->updated_at, t0 + 5);
}

// whenNotActive: hold and refuse both survive insert, reads, the config upsert and a reopen.
TEST_P(StoreContractTest, WhenNotActiveRoundTrips) {
    auto held = make_subscription("sub_hold");
    held.hold_when_not_active = true;
    ASSERT_TRUE(store_->insert_subscription(held));
    add_subscription("sub_refuse");
    auto hold_of = [&](const std::string& id) {
        auto got = store_->get_subscription(id);
        EXPECT_TRUE(got) << id;
        return got ? got->hold_when_not_active : false;
    };
    EXPECT_TRUE(hold_of("sub_hold"));
    EXPECT_FALSE(hold_of("sub_refuse"));
    auto listed = store_->list_subscriptions("acme");
    ASSERT_TRUE(listed);
    ASSERT_EQ(listed->size(), 2u);
    EXPECT_TRUE((*listed)[0].hold_when_not_active);  // sub_hold
    EXPECT_FALSE((*listed)[1].hold_when_not_active); // sub_refuse
    auto all = store_->list_all_subscriptions();
    ASSERT_TRUE(all);
    ASSERT_EQ(all->size(), 2u);
    EXPECT_TRUE((*all)[0].hold_when_not_active);

    // The config upsert changes it both ways.
    held.hold_when_not_active = false;
    ASSERT_TRUE(store_->upsert_config_subscription(held));
    EXPECT_FALSE(hold_of("sub_hold"));
    auto refusing = make_subscription("sub_refuse");
    refusing.hold_when_not_active = true;
    ASSERT_TRUE(store_->upsert_config_subscription(refusing));
    EXPECT_TRUE(hold_of("sub_refuse"));

    open();
    EXPECT_FALSE(hold_of("sub_hold"));
    EXPECT_TRUE(hold_of("sub_refuse"));
}

// Held while paused, resumed: the held events are claimed in arrival order, before anything that
// arrived after the resume, and each is delivered once.
TEST_P(StoreContractTest, HeldEventsAreDeliveredInArrivalOrderOnResume) {
    auto s = make_subscription("sub_a", sub_state::paused);
    s.hold_when_not_active = true;
    ASSERT_TRUE(store_->insert_subscription(s));
    for (int i = 0; i < 5; ++i) {
        auto r = make_intake("sub_a", "k" + std::to_string(i), std::to_string(i), t0 + i);
        r.hold = store_->get_subscription("sub_a")->hold_when_not_active;
        EXPECT_EQ(must_intake(r).status, intake_status::held);
    }
    ASSERT_TRUE(store_->change_state(
        {"sub_a", source_kind::webhook, sub_state::paused, sub_state::active, state_reason::none},
        "evt_resume", t0 + 100));
    // The bridge releases at the instant of the resume; an event arriving after it (it may commit
    // before the release does) is due later than every held one.
    must_intake(make_intake("sub_a", "k_after", "after", t0 + 101));
    ASSERT_EQ(*store_->release_held("sub_a", t0 + 100), 5);
    EXPECT_EQ(*store_->release_held("sub_a", t0 + 103), 0); // released once

    std::vector<std::string> order;
    for (int round = 0; round < 6; ++round) {
        auto got = claim(t0 + 200 + round, 1);
        ASSERT_EQ(got.size(), 1u) << "round " << round;
        order.push_back(got[0].id);
        ASSERT_TRUE(store_->record_attempt(delivered_record(got[0], 1, t0 + 200 + round)));
    }
    EXPECT_THAT(order, ElementsAre("dlv_0", "dlv_1", "dlv_2", "dlv_3", "dlv_4", "dlv_after"));
    EXPECT_TRUE(claim(t0 + 1000).empty());
    for (const auto& id : order) {
        EXPECT_EQ(store_->get_delivery(id)->status, delivery_status::delivered) << id;
    }
}

TEST_P(StoreContractTest, IntakeAcceptedThenDuplicateReturnsOriginalIds) {
    add_subscription("sub_a");
    auto first = must_intake(make_intake("sub_a", "k1", "1"));
    EXPECT_EQ(first.status, intake_status::accepted);
    EXPECT_EQ(first.delivery_id, "dlv_1");
    EXPECT_EQ(first.run_id, "run_1");

    auto again = must_intake(make_intake("sub_a", "k1", "2", t0 + 1000));
    EXPECT_EQ(again.status, intake_status::duplicate);
    EXPECT_EQ(again.delivery_id, "dlv_1");
    EXPECT_EQ(again.run_id, "run_1");
    EXPECT_EQ(store_->get_delivery("dlv_2").error(), errc::not_found);

    // Same key on another subscription is not a duplicate.
    add_subscription("sub_b");
    EXPECT_EQ(must_intake(make_intake("sub_b", "k1", "3")).status, intake_status::accepted);

    auto d = store_->get_delivery("dlv_1");
    ASSERT_TRUE(d);
    EXPECT_EQ(d->status, delivery_status::pending);
    EXPECT_EQ(d->dedup_key, "k1");
    auto content = store_->delivery_content("dlv_1");
    ASSERT_TRUE(content);
    EXPECT_EQ(*content, R"({"body":"secret content 1"})");
}

TEST_P(StoreContractTest, IntakeForUnknownSubscriptionIsNotFound) {
    auto out = store_->intake_sync(make_intake("sub_missing", "k", "1"));
    ASSERT_FALSE(out);
    EXPECT_EQ(out.error(), errc::not_found);
}

TEST_P(StoreContractTest, ConcurrentSameKeyAcceptsExactlyOnce) {
    add_subscription("sub_a");
    constexpr int threads = 8;
    std::latch start(threads);
    std::vector<result<intake_outcome>> outcomes(threads, errc::internal);
    std::vector<std::thread> pool;
    for (int i = 0; i < threads; ++i) {
        pool.emplace_back([&, i] {
            start.arrive_and_wait();
            outcomes[i] = store_->intake_sync(make_intake("sub_a", "same", std::to_string(i)));
        });
    }
    for (auto& t : pool) {
        t.join();
    }
    int accepted = 0;
    std::set<std::string> run_ids;
    std::set<std::string> delivery_ids;
    for (const auto& o : outcomes) {
        ASSERT_TRUE(o) << o.error().message();
        accepted += o->status == intake_status::accepted ? 1 : 0;
        run_ids.insert(o->run_id);
        delivery_ids.insert(o->delivery_id);
    }
    EXPECT_EQ(accepted, 1);
    EXPECT_EQ(run_ids.size(), 1u);
    EXPECT_EQ(delivery_ids.size(), 1u);
    auto page = store_->list_deliveries("sub_a", {});
    ASSERT_TRUE(page);
    EXPECT_EQ(page->items.size(), 1u);
}

TEST_P(StoreContractTest, DedupDisabledAcceptsEveryRepeat) {
    add_subscription("sub_a");
    auto r1 = make_intake("sub_a", "k", "1");
    r1.dedup_enabled = false;
    auto r2 = make_intake("sub_a", "k", "2");
    r2.dedup_enabled = false;
    EXPECT_EQ(must_intake(r1).status, intake_status::accepted);
    EXPECT_EQ(must_intake(r2).status, intake_status::accepted);
    // No dedup row was written: a later dedup-enabled intake of the key is new.
    EXPECT_EQ(must_intake(make_intake("sub_a", "k", "3")).status, intake_status::accepted);
}

TEST_P(StoreContractTest, ExpiredDedupRowIsReplaced) {
    add_subscription("sub_a");
    auto r1 = make_intake("sub_a", "k", "1");
    r1.dedup_expires_at = t0 + 1000;
    ASSERT_EQ(must_intake(r1).status, intake_status::accepted);
    // Still within retention at exactly the expiry instant.
    EXPECT_EQ(must_intake(make_intake("sub_a", "k", "2", t0 + 1000)).status,
              intake_status::duplicate);
    auto late = must_intake(make_intake("sub_a", "k", "3", t0 + 1001));
    EXPECT_EQ(late.status, intake_status::accepted);
    EXPECT_EQ(late.run_id, "run_3");
    auto after = must_intake(make_intake("sub_a", "k", "4", t0 + 1002));
    EXPECT_EQ(after.status, intake_status::duplicate);
    EXPECT_EQ(after.delivery_id, "dlv_3");
}

TEST_P(StoreContractTest, HeldIntakeIsReleasedInArrivalOrder) {
    add_subscription("sub_a", sub_state::paused);
    for (int i = 0; i < 3; ++i) {
        auto r = make_intake("sub_a", "k" + std::to_string(i), std::to_string(i), t0 + i);
        r.hold = true;
        r.due_at = t0 + 100 - i; // later arrivals would be due earlier: release must not care
        EXPECT_EQ(must_intake(r).status, intake_status::held);
    }
    EXPECT_EQ(store_->get_delivery("dlv_0")->status, delivery_status::held);
    ASSERT_TRUE(store_->change_state(
        {"sub_a", source_kind::webhook, sub_state::paused, sub_state::active, state_reason::none},
        "evt_sc", t0 + 200));
    EXPECT_TRUE(claim(t0 + 1000).empty()); // held rows are never claimed

    auto released = store_->release_held("sub_a", t0 + 300);
    ASSERT_TRUE(released);
    EXPECT_EQ(*released, 3);
    EXPECT_THAT(ids(claim(t0 + 300)), ElementsAre("dlv_0", "dlv_1", "dlv_2"));
}

TEST_P(StoreContractTest, ClaimDueRespectsSubscriptionState) {
    add_subscription("sub_active");
    add_subscription("sub_paused", sub_state::paused);
    add_subscription("sub_dead", sub_state::dead_lettered);
    auto failed = make_subscription("sub_failed", sub_state::failed);
    failed.next_probe_at = t0 + 5000;
    ASSERT_TRUE(store_->insert_subscription(failed));
    for (const auto* sub : {"sub_active", "sub_paused", "sub_dead", "sub_failed"}) {
        for (int i = 0; i < 2; ++i) {
            std::string suffix = std::string(sub) + "_" + std::to_string(i);
            must_intake(make_intake(sub, "k" + std::to_string(i), suffix, t0 + i));
        }
    }
    auto first = claim(t0 + 10);
    EXPECT_THAT(ids(first), ElementsAre("dlv_sub_active_0", "dlv_sub_active_1"));
    for (const auto& d : first) {
        EXPECT_EQ(d.status, delivery_status::in_flight);
        EXPECT_EQ(d.attempts, 0);
    }
    // Past the probe time: exactly one probe of the failed subscription, never paused/dead ones.
    EXPECT_THAT(ids(claim(t0 + 5000)), ElementsAre("dlv_sub_failed_0"));
    EXPECT_TRUE(claim(t0 + 5001).empty()); // the probe is in flight
    EXPECT_EQ(store_->get_delivery("dlv_sub_paused_0")->status, delivery_status::pending);
    EXPECT_EQ(store_->get_delivery("dlv_sub_dead_1")->status, delivery_status::pending);
}

TEST_P(StoreContractTest, ExpiredLeaseIsReclaimed) {
    add_subscription("sub_a");
    must_intake(make_intake("sub_a", "k", "1"));
    ASSERT_EQ(claim(t0, 10, 1000).size(), 1u);
    EXPECT_TRUE(claim(t0 + 999).empty());
    auto again = claim(t0 + 1000);
    ASSERT_EQ(again.size(), 1u);
    EXPECT_EQ(again[0].id, "dlv_1");
    EXPECT_EQ(again[0].attempts, 0);
}

TEST_P(StoreContractTest, NextDueAtIgnoresUnclaimableDeliveries) {
    add_subscription("sub_a");
    add_subscription("sub_p", sub_state::paused);
    EXPECT_FALSE(store_->next_due_at()->has_value());
    must_intake(make_intake("sub_p", "k", "p", t0));
    EXPECT_FALSE(store_->next_due_at()->has_value());
    must_intake(make_intake("sub_a", "k", "a", t0 + 50));
    EXPECT_EQ(store_->next_due_at()->value_or(0), t0 + 50);
}

TEST_P(StoreContractTest, NextDueAtTakesEachSubscriptionsEarliestPendingDelivery) {
    add_subscription("sub_a");
    add_subscription("sub_b");
    // Out of arrival order: the earliest due time wins, not the first or last row.
    must_intake(make_intake("sub_a", "k1", "a1", t0 + 300));
    must_intake(make_intake("sub_a", "k2", "a2", t0 + 100));
    must_intake(make_intake("sub_b", "k1", "b1", t0 + 200));
    EXPECT_EQ(store_->next_due_at()->value_or(0), t0 + 100);
    // Claiming a2 leaves the lease (t0 + 100 + 1000) and the other pending rows.
    EXPECT_THAT(ids(claim(t0 + 100, 1, 1000)), ElementsAre("dlv_a2"));
    EXPECT_EQ(store_->next_due_at()->value_or(0), t0 + 200);
    EXPECT_THAT(ids(claim(t0 + 300, 10, 1000)), ElementsAre("dlv_b1", "dlv_a1"));
    // Only leases are left: the earliest expiry is the next due time.
    EXPECT_EQ(store_->next_due_at()->value_or(0), t0 + 1100);
}

TEST_P(StoreContractTest, NextDueAtWaitsForProbeTimeAndInFlightProbe) {
    auto failed = make_subscription("sub_f", sub_state::failed);
    failed.next_probe_at = t0 + 5000;
    ASSERT_TRUE(store_->insert_subscription(failed));
    add_subscription("sub_p", sub_state::paused);
    must_intake(make_intake("sub_p", "k", "p", t0));
    must_intake(make_intake("sub_f", "k1", "f1", t0));
    must_intake(make_intake("sub_f", "k2", "f2", t0 + 10));
    // Pending since t0, but a failed subscription is only probed at its probe time.
    EXPECT_EQ(store_->next_due_at()->value_or(0), t0 + 5000);
    EXPECT_TRUE(claim(t0 + 4999).empty());
    EXPECT_THAT(ids(claim(t0 + 5000, 10, 1000)), ElementsAre("dlv_f1"));
    // The probe is in flight: the next pending row waits, only the probe's lease counts.
    EXPECT_EQ(store_->next_due_at()->value_or(0), t0 + 6000);
    EXPECT_TRUE(claim(t0 + 5999).empty());
    // The lease ran out: the expired probe is the one taken again, still one at a time.
    EXPECT_THAT(ids(claim(t0 + 6000, 10, 1000)), ElementsAre("dlv_f1"));
}

TEST_P(StoreContractTest, NextDueAtOfFailedSubscriptionIsItsLaterPendingDueTime) {
    auto failed = make_subscription("sub_f", sub_state::failed);
    failed.next_probe_at = t0 + 5000;
    ASSERT_TRUE(store_->insert_subscription(failed));
    must_intake(make_intake("sub_f", "k1", "f1", t0 + 7000));
    EXPECT_EQ(store_->next_due_at()->value_or(0), t0 + 7000);
    EXPECT_TRUE(claim(t0 + 6999).empty());
    EXPECT_THAT(ids(claim(t0 + 7000)), ElementsAre("dlv_f1"));
}

TEST_P(StoreContractTest, ClaimDueTakesTheOldestAcrossSubscriptionsUpToTheLimit) {
    add_subscription("sub_a");
    add_subscription("sub_b");
    add_subscription("sub_c");
    for (int i = 0; i < 5; ++i) {
        auto n = std::to_string(i);
        must_intake(make_intake("sub_a", "k" + n, "a" + n, t0 + 10 * i));
        must_intake(make_intake("sub_b", "k" + n, "b" + n, t0 + 10 * i + 5));
    }
    must_intake(make_intake("sub_c", "k", "c", t0 + 1000)); // not yet due
    EXPECT_THAT(ids(claim(t0 + 500, 3)), ElementsAre("dlv_a0", "dlv_b0", "dlv_a1"));
    EXPECT_THAT(ids(claim(t0 + 500, 4)), ElementsAre("dlv_b1", "dlv_a2", "dlv_b2", "dlv_a3"));
    EXPECT_THAT(ids(claim(t0 + 500)), ElementsAre("dlv_b3", "dlv_a4", "dlv_b4"));
    EXPECT_THAT(ids(claim(t0 + 1000)), ElementsAre("dlv_c"));
}

TEST_P(StoreContractTest, ClaimDueTakesTurnsAcrossSubscriptions) {
    // A backlog of older due rows in one subscription does not take every slot: each claim gives
    // every subscription its oldest due row before any gets its second.
    add_subscription("sub_noisy");
    add_subscription("sub_quiet");
    for (int i = 0; i < 6; ++i) {
        auto n = std::to_string(i);
        must_intake(make_intake("sub_noisy", "k" + n, "n" + n, t0 + i));
    }
    must_intake(make_intake("sub_quiet", "k0", "q0", t0 + 100));
    must_intake(make_intake("sub_quiet", "k1", "q1", t0 + 101));
    EXPECT_THAT(ids(claim(t0 + 500, 3)), UnorderedElementsAre("dlv_n0", "dlv_q0", "dlv_n1"));
    EXPECT_THAT(ids(claim(t0 + 500, 2)), UnorderedElementsAre("dlv_n2", "dlv_q1"));
    EXPECT_THAT(ids(claim(t0 + 500)), UnorderedElementsAre("dlv_n3", "dlv_n4", "dlv_n5"));
}

TEST_P(StoreContractTest, DeliveredAttemptStartsTheRunLog) {
    add_subscription("sub_a");
    must_intake(make_intake("sub_a", "k", "1"));
    auto claimed = claim(t0);
    ASSERT_EQ(claimed.size(), 1u);
    auto rec = delivered_record(claimed[0], 1, t0 + 10);
    rec.extra_run_events = {{"run.completed", R"({"exitCode":0})"}};
    ASSERT_TRUE(store_->record_attempt(rec));

    auto events = store_->run_events_after("run_1", -1, 100);
    ASSERT_TRUE(events);
    ASSERT_EQ(events->size(), 3u);
    const auto& attempted = (*events)[0];
    EXPECT_EQ(attempted.sequence, 0);
    EXPECT_EQ(attempted.type, "trigger.delivery.attempted");
    EXPECT_EQ(attempted.event_id, rec.attempt_event_id);
    EXPECT_EQ(json(attempted.payload_json),
              json(R"({"subscriptionId":"sub_a","dedupKey":"k","attempt":1,)"
                   R"("outcome":"delivered","runId":"run_1"})"));
    const auto& started = (*events)[1];
    EXPECT_EQ(started.sequence, 1);
    EXPECT_EQ(started.type, "run.started");
    EXPECT_EQ(started.event_id, "evt_start_dlv_1");
    EXPECT_EQ(started.causation_id, rec.attempt_event_id);
    EXPECT_EQ(started.run_id, "run_1");
    EXPECT_EQ((*events)[2].sequence, 2);
    EXPECT_EQ((*events)[2].type, "run.completed");
    EXPECT_EQ((*events)[2].event_id, "evt_start_dlv_1.1"); // derived id (no explicit one given)

    EXPECT_EQ(store_->get_delivery("dlv_1")->status, delivery_status::delivered);
    EXPECT_EQ(store_->get_run("run_1")->status, run_status::running);
    EXPECT_TRUE(store_->subscription_events("sub_a")->empty());
    // The delivery is settled: a second record (e.g. from a claimer whose lease expired) conflicts.
    EXPECT_EQ(store_->record_attempt(rec).error(), errc::conflict);
    // Duplicates now point at the started run.
    EXPECT_EQ(must_intake(make_intake("sub_a", "k", "2")).run_id, "run_1");
}

TEST_P(StoreContractTest, RetryingAttemptSurvivesRestart) {
    add_subscription("sub_a");
    must_intake(make_intake("sub_a", "k", "1"));
    auto claimed = claim(t0);
    ASSERT_EQ(claimed.size(), 1u);
    auto rec = base_record(claimed[0], 1, attempt_outcome::retrying, t0 + 10);
    rec.next_due_at = t0 + 5000;
    rec.error = "upstream 503";
    rec.consecutive_failures = 1;
    ASSERT_TRUE(store_->record_attempt(rec));

    open(); // restart: a fresh store over the same file
    auto d = store_->get_delivery("dlv_1");
    ASSERT_TRUE(d);
    EXPECT_EQ(d->status, delivery_status::pending);
    EXPECT_EQ(d->attempts, 1);
    EXPECT_EQ(d->due_at, t0 + 5000);
    EXPECT_EQ(d->last_error, "upstream 503");
    EXPECT_EQ(store_->get_subscription("sub_a")->consecutive_failures, 1);
    auto events = store_->subscription_events("sub_a");
    ASSERT_TRUE(events);
    ASSERT_EQ(events->size(), 1u);
    EXPECT_EQ(json((*events)[0].payload_json),
              json(R"({"subscriptionId":"sub_a","dedupKey":"k","attempt":1,)"
                   R"("outcome":"retrying"})"));
    EXPECT_TRUE(claim(t0 + 4999).empty());
    auto retry = claim(t0 + 5000);
    ASSERT_EQ(retry.size(), 1u);
    EXPECT_EQ(retry[0].attempts, 1);
}

TEST_P(StoreContractTest, DeadLetteredAttemptWritesDeadLetterAndStateChange) {
    add_subscription("sub_a");
    must_intake(make_intake("sub_a", "k", "1"));
    auto claimed = claim(t0);
    ASSERT_EQ(claimed.size(), 1u);
    auto rec = base_record(claimed[0], 8, attempt_outcome::dead_lettered, t0 + 10);
    rec.error = "upstream 500";
    rec.state_change_caused = state_change{"sub_a", source_kind::webhook, sub_state::active,
                                           sub_state::dead_lettered, state_reason::retry_exhausted};
    rec.state_change_event_id = "evt_sc_1";
    rec.dead_letter_expires_at = t0 + 1000000;
    ASSERT_TRUE(store_->record_attempt(rec));

    EXPECT_EQ(store_->get_subscription("sub_a")->state, sub_state::dead_lettered);
    EXPECT_EQ(store_->get_delivery("dlv_1")->status, delivery_status::dead_lettered);
    auto events = store_->subscription_events("sub_a");
    ASSERT_TRUE(events);
    ASSERT_EQ(events->size(), 2u);
    EXPECT_EQ((*events)[0].sequence, 0);
    EXPECT_EQ((*events)[0].event_id, rec.attempt_event_id);
    EXPECT_EQ(json((*events)[0].payload_json),
              json(R"({"subscriptionId":"sub_a","dedupKey":"k","attempt":8,)"
                   R"("outcome":"dead-lettered"})"));
    EXPECT_EQ((*events)[1].sequence, 1);
    EXPECT_EQ((*events)[1].type, "trigger.subscription.state.changed");
    EXPECT_EQ((*events)[1].event_id, "evt_sc_1");
    EXPECT_EQ(json((*events)[1].payload_json),
              json(R"({"subscriptionId":"sub_a","source":"webhook","fromState":"active",)"
                   R"("toState":"dead-lettered","reason":"retry-exhausted"})"));

    auto letters = store_->list_dead_letters("sub_a", {}, t0 + 20);
    ASSERT_TRUE(letters);
    ASSERT_EQ(letters->items.size(), 1u);
    const auto& dl = letters->items[0];
    EXPECT_EQ(dl.reason, dead_letter_reason::retries_exhausted);
    EXPECT_EQ(dl.attempt_event_id, rec.attempt_event_id);
    EXPECT_EQ(dl.attempt.attempt, 8);
    EXPECT_EQ(dl.attempt.outcome, attempt_outcome::dead_lettered);
    EXPECT_EQ(dl.delivery_id, "dlv_1");
    EXPECT_EQ(dl.expires_at, t0 + 1000000);
    ASSERT_TRUE(dl.caused_state_change);
    EXPECT_EQ(dl.caused_state_change->to, sub_state::dead_lettered);
    EXPECT_EQ(dl.caused_state_change->reason, state_reason::retry_exhausted);
}

TEST_P(StoreContractTest, StateChangeConflictInAttemptRollsBackEverything) {
    add_subscription("sub_a");
    must_intake(make_intake("sub_a", "k", "1"));
    auto claimed = claim(t0);
    ASSERT_EQ(claimed.size(), 1u);
    auto rec = base_record(claimed[0], 8, attempt_outcome::dead_lettered, t0 + 10);
    rec.consecutive_failures = 8;
    rec.state_change_caused = state_change{"sub_a", source_kind::webhook, sub_state::paused,
                                           sub_state::dead_lettered, state_reason::retry_exhausted};
    rec.state_change_event_id = "evt_sc_1";
    rec.dead_letter_expires_at = t0 + 1000000;
    EXPECT_EQ(store_->record_attempt(rec).error(), errc::conflict);

    EXPECT_EQ(store_->get_delivery("dlv_1")->status, delivery_status::in_flight);
    EXPECT_EQ(store_->get_subscription("sub_a")->state, sub_state::active);
    EXPECT_EQ(store_->get_subscription("sub_a")->consecutive_failures, 0);
    EXPECT_TRUE(store_->subscription_events("sub_a")->empty());
    EXPECT_TRUE(store_->list_dead_letters("sub_a", {}, t0)->items.empty());
}

TEST_P(StoreContractTest, RecordAttemptsCommitsABatchAndIsolatesAFailingRecord) {
    add_subscription("sub_a");
    add_subscription("sub_b");
    for (int i = 1; i <= 4; ++i) {
        must_intake(make_intake(i % 2 ? "sub_a" : "sub_b", "k" + std::to_string(i),
                                std::to_string(i)));
    }
    auto claimed = claim(t0);
    ASSERT_EQ(claimed.size(), 4u);
    std::map<std::string, delivery> by_id;
    for (const auto& d : claimed) {
        by_id[d.id] = d;
    }
    // dlv_2 is settled first (as by a claimer whose lease expired): its batched record conflicts.
    ASSERT_TRUE(store_->record_attempt(delivered_record(by_id["dlv_2"], 1, t0 + 5)));
    const auto commits_before = store_->stats().commits;

    auto retrying = base_record(by_id["dlv_3"], 1, attempt_outcome::retrying, t0 + 10);
    retrying.next_due_at = t0 + 5000;
    retrying.consecutive_failures = 1;
    retrying.error = "upstream 503";
    std::vector<attempt_record> batch{delivered_record(by_id["dlv_1"], 1, t0 + 10),
                                      delivered_record(by_id["dlv_2"], 1, t0 + 10), retrying,
                                      delivered_record(by_id["dlv_4"], 1, t0 + 10)};
    auto out = store_->record_attempts(batch);
    ASSERT_EQ(out.size(), 4u);
    EXPECT_TRUE(out[0]);
    EXPECT_EQ(out[1].error(), errc::conflict);
    EXPECT_TRUE(out[2]);
    EXPECT_TRUE(out[3]);
    EXPECT_GT(store_->stats().commits, commits_before);

    for (const char* run : {"run_1", "run_4"}) {
        auto events = store_->run_events_after(run, -1, 100);
        ASSERT_TRUE(events) << run;
        ASSERT_EQ(events->size(), 2u) << run;
        EXPECT_EQ((*events)[0].sequence, 0);
        EXPECT_EQ((*events)[0].type, "trigger.delivery.attempted");
        EXPECT_EQ((*events)[1].sequence, 1);
        EXPECT_EQ((*events)[1].type, "run.started");
        EXPECT_EQ((*events)[1].causation_id, (*events)[0].event_id);
    }
    EXPECT_EQ(store_->get_delivery("dlv_1")->status, delivery_status::delivered);
    EXPECT_EQ(store_->get_delivery("dlv_4")->status, delivery_status::delivered);
    auto d3 = store_->get_delivery("dlv_3");
    EXPECT_EQ(d3->status, delivery_status::pending);
    EXPECT_EQ(d3->due_at, t0 + 5000);
    EXPECT_EQ(store_->get_subscription("sub_a")->consecutive_failures, 1);
    // The conflicting record changed nothing: dlv_2's run still has only its first two events.
    EXPECT_EQ(store_->run_events_after("run_2", -1, 100)->size(), 2u);
}

// Each write is read back after a read that may have been served from memory (SQLite caches
// subscriptions): no write may leave an older copy visible.
TEST_P(StoreContractTest, EveryWriteOfASubscriptionIsSeenByTheNextRead) {
    add_subscription("sub_a");
    EXPECT_EQ(store_->get_subscription("sub_a")->state, sub_state::active);
    ASSERT_TRUE(store_->change_state(
        {"sub_a", source_kind::webhook, sub_state::active, sub_state::paused, state_reason::none},
        "evt_sc_1", t0 + 1));
    EXPECT_EQ(store_->get_subscription("sub_a")->state, sub_state::paused);
    ASSERT_TRUE(store_->change_state(
        {"sub_a", source_kind::webhook, sub_state::paused, sub_state::active, state_reason::none},
        "evt_sc_2", t0 + 2));
    EXPECT_EQ(store_->get_subscription("sub_a")->state, sub_state::active);

    auto changed = make_subscription("sub_a");
    changed.workflow_id = "wf_other";
    ASSERT_TRUE(store_->upsert_config_subscription(changed));
    EXPECT_EQ(store_->get_subscription("sub_a")->workflow_id, "wf_other");

    must_intake(make_intake("sub_a", "k", "1"));
    auto claimed = claim(t0);
    ASSERT_EQ(claimed.size(), 1u);
    EXPECT_EQ(store_->get_subscription("sub_a")->consecutive_failures, 0);
    auto rec = base_record(claimed[0], 1, attempt_outcome::retrying, t0 + 10);
    rec.next_due_at = t0 + 1000;
    rec.consecutive_failures = 3;
    rec.next_probe_at = t0 + 99;
    ASSERT_TRUE(store_->record_attempts({rec})[0]);
    EXPECT_EQ(store_->get_subscription("sub_a")->consecutive_failures, 3);
    EXPECT_EQ(store_->get_subscription("sub_a")->next_probe_at, t0 + 99);

    ASSERT_TRUE(store_->delete_subscription("sub_a"));
    EXPECT_EQ(store_->get_subscription("sub_a").error(), errc::not_found);
    add_subscription("sub_a");
    EXPECT_EQ(store_->get_subscription("sub_a")->workflow_id, "wf_orders");
}

TEST_P(StoreContractTest, ClaimsHonourEachSubscriptionsMaxConcurrency) {
    auto bounded = make_subscription("sub_one");
    bounded.max_concurrency = 2;
    ASSERT_TRUE(store_->insert_subscription(bounded));
    EXPECT_EQ(store_->get_subscription("sub_one")->max_concurrency, 2);
    add_subscription("sub_free");
    for (int i = 0; i < 5; ++i) {
        must_intake(make_intake("sub_one", "b" + std::to_string(i), "b" + std::to_string(i),
                                t0 + i));
        must_intake(make_intake("sub_free", "f" + std::to_string(i), "f" + std::to_string(i),
                                t0 + i));
    }
    auto first = claim(t0 + 10, 100, 1000);
    std::vector<std::string> bounded_ids;
    int free_count = 0;
    for (const auto& d : first) {
        if (d.subscription_id == "sub_one") {
            bounded_ids.push_back(d.id);
        } else {
            ++free_count;
        }
    }
    // The two oldest of the bounded subscription, everything of the other one.
    EXPECT_EQ(bounded_ids, (std::vector<std::string>{"dlv_b0", "dlv_b1"}));
    EXPECT_EQ(free_count, 5);
    EXPECT_TRUE(claim(t0 + 20, 100, 1000).empty()); // both slots still leased
    std::map<std::string, delivery> by_id;
    for (const auto& d : first) {
        by_id[d.id] = d;
    }
    ASSERT_TRUE(store_->record_attempt(delivered_record(by_id["dlv_b0"], 1, t0 + 30)));
    EXPECT_EQ(ids(claim(t0 + 40, 100, 1000)), (std::vector<std::string>{"dlv_b2"}));
    // An expired lease frees its slot: dlv_b1 (claimed at t0 + 10) is claimable again at t0 + 1010,
    // and with dlv_b2's lease expired too, the two slots go to the two oldest (expired leases and
    // pending rows alike count against the bound).
    std::vector<std::string> again;
    for (const auto& d : claim(t0 + 2000, 100, 1000)) {
        if (d.subscription_id == "sub_one") {
            again.push_back(d.id);
        }
    }
    EXPECT_EQ(again, (std::vector<std::string>{"dlv_b1", "dlv_b2"}));
}

TEST_P(StoreContractTest, BatchedContentsReadEveryDeliveryAndSkipUnknownIds) {
    add_subscription("sub_a");
    must_intake(make_intake("sub_a", "k1", "1"));
    must_intake(make_intake("sub_a", "k2", "2"));
    auto contents = store_->delivery_contents({"dlv_1", "dlv_nope", "dlv_2"});
    ASSERT_TRUE(contents) << contents.error().message();
    ASSERT_EQ(contents->size(), 2u);
    EXPECT_EQ(contents->at("dlv_1"), R"({"body":"secret content 1"})");
    EXPECT_EQ(contents->at("dlv_2"), R"({"body":"secret content 2"})");
}

TEST_P(StoreContractTest, ChangeStateIsCompareAndSet) {
    add_subscription("sub_a");
    state_change wrong{"sub_a", source_kind::webhook, sub_state::paused, sub_state::active,
                       state_reason::none};
    EXPECT_EQ(store_->change_state(wrong, "evt_1", t0).error(), errc::conflict);
    EXPECT_TRUE(store_->subscription_events("sub_a")->empty());

    state_change pause{"sub_a", source_kind::webhook, sub_state::active, sub_state::paused,
                       state_reason::operator_paused};
    ASSERT_TRUE(store_->change_state(pause, "evt_2", t0 + 1));
    EXPECT_EQ(store_->get_subscription("sub_a")->state, sub_state::paused);
    auto events = store_->subscription_events("sub_a");
    ASSERT_EQ(events->size(), 1u);
    EXPECT_EQ(json((*events)[0].payload_json),
              json(R"({"subscriptionId":"sub_a","source":"webhook","fromState":"active",)"
                   R"("toState":"paused","reason":"operator-paused"})"));

    pause.subscription_id = "sub_missing";
    EXPECT_EQ(store_->change_state(pause, "evt_3", t0).error(), errc::not_found);
}

TEST_P(StoreContractTest, VerificationRefusalLeavesStateAlone) {
    add_subscription("sub_a");
    ASSERT_TRUE(
        store_->record_verification_refusal({"sub_a", "wh-msg-1", "evt_ref_1", t0, t0 + 1000}));
    EXPECT_EQ(store_->get_subscription("sub_a")->state, sub_state::active);
    auto letters = store_->list_dead_letters("sub_a", {}, t0);
    ASSERT_TRUE(letters);
    ASSERT_EQ(letters->items.size(), 1u);
    EXPECT_EQ(letters->items[0].reason, dead_letter_reason::verification_failed);
    EXPECT_FALSE(letters->items[0].caused_state_change);
    EXPECT_TRUE(letters->items[0].delivery_id.empty());
    auto events = store_->subscription_events("sub_a");
    ASSERT_EQ(events->size(), 1u);
    EXPECT_EQ((*events)[0].event_id, "evt_ref_1");
    EXPECT_EQ(json((*events)[0].payload_json),
              json(R"({"subscriptionId":"sub_a","dedupKey":"wh-msg-1","attempt":1,)"
                   R"("outcome":"dead-lettered"})"));
}

TEST_P(StoreContractTest, DeadLettersPageNewestFirstAndHideExpired) {
    add_subscription("sub_a");
    add_subscription("sub_b");
    for (int i = 0; i < 5; ++i) {
        // #1 expires early and must not be listed once past its expiry.
        millis expires = i == 1 ? t0 + 50 : t0 + 100000;
        ASSERT_TRUE(store_->record_verification_refusal(
            {"sub_a", "key" + std::to_string(i), "evt_" + std::to_string(i), t0 + i, expires}));
    }
    ASSERT_TRUE(store_->record_verification_refusal({"sub_b", "kb", "evt_b", t0, t0 + 100000}));

    std::vector<std::string> seen;
    page_request req{2, {}};
    int pages = 0;
    for (;;) {
        auto p = store_->list_dead_letters("sub_a", req, t0 + 100);
        ASSERT_TRUE(p) << p.error().message();
        ++pages;
        for (const auto& d : p->items) {
            seen.push_back(d.attempt_event_id);
        }
        if (p->next_cursor.empty()) {
            break;
        }
        req.cursor = p->next_cursor;
        ASSERT_LT(pages, 10);
    }
    EXPECT_THAT(seen, ElementsAre("evt_4", "evt_3", "evt_2", "evt_0"));
    EXPECT_EQ(pages, 2);

    auto first = store_->list_dead_letters("sub_b", {1, {}}, t0);
    ASSERT_TRUE(first);
    auto mine = store_->list_dead_letters("sub_a", {1, {}}, t0);
    ASSERT_TRUE(mine);
    ASSERT_FALSE(mine->next_cursor.empty());
    // A cursor minted for another subscription, or for deliveries, or garbage.
    EXPECT_EQ(store_->list_dead_letters("sub_b", {1, mine->next_cursor}, t0).error(),
              errc::invalid_argument);
    EXPECT_EQ(store_->list_dead_letters("sub_a", {1, "not*a*cursor"}, t0).error(),
              errc::invalid_argument);
    EXPECT_EQ(store_->list_dead_letters("sub_a", {1, "eyJ4IjoxfQ"}, t0).error(),
              errc::invalid_argument);
    EXPECT_EQ(store_->list_deliveries("sub_a", {1, mine->next_cursor}).error(),
              errc::invalid_argument);
    // A limit of 0 is clamped to 1.
    EXPECT_EQ(store_->list_dead_letters("sub_a", {0, {}}, t0)->items.size(), 1u);

    auto purged = store_->purge_expired(t0 + 100);
    ASSERT_TRUE(purged);
    EXPECT_EQ(*purged, 2); // the expired refusal's dead letter and its run-less attempt event
}

TEST_P(StoreContractTest, DeliveriesPageNewestFirst) {
    add_subscription("sub_a");
    for (int i = 0; i < 5; ++i) {
        must_intake(make_intake("sub_a", "k" + std::to_string(i), std::to_string(i), t0 + i));
    }
    auto p1 = store_->list_deliveries("sub_a", {3, {}});
    ASSERT_TRUE(p1);
    EXPECT_THAT(ids(p1->items), ElementsAre("dlv_4", "dlv_3", "dlv_2"));
    ASSERT_FALSE(p1->next_cursor.empty());
    auto p2 = store_->list_deliveries("sub_a", {3, p1->next_cursor});
    ASSERT_TRUE(p2);
    EXPECT_THAT(ids(p2->items), ElementsAre("dlv_1", "dlv_0"));
    EXPECT_TRUE(p2->next_cursor.empty());
    EXPECT_EQ(store_->list_deliveries("sub_missing", {}).error(), errc::not_found);
}

TEST_P(StoreContractTest, AppendRunEventIsGapFreeUnderConcurrency) {
    add_subscription("sub_a");
    must_intake(make_intake("sub_a", "k", "1"));
    auto claimed = claim(t0);
    ASSERT_EQ(claimed.size(), 1u);
    ASSERT_TRUE(store_->record_attempt(delivered_record(claimed[0], 1, t0)));

    constexpr int threads = 4;
    constexpr int per_thread = 50;
    std::latch start(threads);
    std::vector<std::thread> pool;
    std::atomic<int> failures{0};
    for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
            start.arrive_and_wait();
            for (int i = 0; i < per_thread; ++i) {
                auto id = "evt_x_" + std::to_string(t) + "_" + std::to_string(i);
                if (!store_->append_run_event("run_1", "run.log", "{}", {}, id, t0)) {
                    ++failures;
                }
            }
        });
    }
    for (auto& th : pool) {
        th.join();
    }
    EXPECT_EQ(failures.load(), 0);
    std::vector<run_event> all;
    std::int64_t after = -1;
    for (;;) {
        auto chunk = store_->run_events_after("run_1", after, 64);
        ASSERT_TRUE(chunk);
        if (chunk->empty()) {
            break;
        }
        after = chunk->back().sequence;
        all.insert(all.end(), chunk->begin(), chunk->end());
    }
    ASSERT_EQ(all.size(), static_cast<std::size_t>(2 + threads * per_thread));
    for (std::size_t i = 0; i < all.size(); ++i) {
        EXPECT_EQ(all[i].sequence, static_cast<std::int64_t>(i));
    }
    EXPECT_EQ(store_->append_run_event("run_missing", "run.log", "{}", {}, "evt_y", t0).error(),
              errc::not_found);
    EXPECT_EQ(store_->append_run_event("run_1", "run.log", "{}", {}, "evt_x_0_0", t0).error(),
              errc::already_exists);
}

TEST_P(StoreContractTest, RunStatusAndListing) {
    add_subscription("sub_a");
    must_intake(make_intake("sub_a", "k", "1"));
    auto claimed = claim(t0);
    ASSERT_EQ(claimed.size(), 1u);
    ASSERT_TRUE(store_->record_attempt(delivered_record(claimed[0], 1, t0)));
    EXPECT_EQ(store_->list_runs_with_status(run_status::running)->size(), 1u);
    ASSERT_TRUE(store_->set_run_status("run_1", run_status::completed, t0 + 5));
    EXPECT_TRUE(store_->list_runs_with_status(run_status::running)->empty());
    EXPECT_EQ(store_->get_run("run_1")->status, run_status::completed);
    EXPECT_EQ(store_->set_run_status("run_x", run_status::failed, t0).error(), errc::not_found);
    EXPECT_EQ(store_->run_events_after("run_x", -1, 10).error(), errc::not_found);
}

TEST_P(StoreContractTest, TheFirstHostKeyCheckBoundIsKeptWithItsWrap) {
    EXPECT_EQ(store_->host_key_check().value(), "");
    EXPECT_TRUE(store_->data_key_wraps()->empty());
    EXPECT_EQ(store_->bind_host_key_check("hk1:aaaa", "v1:wrap-a").value(), "hk1:aaaa");
    EXPECT_EQ(store_->bind_host_key_check("hk1:bbbb", "v1:wrap-b").value(), "hk1:aaaa");
    EXPECT_EQ(store_->host_key_check().value(), "hk1:aaaa");
    // The loser's wrap was not written: only the winner's key opens the store.
    const std::map<std::string, std::string> winner{{"hk1:aaaa", "v1:wrap-a"}};
    EXPECT_EQ(store_->data_key_wraps().value(), winner);
}

TEST_P(StoreContractTest, RotationAddsAWrapAndRetireKeepsOnlyOne) {
    ASSERT_TRUE(store_->bind_host_key_check("hk1:old", "v1:old"));
    ASSERT_TRUE(store_->add_data_key_wrap("hk1:new", "v1:new"));
    ASSERT_TRUE(store_->add_data_key_wrap("hk1:new", "v1:other")); // the first wrap stays
    const std::map<std::string, std::string> both{{"hk1:new", "v1:new"}, {"hk1:old", "v1:old"}};
    EXPECT_EQ(store_->data_key_wraps().value(), both);
    EXPECT_EQ(store_->retire_data_key_wraps("hk1:unknown").error(), errc::not_found);
    EXPECT_EQ(store_->data_key_wraps()->size(), 2u);
    EXPECT_EQ(store_->retire_data_key_wraps("hk1:new").value(), 1);
    const std::map<std::string, std::string> kept{{"hk1:new", "v1:new"}};
    EXPECT_EQ(store_->data_key_wraps().value(), kept);
    EXPECT_EQ(store_->host_key_check().value(), "hk1:new");
    EXPECT_EQ(store_->retire_data_key_wraps("hk1:new").value(), 0);
}

TEST_P(StoreContractTest, KeyedRowsAreSubscriptionsDedupRowsAndOutboundWebhooks) {
    EXPECT_FALSE(store_->has_keyed_rows().value());
    add_subscription("sub_a");
    EXPECT_TRUE(store_->has_keyed_rows().value());
}

TEST_P(StoreContractTest, ConnectorSettingsAreReplacedOnlyWhileStillAsExpected) {
    auto s = make_subscription("sub_conn");
    s.connector = "forms";
    s.connector_settings_json = R"({"tokenSecret":"clear"})";
    ASSERT_TRUE(store_->insert_subscription(s));
    ASSERT_TRUE(store_->change_state({s.id, s.source, sub_state::active, sub_state::paused,
                                      state_reason::none},
                                     "evt_pause", t0 + 1));
    const std::string sealed = R"({"tokenSecret":{"$sealed":"v1:AAAA"}})";
    EXPECT_FALSE(store_->replace_connector_settings(s.id, R"({"other":1})", sealed).value());
    EXPECT_TRUE(
        store_->replace_connector_settings(s.id, s.connector_settings_json, sealed).value());
    EXPECT_FALSE(store_->replace_connector_settings(s.id, s.connector_settings_json, "{}").value());
    EXPECT_FALSE(store_->replace_connector_settings("sub_missing", "{}", sealed).value());
    auto got = store_->get_subscription(s.id);
    ASSERT_TRUE(got);
    EXPECT_EQ(got->connector_settings_json, sealed);
    EXPECT_EQ(got->state, sub_state::paused); // nothing else of the row changed
    EXPECT_EQ(got->sealed_secret, s.sealed_secret);
    EXPECT_EQ(got->updated_at, t0 + 1); // the pause's, not touched by the replacement
}

TEST_P(StoreContractTest, EndRunCommitsTheLastEventAndTheStatusTogether) {
    add_subscription("sub_a");
    must_intake(make_intake("sub_a", "k", "1"));
    auto claimed = claim(t0);
    ASSERT_EQ(claimed.size(), 1u);
    ASSERT_TRUE(store_->record_attempt(delivered_record(claimed[0], 1, t0)));
    auto done = store_->end_run("run_1", "run.completed", R"({"exitCode":0})", "evt_end",
                                run_status::completed, t0 + 7);
    ASSERT_TRUE(done) << done.error().message();
    EXPECT_EQ(done->event_id, "evt_end");
    auto run = store_->get_run("run_1");
    EXPECT_EQ(run->status, run_status::completed);
    EXPECT_EQ(run->updated_at, t0 + 7);
    auto log = store_->run_events_after("run_1", -1, 100).value();
    ASSERT_FALSE(log.empty());
    EXPECT_EQ(log.back().type, "run.completed");
    EXPECT_EQ(log.back().sequence, done->sequence);
    // A duplicate event id rolls back the status change with it.
    must_intake(make_intake("sub_a", "k2", "2", t0 + 10));
    auto second = claim(t0 + 10);
    ASSERT_EQ(second.size(), 1u);
    ASSERT_TRUE(store_->record_attempt(delivered_record(second[0], 1, t0 + 10)));
    const auto second_run = second[0].run_id;
    EXPECT_FALSE(store_->end_run(second_run, "run.failed", "{}", "evt_end", run_status::failed,
                                 t0 + 11));
    EXPECT_EQ(store_->get_run(second_run)->status, run_status::running);
    EXPECT_EQ(store_->end_run("run_x", "run.failed", "{}", "evt_y", run_status::failed, t0).error(),
              errc::not_found);
}

TEST_P(StoreContractTest, GroupCommitGroupsConcurrentIntakes) {
    add_subscription("sub_a");
    const auto before = store_->stats();
    constexpr int total = 200;
    constexpr int threads = 8;
    completion_counter completed;
    std::atomic<int> accepted{0};
    auto on_done = [&](result<intake_outcome> r) {
        if (r && r->status == intake_status::accepted) {
            ++accepted;
        }
        completed.done();
    };
    // The first callback runs on the writer thread; holding it until every other request is queued
    // makes the grouping deterministic (a real callback never blocks).
    std::promise<void> all_queued;
    auto queued = all_queued.get_future().share();
    store_->intake(make_intake("sub_a", "first", "first"), [&, queued](result<intake_outcome> r) {
        queued.wait_for(wait_limit);
        on_done(std::move(r));
    });
    std::latch start(threads);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
            start.arrive_and_wait();
            for (int i = t; i < total - 1; i += threads) {
                store_->intake(make_intake("sub_a", "k" + std::to_string(i), std::to_string(i)),
                               on_done);
            }
        });
    }
    for (auto& th : pool) {
        th.join();
    }
    all_queued.set_value();
    ASSERT_TRUE(completed.wait_for(total));
    EXPECT_EQ(accepted.load(), total);
    const auto after = store_->stats();
    EXPECT_EQ(after.intake_requests - before.intake_requests, static_cast<std::uint64_t>(total));
    EXPECT_LE(after.intake_batches - before.intake_batches, 3u);
}

TEST_P(StoreContractTest, FailingRequestDoesNotAbortItsBatch) {
    add_subscription("sub_a");
    must_intake(make_intake("sub_a", "k0", "taken"));
    std::promise<void> all_queued;
    auto queued = all_queued.get_future().share();
    completion_counter completed;
    std::vector<result<intake_outcome>> out(4, errc::internal);
    store_->intake(make_intake("sub_a", "gate", "gate"), [&, queued](result<intake_outcome> r) {
        queued.wait_for(wait_limit);
        out[0] = std::move(r);
        completed.done();
    });
    auto collect = [&](int i) {
        return [&, i](result<intake_outcome> r) {
            out[i] = std::move(r);
            completed.done();
        };
    };
    // A delivery id collision fails after its dedup row was written: the savepoint must undo it.
    store_->intake(make_intake("sub_a", "k1", "taken"), collect(1));
    store_->intake(make_intake("sub_missing", "k2", "x"), collect(2));
    store_->intake(make_intake("sub_a", "k1", "good"), collect(3));
    all_queued.set_value();
    ASSERT_TRUE(completed.wait_for(4));
    EXPECT_TRUE(out[0]);
    EXPECT_EQ(out[1].error(), errc::already_exists);
    EXPECT_EQ(out[2].error(), errc::not_found);
    ASSERT_TRUE(out[3]);
    EXPECT_EQ(out[3]->status, intake_status::accepted);
    EXPECT_EQ(out[3]->delivery_id, "dlv_good");
}

TEST_P(StoreContractTest, ReadOnlyDatabaseAnswersStoreUnavailable) {
    add_subscription("sub_a");
    store_.reset();
    auto ro = GetParam().open_read_only(dir_);
    ASSERT_TRUE(ro) << ro.error().message();
    store_ = std::move(*ro);
    auto out = store_->intake_sync(make_intake("sub_a", "k", "1"));
    ASSERT_FALSE(out);
    EXPECT_EQ(out.error(), errc::store_unavailable);
    EXPECT_EQ(store_->intake_sync(make_intake("sub_a", "k", "2")).error(), errc::store_unavailable);
    EXPECT_EQ(store_->ping().error(), errc::store_unavailable);
    EXPECT_EQ(store_->get_subscription("sub_a")->id, "sub_a"); // reads still work
    EXPECT_EQ(store_->get_delivery("dlv_1").error(), errc::not_found);
}

TEST_P(StoreContractTest, DestructorAnswersEveryQueuedIntake) {
    add_subscription("sub_a");
    completion_counter completed;
    std::atomic<int> answered{0};
    for (int i = 0; i < 50; ++i) {
        store_->intake(make_intake("sub_a", "k" + std::to_string(i), std::to_string(i)),
                       [&](result<intake_outcome> r) {
                           if (r) {
                               ++answered;
                           }
                           completed.done();
                       });
    }
    store_.reset();
    EXPECT_TRUE(completed.wait_for(50));
    EXPECT_EQ(answered.load(), 50);
    open();
    EXPECT_EQ(store_->list_deliveries("sub_a", {100, {}})->items.size(), 50u);
}

TEST_P(StoreContractTest, ARefusedSignaturesAttemptEventGoesWithItsDeadLetter) {
    add_subscription("sub_a");
    ASSERT_TRUE(store_->record_verification_refusal({"sub_a", "k1", "evt_ref_1", t0, t0 + 1000}));
    ASSERT_TRUE(store_->record_verification_refusal({"sub_a", "k2", "evt_ref_2", t0, t0 + 5000}));
    ASSERT_EQ(store_->subscription_events("sub_a")->size(), 2u);
    EXPECT_EQ(store_->purge_expired(t0 + 999).value(), 0);
    EXPECT_EQ(store_->purge_expired(t0 + 1000).value(), 2); // the dead letter and its event
    auto events = store_->subscription_events("sub_a").value();
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].event_id, "evt_ref_2");
    EXPECT_EQ(store_->list_dead_letters("sub_a", {}, t0)->items.size(), 1u);
}

// Nodes of a shared store: what a silent node claimed is freed for the others after the node
// timeout (by the database's clock) rather than after its lease; a node that leaves frees its
// claims at once. Single-node stores have no nodes.
TEST_P(StoreContractTest, ASilentNodesClaimsAreFreedForTheOthersBeforeTheirLease) {
    auto other_node = GetParam().open(dir_);
    ASSERT_TRUE(other_node);
    auto& other = **other_node;
    if (GetParam().name != "postgres") {
        EXPECT_EQ(store_->keep_node_alive(1000).error(), make_error_code(errc::unsupported));
        EXPECT_EQ(store_->leave_cluster().error(), make_error_code(errc::unsupported));
        return;
    }
    add_subscription("sub_a");
    must_intake(make_intake("sub_a", "k1", "1"));
    must_intake(make_intake("sub_a", "k2", "2"));
    ASSERT_EQ(store_->keep_node_alive(60000).value(), 0);
    ASSERT_EQ(claim(t0, 1).size(), 1u); // a 60 s lease
    ASSERT_EQ(other.keep_node_alive(60000).value(), 0);
    ASSERT_EQ(other.claim_due(t0 + 1, 10, 60000)->size(), 1u); // the other one
    EXPECT_TRUE(other.claim_due(t0 + 2, 10, 60000)->empty()); // the first is leased
    // Node 1 stops beating: node 2, with a short timeout, frees its claim (exactly one).
    EXPECT_TRUE(testing::eventually([&] {
        auto freed = other.keep_node_alive(50);
        return freed && *freed == 1;
    }));
    auto taken = other.claim_due(t0 + 3, 10, 60000);
    ASSERT_TRUE(taken);
    ASSERT_EQ(taken->size(), 1u);
    EXPECT_EQ(taken->front().dedup_key, "k1");
    // Node 2 leaves: both its claims are claimable by node 1 at once, leases notwithstanding.
    ASSERT_TRUE(other.leave_cluster());
    EXPECT_EQ(claim(t0 + 4).size(), 2u);
}

TEST_P(StoreContractTest, PingAndPurge) {
    EXPECT_TRUE(store_->ping());
    add_subscription("sub_a");
    auto r = make_intake("sub_a", "k", "1");
    r.dedup_expires_at = t0 + 10;
    must_intake(r);
    EXPECT_EQ(*store_->purge_expired(t0 + 10), 0);
    EXPECT_EQ(*store_->purge_expired(t0 + 11), 1);
}

TEST_P(StoreContractTest, DeliveryStatsCountByStatusAndDueTime) {
    add_subscription("sub_a");
    add_subscription("sub_p", sub_state::paused);
    add_subscription("sub_quiet");
    must_intake(make_intake("sub_a", "k1", "a1", t0));
    auto later = make_intake("sub_a", "k2", "a2", t0);
    later.due_at = t0 + 5000; // backing off: pending, not due yet
    must_intake(later);
    must_intake(make_intake("sub_a", "k3", "a3", t0));
    auto held = make_intake("sub_p", "k1", "p1", t0);
    held.hold = true;
    must_intake(held);
    // One in flight, then dead-lettered (its dead letter counts until it expires).
    auto claimed = claim(t0 + 10, 1);
    ASSERT_EQ(claimed.size(), 1u);
    auto stats_in_flight = store_->delivery_stats(t0 + 10);
    ASSERT_TRUE(stats_in_flight) << stats_in_flight.error().message();
    ASSERT_EQ(stats_in_flight->size(), 2u); // sub_quiet has nothing: absent
    EXPECT_EQ((*stats_in_flight)[0].subscription_id, "sub_a");
    EXPECT_EQ((*stats_in_flight)[0].in_flight, 1);
    EXPECT_EQ((*stats_in_flight)[0].pending, 2);
    EXPECT_EQ((*stats_in_flight)[0].due, 1);

    auto rec = base_record(claimed[0], 1, attempt_outcome::dead_lettered, t0 + 20);
    rec.dead_letter_expires_at = t0 + 100000;
    ASSERT_TRUE(store_->record_attempt(rec));
    auto stats = store_->delivery_stats(t0 + 30);
    ASSERT_TRUE(stats);
    ASSERT_EQ(stats->size(), 2u);
    const auto& a = (*stats)[0];
    EXPECT_EQ(a.subscription_id, "sub_a");
    EXPECT_EQ(a.pending, 2);
    EXPECT_EQ(a.due, 1);
    EXPECT_EQ(a.in_flight, 0);
    EXPECT_EQ(a.dead_lettered, 1);
    EXPECT_EQ(a.dead_letters, 1);
    EXPECT_EQ(a.delivered, 0);
    const auto& p = (*stats)[1];
    EXPECT_EQ(p.subscription_id, "sub_p");
    EXPECT_EQ(p.held, 1);
    EXPECT_EQ(p.pending, 0);
    // Past the dead letter's expiry it no longer counts; past the backoff both are due.
    auto after = store_->delivery_stats(t0 + 100000);
    ASSERT_TRUE(after);
    EXPECT_EQ((*after)[0].dead_letters, 0);
    EXPECT_EQ((*after)[0].due, 2);
}

// ---- outbound webhooks ----

outbound_webhook make_webhook(const std::string& id, const std::string& tenant,
                              std::vector<std::string> events,
                              sub_state state = sub_state::active) {
    outbound_webhook w;
    w.id = id;
    w.tenant = tenant;
    w.url = "https://hooks.example/" + id;
    w.events = std::move(events);
    w.tags = {"blue", "green"};
    w.sealed_secret = "v1:sealed-" + id;
    w.sealed_standard_secret = "";
    w.secret_fingerprint = "fp_" + id;
    w.state = state;
    w.created_at = t0;
    w.updated_at = t0;
    return w;
}

TEST_P(StoreContractTest, OutboundWebhookCrudRoundTrips) {
    ASSERT_TRUE(store_->insert_outbound_webhook(make_webhook("owh_b", "acme", {"run.started"})));
    auto a = make_webhook("owh_a", "acme", {"run.completed", "run.failed"}, sub_state::paused);
    a.sealed_standard_secret = "v1:standard";
    ASSERT_TRUE(store_->insert_outbound_webhook(a));
    ASSERT_TRUE(store_->insert_outbound_webhook(make_webhook("owh_c", "globex", {"run.started"})));
    EXPECT_EQ(store_->insert_outbound_webhook(a).error(), errc::already_exists);

    auto got = store_->get_outbound_webhook("owh_a");
    ASSERT_TRUE(got) << got.error().message();
    EXPECT_EQ(got->tenant, "acme");
    EXPECT_EQ(got->url, "https://hooks.example/owh_a");
    EXPECT_THAT(got->events, ElementsAre("run.completed", "run.failed"));
    EXPECT_THAT(got->tags, ElementsAre("blue", "green"));
    EXPECT_EQ(got->sealed_secret, "v1:sealed-owh_a");
    EXPECT_EQ(got->sealed_standard_secret, "v1:standard");
    EXPECT_EQ(got->secret_fingerprint, "fp_owh_a");
    EXPECT_EQ(got->state, sub_state::paused);
    auto acme = store_->list_outbound_webhooks("acme");
    ASSERT_TRUE(acme);
    ASSERT_EQ(acme->size(), 2u);
    EXPECT_EQ((*acme)[0].id, "owh_a");
    EXPECT_EQ((*acme)[1].id, "owh_b");

    ASSERT_TRUE(store_->delete_outbound_webhook("owh_a"));
    EXPECT_EQ(store_->get_outbound_webhook("owh_a").error(), errc::not_found);
    EXPECT_EQ(store_->delete_outbound_webhook("owh_a").error(), errc::not_found);
}

// The outbox rows of a run event commit with it, for the active webhooks of the run's tenant
// subscribed to its type; enqueueing again adds nothing.
TEST_P(StoreContractTest, RunEventsFillTheOutboxInTheirOwnTransaction) {
    ASSERT_TRUE(store_->insert_outbound_webhook(
        make_webhook("owh_all", "acme", {"run.started", "run.completed"})));
    ASSERT_TRUE(
        store_->insert_outbound_webhook(make_webhook("owh_done", "acme", {"run.completed"})));
    ASSERT_TRUE(store_->insert_outbound_webhook(
        make_webhook("owh_paused", "acme", {"run.started"}, sub_state::paused)));
    ASSERT_TRUE(
        store_->insert_outbound_webhook(make_webhook("owh_other", "globex", {"run.started"})));
    add_subscription("sub_a");
    must_intake(make_intake("sub_a", "k", "1"));
    auto claimed = claim(t0);
    ASSERT_EQ(claimed.size(), 1u);
    ASSERT_TRUE(store_->record_attempt(delivered_record(claimed[0], 1, t0 + 10)));

    auto all = store_->list_outbound_deliveries("owh_all");
    ASSERT_TRUE(all) << all.error().message();
    ASSERT_EQ(all->size(), 1u);
    EXPECT_EQ((*all)[0].run_id, "run_1");
    EXPECT_EQ((*all)[0].event_type, "run.started");
    EXPECT_EQ((*all)[0].status, "pending");
    EXPECT_EQ((*all)[0].due_at, t0 + 10);
    const auto started_seq = (*all)[0].sequence;
    EXPECT_TRUE(store_->list_outbound_deliveries("owh_done")->empty());
    EXPECT_TRUE(store_->list_outbound_deliveries("owh_paused")->empty());
    EXPECT_TRUE(store_->list_outbound_deliveries("owh_other")->empty());

    auto done = store_->append_run_event("run_1", "run.completed", "{}", "", "evt_done", t0 + 20);
    ASSERT_TRUE(done);
    EXPECT_EQ(store_->list_outbound_deliveries("owh_all")->size(), 2u);
    auto d = store_->list_outbound_deliveries("owh_done");
    ASSERT_EQ(d->size(), 1u);
    EXPECT_EQ((*d)[0].sequence, done->sequence);
    EXPECT_EQ(*store_->enqueue_outbound("run_1", done->sequence, t0 + 30), 0);
    EXPECT_EQ(*store_->enqueue_outbound("run_1", started_seq, t0 + 30), 0);
    EXPECT_EQ(store_->outbound_next_due_at()->value_or(0), t0 + 10);

    // A run event whose append fails (unknown run) leaves no outbox row behind.
    EXPECT_FALSE(store_->append_run_event("run_nope", "run.completed", "{}", "", "evt_x", t0));
    EXPECT_EQ(store_->list_outbound_deliveries("owh_done")->size(), 1u);
}

TEST_P(StoreContractTest, OutboundClaimsHonourThePerWebhookLimitAndLeases) {
    ASSERT_TRUE(store_->insert_outbound_webhook(make_webhook("owh_a", "acme", {"run.progress"})));
    ASSERT_TRUE(store_->insert_outbound_webhook(make_webhook("owh_b", "acme", {"run.progress"})));
    add_subscription("sub_a");
    must_intake(make_intake("sub_a", "k", "1"));
    ASSERT_TRUE(store_->record_attempt(delivered_record(claim(t0)[0], 1, t0)));
    for (int i = 0; i < 4; ++i) {
        ASSERT_TRUE(store_->append_run_event("run_1", "run.progress", "{}", "",
                                             "evt_p" + std::to_string(i), t0 + 1 + i));
    }
    auto first = store_->claim_outbound_due(t0 + 100, 10, 2, 1000);
    ASSERT_TRUE(first) << first.error().message();
    ASSERT_EQ(first->size(), 4u); // two per webhook
    std::map<std::string, std::vector<std::int64_t>> by_hook;
    for (const auto& d : *first) {
        EXPECT_EQ(d.status, "in_flight");
        by_hook[d.webhook_id].push_back(d.sequence);
    }
    ASSERT_EQ(by_hook["owh_a"].size(), 2u);
    EXPECT_LT(by_hook["owh_a"][0], by_hook["owh_a"][1]); // oldest first
    EXPECT_TRUE(store_->claim_outbound_due(t0 + 200, 10, 2, 1000)->empty());

    // One settles: one more of that webhook may go.
    outbound_attempt ok;
    ok.delivery_id = (*first)[0].id;
    ok.webhook_id = (*first)[0].webhook_id;
    ok.at = t0 + 300;
    ok.status = "delivered";
    ASSERT_TRUE(store_->record_outbound_attempt(ok));
    auto more = store_->claim_outbound_due(t0 + 300, 10, 2, 1000);
    ASSERT_TRUE(more);
    ASSERT_EQ(more->size(), 1u);
    EXPECT_EQ((*more)[0].webhook_id, ok.webhook_id);
    // Leases that ran out are claimed again (at most the limit per webhook).
    auto again = store_->claim_outbound_due(t0 + 5000, 10, 2, 1000);
    ASSERT_TRUE(again);
    EXPECT_EQ(again->size(), 4u);
    auto listed = store_->list_outbound_deliveries(ok.webhook_id);
    ASSERT_TRUE(listed);
    ASSERT_EQ(listed->size(), 4u);
    EXPECT_EQ((*listed)[0].status, "delivered");
    EXPECT_EQ((*listed)[0].attempts, 1);
}

TEST_P(StoreContractTest, OutboundDeadLetterCarriesItsStateChange) {
    ASSERT_TRUE(store_->insert_outbound_webhook(make_webhook("owh_a", "acme", {"run.started"})));
    add_subscription("sub_a");
    must_intake(make_intake("sub_a", "k", "1"));
    ASSERT_TRUE(store_->record_attempt(delivered_record(claim(t0)[0], 1, t0)));
    auto claimed = store_->claim_outbound_due(t0 + 1, 10, 4, 1000);
    ASSERT_TRUE(claimed);
    ASSERT_EQ(claimed->size(), 1u);
    const auto& d = (*claimed)[0];

    outbound_attempt retry;
    retry.delivery_id = d.id;
    retry.webhook_id = d.webhook_id;
    retry.at = t0 + 2;
    retry.status = "pending";
    retry.failure = true;
    retry.next_due_at = t0 + 500;
    retry.error = "http 503";
    retry.consecutive_failures = 1;
    ASSERT_TRUE(store_->record_outbound_attempt(retry));
    EXPECT_EQ(store_->outbound_next_due_at()->value_or(0), t0 + 500);
    EXPECT_TRUE(store_->claim_outbound_due(t0 + 499, 10, 4, 1000)->empty());
    ASSERT_EQ(store_->claim_outbound_due(t0 + 500, 10, 4, 1000)->size(), 1u);

    outbound_attempt dead = retry;
    dead.at = t0 + 600;
    dead.status = "dead_lettered";
    dead.consecutive_failures = 2;
    dead.state_change =
        outbound_state_change{"owh_a", sub_state::active, sub_state::failed, "retry-exhausted",
                              t0 + 600};
    dead.dead_letter_expires_at = t0 + 7 * 24 * 3600 * 1000LL;
    ASSERT_TRUE(store_->record_outbound_attempt(dead));

    EXPECT_EQ(*store_->count_outbound_failures("owh_a", t0), 2);
    EXPECT_EQ(*store_->count_outbound_failures("owh_a", t0 + 3), 1);
    auto hook = store_->get_outbound_webhook("owh_a");
    EXPECT_EQ(hook->state, sub_state::failed);
    EXPECT_EQ(hook->consecutive_failures, 2);
    auto changes = store_->list_outbound_state_changes("owh_a");
    ASSERT_TRUE(changes);
    ASSERT_EQ(changes->size(), 1u);
    EXPECT_EQ((*changes)[0].reason, "retry-exhausted");
    auto listed = store_->list_outbound_deliveries("owh_a");
    ASSERT_EQ(listed->size(), 1u);
    EXPECT_EQ((*listed)[0].status, "dead_lettered");
    EXPECT_EQ((*listed)[0].attempts, 2);
    EXPECT_EQ((*listed)[0].last_error, "http 503");

    auto page1 = store_->list_outbound_dead_letters("owh_a", {10, {}}, t0 + 700);
    ASSERT_TRUE(page1) << page1.error().message();
    ASSERT_EQ(page1->items.size(), 1u);
    const auto& dl = page1->items[0];
    EXPECT_EQ(dl.delivery_id, d.id);
    EXPECT_EQ(dl.run_id, "run_1");
    EXPECT_EQ(dl.event_type, "run.started");
    EXPECT_EQ(dl.attempts, 2);
    EXPECT_EQ(dl.reason, "retries_exhausted");
    ASSERT_TRUE(dl.state_change);
    EXPECT_EQ(dl.state_change->to, sub_state::failed);
    EXPECT_TRUE(store_->list_outbound_dead_letters("owh_a", {10, {}}, dead.dead_letter_expires_at)
                    ->items.empty());
    EXPECT_EQ(store_->list_outbound_dead_letters("owh_a", {10, "owh_b:5"}, t0).error(),
              errc::invalid_argument);
    // Failed webhooks are not claimed.
    EXPECT_FALSE(store_->outbound_next_due_at()->has_value());
}

// ---- bulk replay jobs ----

replay_job_record make_replay_job(const std::string& id, const std::string& owner, millis lease) {
    replay_job_record j;
    j.id = id;
    j.tenant = "acme";
    j.subscription_id = "sub_rj";
    j.rate_per_second = 2.5;
    j.started_at = t0;
    j.owner = owner;
    j.lease_until = t0 + lease;
    return j;
}

// A job and its selection are stored together; progress written by its owner reads back from
// any handle, and the unsettled items are the ones a resumption still has to do.
TEST_P(StoreContractTest, ReplayJobProgressIsStoredWithItsSelection) {
    add_subscription("sub_rj");
    ASSERT_TRUE(store_->create_replay_job(make_replay_job("rpl_1", "node_a", 30000),
                                          {"evt_a", "evt_b", "evt_c"}));
    EXPECT_EQ(store_->create_replay_job(make_replay_job("rpl_1", "node_a", 30000), {}).error(),
              errc::already_exists);
    auto job = store_->get_replay_job("rpl_1");
    ASSERT_TRUE(job) << job.error().message();
    EXPECT_EQ(job->tenant, "acme");
    EXPECT_EQ(job->subscription_id, "sub_rj");
    EXPECT_EQ(job->state, "running");
    EXPECT_EQ(job->total, 3);
    EXPECT_DOUBLE_EQ(job->rate_per_second, 2.5);
    EXPECT_EQ(job->owner, "node_a");
    EXPECT_EQ(job->lease_until, t0 + 30000);
    EXPECT_EQ(store_->get_replay_job("rpl_nope").error(), errc::not_found);

    replay_job_update u;
    u.job_id = "rpl_1";
    u.owner = "node_a";
    u.lease_until = t0 + 60000;
    u.replayed = 2;
    u.delivered = 1;
    u.consecutive_failures = 0;
    u.items = {{0, "evt_a", "dlv_a", "delivered"}, {1, "evt_b", "dlv_b", "replayed"}};
    ASSERT_TRUE(store_->update_replay_job(u));
    // Another node's write (it lost the job, or never had it) changes nothing.
    auto stale = u;
    stale.owner = "node_b";
    stale.replayed = 3;
    stale.items = {{2, "evt_c", "dlv_c", "replayed"}};
    EXPECT_EQ(store_->update_replay_job(stale).error(), errc::conflict);

    open(); // a restart reads what was committed
    job = store_->get_replay_job("rpl_1");
    ASSERT_TRUE(job);
    EXPECT_EQ(job->replayed, 2);
    EXPECT_EQ(job->delivered, 1);
    EXPECT_EQ(job->lease_until, t0 + 60000);
    auto items = store_->unsettled_replay_job_items("rpl_1");
    ASSERT_TRUE(items) << items.error().message();
    ASSERT_EQ(items->size(), 2u);
    EXPECT_EQ((*items)[0].position, 1);
    EXPECT_EQ((*items)[0].delivery_id, "dlv_b");
    EXPECT_EQ((*items)[0].outcome, "replayed");
    EXPECT_EQ((*items)[1].position, 2);
    EXPECT_EQ((*items)[1].attempt_event_id, "evt_c");
    EXPECT_EQ((*items)[1].outcome, "selected");

    // Finished: no longer writable, purged at its expiry (items with it).
    u.state = "completed";
    u.finished_at = t0 + 1000;
    u.expires_at = t0 + 2000;
    u.items = {{1, "evt_b", "dlv_b", "delivered"}, {2, "evt_c", "", "failed"}};
    ASSERT_TRUE(store_->update_replay_job(u));
    EXPECT_EQ(store_->update_replay_job(u).error(), errc::conflict);
    EXPECT_EQ(store_->get_replay_job("rpl_1")->state, "completed");
    EXPECT_TRUE(store_->unsettled_replay_job_items("rpl_1")->empty());
    ASSERT_TRUE(store_->purge_expired(t0 + 1999));
    EXPECT_TRUE(store_->get_replay_job("rpl_1"));
    ASSERT_TRUE(store_->purge_expired(t0 + 2000));
    EXPECT_EQ(store_->get_replay_job("rpl_1").error(), errc::not_found);
}

// Only running jobs whose lease ran out are claimed, each by one claimer; a released lease is
// claimable at once; a deleted subscription takes its jobs.
TEST_P(StoreContractTest, ReplayJobsAreClaimedOnlyOnceTheirLeaseRanOutOrWasReleased) {
    add_subscription("sub_rj");
    ASSERT_TRUE(store_->create_replay_job(make_replay_job("rpl_live", "node_a", 30000), {"e1"}));
    ASSERT_TRUE(store_->create_replay_job(make_replay_job("rpl_dead", "node_b", 5000), {"e2"}));
    auto none = store_->claim_replay_jobs("node_c", t0 + 4999, 30000);
    ASSERT_TRUE(none) << none.error().message();
    EXPECT_TRUE(none->empty());

    auto got = store_->claim_replay_jobs("node_c", t0 + 5000, 30000);
    ASSERT_TRUE(got);
    ASSERT_EQ(got->size(), 1u);
    EXPECT_EQ((*got)[0].id, "rpl_dead");
    EXPECT_EQ((*got)[0].owner, "node_c");
    EXPECT_EQ((*got)[0].lease_until, t0 + 35000);
    EXPECT_TRUE(store_->claim_replay_jobs("node_d", t0 + 5000, 30000)->empty());
    // node_b lost it: its late progress is refused.
    replay_job_update late;
    late.job_id = "rpl_dead";
    late.owner = "node_b";
    EXPECT_EQ(store_->update_replay_job(late).error(), errc::conflict);

    EXPECT_EQ(store_->release_replay_jobs("node_a").value(), 1);
    got = store_->claim_replay_jobs("node_d", t0 + 6000, 30000);
    ASSERT_TRUE(got);
    ASSERT_EQ(got->size(), 1u);
    EXPECT_EQ((*got)[0].id, "rpl_live");

    ASSERT_TRUE(store_->delete_subscription("sub_rj"));
    EXPECT_EQ(store_->get_replay_job("rpl_live").error(), errc::not_found);
    EXPECT_TRUE(store_->claim_replay_jobs("node_e", t0 + 999999, 30000)->empty());
}

// The operator views' reads: the run listing (newest first, (created_at, id) descending, filters,
// position) and the replay lookup by dedup key.
TEST_P(StoreContractTest, RunsListNewestFirstWithFiltersAndReplaysByDedupKey) {
    add_subscription("sub_a");
    add_subscription("sub_b");
    must_intake(make_intake("sub_a", "k1", "1", t0));
    must_intake(make_intake("sub_a", "replay:evt_dead", "2", t0 + 1));
    must_intake(make_intake("sub_b", "k3", "3", t0 + 2));
    auto claimed = claim(t0 + 10);
    ASSERT_EQ(claimed.size(), 3u);
    for (const auto& d : claimed) {
        // run_2 and run_3 are created in the same millisecond: the id breaks the tie.
        const millis at = d.id == "dlv_1" ? t0 + 20 : t0 + 30;
        ASSERT_TRUE(store_->record_attempt(delivered_record(d, 1, at)));
    }
    auto list = [&](const run_query& q) {
        std::vector<std::string> out;
        auto r = store_->list_runs(q);
        EXPECT_TRUE(r) << r.error().message();
        for (const auto& run : r ? *r : std::vector<run_record>{}) {
            out.push_back(run.id);
        }
        return out;
    };
    run_query q;
    q.tenant = "acme";
    EXPECT_THAT(list(q), ElementsAre("run_3", "run_2", "run_1"));
    auto all = store_->list_runs(q);
    ASSERT_TRUE(all);
    EXPECT_EQ((*all)[1].replay_of_attempt_event_id, "evt_dead");
    EXPECT_EQ((*all)[0].replay_of_attempt_event_id, "");
    EXPECT_EQ((*all)[1].workflow_id, "wf_orders");
    EXPECT_EQ((*all)[1].created_at, t0 + 30);

    run_query page = q;
    page.limit = 1;
    page.before = run_position{t0 + 30, "run_3"};
    EXPECT_THAT(list(page), ElementsAre("run_2"));
    page.before = run_position{t0 + 30, "run_2"};
    EXPECT_THAT(list(page), ElementsAre("run_1"));
    page.before = run_position{t0 + 20, "run_1"};
    EXPECT_TRUE(list(page).empty());

    run_query f = q;
    f.subscription_id = "sub_a";
    EXPECT_THAT(list(f), ElementsAre("run_2", "run_1"));
    f = q;
    f.status = run_status::completed;
    EXPECT_TRUE(list(f).empty());
    f.status = run_status::running;
    EXPECT_EQ(list(f).size(), 3u);
    f = q;
    f.created_from = t0 + 25;
    EXPECT_THAT(list(f), ElementsAre("run_3", "run_2"));
    f = q;
    f.created_to = t0 + 25;
    EXPECT_THAT(list(f), ElementsAre("run_1"));
    f = q;
    f.workflow_id = "wf_other";
    EXPECT_TRUE(list(f).empty());
    f = q;
    f.tenant = "globex";
    EXPECT_TRUE(list(f).empty());

    auto found = store_->deliveries_by_dedup_key("sub_a", {"replay:evt_dead", "replay:evt_none"});
    ASSERT_TRUE(found) << found.error().message();
    ASSERT_EQ(found->size(), 1u);
    EXPECT_EQ(found->at("replay:evt_dead").id, "dlv_2");
    EXPECT_EQ(found->at("replay:evt_dead").run_id, "run_2");
    EXPECT_EQ(found->at("replay:evt_dead").status, delivery_status::delivered);
    auto other = store_->deliveries_by_dedup_key("sub_b", {"replay:evt_dead"});
    ASSERT_TRUE(other);
    EXPECT_TRUE(other->empty());
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreContractTest,
                         ::testing::Values(sqlite_backend(), postgres_backend()),
                         [](const auto& info) { return info.param.name; });

} // namespace
} // namespace wopbridge
