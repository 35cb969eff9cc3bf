// The store contract: pages, run logs, host keys, group commit, nodes and housekeeping.
#include "unit/store/store_contract.hpp"

namespace wopbridge::store_contract {
namespace {

using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

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
    ASSERT_TRUE(ro) << ro.error().message;
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

// A dedup claim holds through its expiry instant and not after, whether or not the sweep has
// run: PostgreSQL deletes the expired row, SQLite leaves the claim in its delivery row until the
// key comes again (nothing to delete).
TEST_P(StoreContractTest, PingAndPurge) {
    EXPECT_TRUE(store_->ping());
    add_subscription("sub_a");
    auto r = make_intake("sub_a", "k", "1");
    r.dedup_expires_at = t0 + 10;
    must_intake(r);
    EXPECT_EQ(*store_->purge_expired(t0 + 10), 0);
    auto within = make_intake("sub_a", "k", "2", t0 + 10);
    EXPECT_EQ(must_intake(within).status, intake_status::duplicate);
    const int swept = *store_->purge_expired(t0 + 11);
    EXPECT_EQ(swept, GetParam().name == "postgres" ? 1 : 0);
    auto after = make_intake("sub_a", "k", "3", t0 + 11);
    auto taken = must_intake(after);
    EXPECT_EQ(taken.status, intake_status::accepted);
    EXPECT_EQ(taken.delivery_id, "dlv_3");
    EXPECT_EQ(must_intake(make_intake("sub_a", "k", "4", t0 + 12)).delivery_id, "dlv_3");
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

    // The scrape's read gives the same work counts, without the history.
    for (const millis at : {t0 + 10, t0 + 30, t0 + 100000}) {
        auto all = store_->delivery_stats(at);
        auto work = store_->outstanding_work(at);
        ASSERT_TRUE(all && work) << "at " << at;
        std::vector<subscription_delivery_stats> expected;
        for (auto s : *all) {
            s.delivered = 0;
            s.dead_lettered = 0;
            if (s.pending + s.in_flight + s.held + s.dead_letters > 0) {
                expected.push_back(s);
            }
        }
        ASSERT_EQ(work->size(), expected.size()) << "at " << at;
        for (std::size_t i = 0; i < expected.size(); ++i) {
            const auto& w = (*work)[i];
            const auto& e = expected[i];
            EXPECT_EQ(w.subscription_id, e.subscription_id);
            EXPECT_EQ(std::tie(w.pending, w.due, w.in_flight, w.held, w.dead_letters),
                      std::tie(e.pending, e.due, e.in_flight, e.held, e.dead_letters))
                << w.subscription_id << " at " << at;
            EXPECT_EQ(w.delivered + w.dead_lettered, 0);
        }
    }
}

} // namespace
} // namespace wopbridge::store_contract
