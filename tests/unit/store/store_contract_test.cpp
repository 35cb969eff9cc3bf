// The store contract (store_contract.hpp), run against every backend: subscriptions and intake.
#include "unit/store/store_contract.hpp"

namespace wopbridge::store_contract {
namespace {

using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

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

INSTANTIATE_TEST_SUITE_P(Backends, StoreContractTest,
                         ::testing::Values(sqlite_backend(), postgres_backend()),
                         [](const auto& info) { return info.param.name; });

} // namespace
} // namespace wopbridge::store_contract
