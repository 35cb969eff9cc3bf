// What must hold when several bridge nodes share one PostgreSQL database: each "node" here is its
// own store instance (own connections, own intake writer) on the same database. The backend-neutral
// behaviour is covered by store_contract*_test.cpp (parameterised over backends).
#include "store/postgres/pg_migrations.hpp"
#include "store/store.hpp"
#include "support/eventually.hpp"
#include "support/fake_clock.hpp"
#include "support/postgres_server.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <future>
#include <latch>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace wopbridge {
namespace {

using testing::t0;

class PostgresStoreTest : public ::testing::Test {
  protected:
    void SetUp() override {
        server_ = testing::postgres_server::shared();
        if (server_ == nullptr) {
            GTEST_SKIP() << "PostgreSQL unavailable: "
                         << testing::postgres_server::shared_unavailable_reason();
        }
        db_ = server_->create_database();
        ASSERT_FALSE(db_.empty());
        a_ = open_node();
        b_ = open_node();
        ASSERT_TRUE(a_ && b_);
    }

    std::unique_ptr<store> open_node() {
        auto s = open_postgres_store(postgres_options{server_->url(db_)});
        EXPECT_TRUE(s) << s.error().message;
        return s ? std::move(*s) : nullptr;
    }

    static subscription make_subscription(const std::string& id,
                                          sub_state state = sub_state::active) {
        subscription s;
        s.id = id;
        s.tenant = "acme";
        s.state = state;
        s.workflow_id = "wf";
        s.webhook_id = "wh_" + id;
        s.created_at = t0;
        s.updated_at = t0;
        return s;
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
        r.content_json = R"({"n":")" + suffix + R"("})";
        r.dedup_expires_at = at + 24 * 3600 * 1000;
        return r;
    }

    static attempt_record record(const delivery& d, int attempt, attempt_outcome outcome,
                                 millis at) {
        attempt_record rec;
        rec.delivery_id = d.id;
        rec.subscription_id = d.subscription_id;
        rec.at = at;
        rec.attempt = {d.subscription_id, d.dedup_key, attempt, outcome, {}};
        rec.attempt_event_id =
            "evt_att_" + d.id + "_" + std::to_string(attempt) + "_" + std::to_string(at);
        if (outcome == attempt_outcome::delivered) {
            rec.attempt.run_id = d.run_id;
            rec.run = run_record{
                d.run_id, d.tenant, "wf", d.subscription_id, d.id, run_status::running, "", at, at};
            rec.run_started_event_id = "evt_start_" + d.id;
            rec.run_started_payload_json = "{}";
        } else if (outcome == attempt_outcome::retrying) {
            rec.next_due_at = at + 1000;
            rec.error = "upstream 503";
        }
        return rec;
    }

    testing::postgres_server* server_ = nullptr;
    std::string db_;
    std::unique_ptr<store> a_;
    std::unique_ptr<store> b_;
};

TEST_F(PostgresStoreTest, SameKeyOnTwoNodesAtOnceIsAcceptedOnce) {
    ASSERT_TRUE(a_->insert_subscription(make_subscription("sub_a")));
    constexpr int keys = 20;
    constexpr int per_node = 3; // threads per node per key
    for (int k = 0; k < keys; ++k) {
        const std::string key = "key" + std::to_string(k);
        std::latch start(2 * per_node);
        std::vector<result<intake_outcome>> out(2 * per_node, errc::internal);
        std::vector<std::thread> pool;
        for (int i = 0; i < 2 * per_node; ++i) {
            pool.emplace_back([&, i] {
                store& node = i % 2 == 0 ? *a_ : *b_;
                start.arrive_and_wait();
                out[i] = node.intake_sync(
                    make_intake("sub_a", key, std::to_string(k) + "_" + std::to_string(i)));
            });
        }
        for (auto& t : pool) {
            t.join();
        }
        int accepted = 0;
        std::set<std::string> deliveries;
        for (const auto& o : out) {
            ASSERT_TRUE(o) << o.error().message();
            accepted += o->status == intake_status::accepted ? 1 : 0;
            deliveries.insert(o->delivery_id);
        }
        EXPECT_EQ(accepted, 1) << key;
        EXPECT_EQ(deliveries.size(), 1u) << key;
    }
    auto page = b_->list_deliveries("sub_a", {1000, {}});
    ASSERT_TRUE(page);
    EXPECT_EQ(page->items.size(), static_cast<std::size_t>(keys));
}

TEST_F(PostgresStoreTest, ClaimsFromTwoNodesNeverOverlap) {
    ASSERT_TRUE(a_->insert_subscription(make_subscription("sub_a")));
    constexpr int total = 300;
    for (int i = 0; i < total; ++i) {
        a_->intake(make_intake("sub_a", "k" + std::to_string(i), std::to_string(i), t0 + i % 7),
                   nullptr);
    }
    ASSERT_TRUE(a_->intake_sync(make_intake("sub_a", "last", "last"))); // after the queue drains
    std::vector<std::string> got_a;
    std::vector<std::string> got_b;
    std::latch start(4);
    std::mutex mu;
    std::atomic<int> errors{0};
    auto worker = [&](store& node, std::vector<std::string>& got) {
        start.arrive_and_wait();
        for (;;) {
            auto c = node.claim_due(t0 + 10, 7, 600000);
            if (!c) {
                ++errors;
                return;
            }
            if (c->empty()) {
                return;
            }
            std::lock_guard lock(mu);
            for (const auto& d : *c) {
                got.push_back(d.id);
            }
        }
    };
    std::vector<std::thread> pool;
    pool.emplace_back(worker, std::ref(*a_), std::ref(got_a));
    pool.emplace_back(worker, std::ref(*a_), std::ref(got_a));
    pool.emplace_back(worker, std::ref(*b_), std::ref(got_b));
    pool.emplace_back(worker, std::ref(*b_), std::ref(got_b));
    for (auto& t : pool) {
        t.join();
    }
    EXPECT_EQ(errors.load(), 0);
    std::set<std::string> all(got_a.begin(), got_a.end());
    all.insert(got_b.begin(), got_b.end());
    EXPECT_EQ(got_a.size() + got_b.size(), all.size()) << "a delivery was claimed twice";
    EXPECT_EQ(all.size(), static_cast<std::size_t>(total + 1));
    EXPECT_FALSE(got_b.empty());
}

TEST_F(PostgresStoreTest, LostLeaseMovesToOtherNodeAndLateRecordIsRefused) {
    ASSERT_TRUE(a_->insert_subscription(make_subscription("sub_a")));
    ASSERT_TRUE(a_->intake_sync(make_intake("sub_a", "k", "1")));
    auto on_a = a_->claim_due(t0, 10, 1000);
    ASSERT_TRUE(on_a);
    ASSERT_EQ(on_a->size(), 1u);
    ASSERT_TRUE(b_->claim_due(t0 + 999, 10, 1000)->empty()); // A's lease still holds
    auto on_b = b_->claim_due(t0 + 1000, 10, 60000);         // A "died": its lease ran out
    ASSERT_TRUE(on_b);
    ASSERT_EQ(on_b->size(), 1u);
    EXPECT_EQ((*on_b)[0].id, "dlv_1");

    // A comes back and reports the attempt it made: refused, B owns the delivery now.
    EXPECT_EQ(
        a_->record_attempt(record((*on_a)[0], 1, attempt_outcome::delivered, t0 + 1500)).error(),
        errc::conflict);
    EXPECT_EQ(a_->get_run("run_1").error(), errc::not_found);
    ASSERT_TRUE(b_->record_attempt(record((*on_b)[0], 1, attempt_outcome::retrying, t0 + 1600)));
    auto d = a_->get_delivery("dlv_1");
    ASSERT_TRUE(d);
    EXPECT_EQ(d->attempts, 1); // exactly the attempts that were recorded
    EXPECT_EQ(d->status, delivery_status::pending);
    EXPECT_EQ(b_->subscription_events("sub_a")->size(), 1u);
}

TEST_F(PostgresStoreTest, RunSequencesStayGapFreeWithTwoNodesAppending) {
    ASSERT_TRUE(a_->insert_subscription(make_subscription("sub_a")));
    ASSERT_TRUE(a_->intake_sync(make_intake("sub_a", "k", "1")));
    auto c = a_->claim_due(t0, 1, 60000);
    ASSERT_TRUE(c);
    ASSERT_EQ(c->size(), 1u);
    ASSERT_TRUE(a_->record_attempt(record((*c)[0], 1, attempt_outcome::delivered, t0)));
    constexpr int threads = 6;
    constexpr int per_thread = 40;
    std::latch start(threads);
    std::atomic<int> failures{0};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
            store& node = t % 2 == 0 ? *a_ : *b_;
            start.arrive_and_wait();
            for (int i = 0; i < per_thread; ++i) {
                auto id = "evt_" + std::to_string(t) + "_" + std::to_string(i);
                if (!node.append_run_event("run_1", "run.log", "{}", {}, id, t0)) {
                    ++failures;
                }
            }
        });
    }
    for (auto& th : pool) {
        th.join();
    }
    EXPECT_EQ(failures.load(), 0);
    auto events = b_->run_events_after("run_1", -1, 1000);
    ASSERT_TRUE(events);
    ASSERT_EQ(events->size(), static_cast<std::size_t>(2 + threads * per_thread));
    for (std::size_t i = 0; i < events->size(); ++i) {
        ASSERT_EQ((*events)[i].sequence, static_cast<std::int64_t>(i));
    }
}

TEST_F(PostgresStoreTest, StateChangeOnOneNodeIsVisibleOnTheOtherAtOnce) {
    ASSERT_TRUE(a_->insert_subscription(make_subscription("sub_a")));
    ASSERT_TRUE(b_->intake_sync(make_intake("sub_a", "k", "1")));
    EXPECT_EQ(b_->get_subscription("sub_a")->state, sub_state::active); // B has read it before
    ASSERT_TRUE(a_->change_state({"sub_a", source_kind::webhook, sub_state::active,
                                  sub_state::paused, state_reason::operator_paused},
                                 "evt_sc_1", t0 + 1));
    EXPECT_EQ(b_->get_subscription("sub_a")->state, sub_state::paused);
    EXPECT_TRUE(b_->claim_due(t0 + 10, 10, 1000)->empty()); // B delivers nothing for it
    // B's view is the same row: a compare-and-set from the stale state conflicts.
    EXPECT_EQ(b_->change_state({"sub_a", source_kind::webhook, sub_state::active, sub_state::failed,
                                state_reason::retry_exhausted},
                               "evt_sc_2", t0 + 2)
                  .error(),
              errc::conflict);
    EXPECT_EQ(b_->subscription_events("sub_a")->size(), 1u);
}

TEST_F(PostgresStoreTest, FailedSubscriptionHasOneProbeAcrossNodes) {
    auto s = make_subscription("sub_f", sub_state::failed);
    s.next_probe_at = t0 + 100;
    ASSERT_TRUE(a_->insert_subscription(s));
    for (int i = 0; i < 5; ++i) {
        ASSERT_TRUE(
            a_->intake_sync(make_intake("sub_f", "k" + std::to_string(i), std::to_string(i))));
    }
    for (int round = 0; round < 10; ++round) {
        const millis now = t0 + 100 + round * 10;
        std::latch start(4);
        std::atomic<int> claimed{0};
        std::vector<std::thread> pool;
        for (int t = 0; t < 4; ++t) {
            pool.emplace_back([&, t] {
                store& node = t % 2 == 0 ? *a_ : *b_;
                start.arrive_and_wait();
                auto c = node.claim_due(now, 10, 60000);
                if (c) {
                    claimed += static_cast<int>(c->size());
                }
            });
        }
        for (auto& th : pool) {
            th.join();
        }
        // The first round takes the probe; later rounds see it in flight.
        EXPECT_EQ(claimed.load(), round == 0 ? 1 : 0) << "round " << round;
    }
}

TEST_F(PostgresStoreTest, ServerRestartAnswersUnavailableThenRecovers) {
    ASSERT_TRUE(a_->insert_subscription(make_subscription("sub_a")));
    ASSERT_TRUE(a_->intake_sync(make_intake("sub_a", "k0", "0")));
    ASSERT_TRUE(server_->stop());

    EXPECT_EQ(a_->get_subscription("sub_a").error(), errc::store_unavailable);
    EXPECT_EQ(a_->intake_sync(make_intake("sub_a", "k1", "1")).error(), errc::store_unavailable);
    EXPECT_EQ(a_->ping().error(), errc::store_unavailable);
    EXPECT_EQ(a_->claim_due(t0, 10, 1000).error(), errc::store_unavailable);
    EXPECT_EQ(b_->change_state({"sub_a", source_kind::webhook, sub_state::active, sub_state::paused,
                                state_reason::operator_paused},
                               "evt_sc", t0)
                  .error(),
              errc::store_unavailable);

    ASSERT_TRUE(server_->start());
    // No reopen: the stores reconnect on their own.
    EXPECT_TRUE(a_->ping());
    auto again = a_->intake_sync(make_intake("sub_a", "k1", "1"));
    ASSERT_TRUE(again) << again.error().message();
    EXPECT_EQ(again->status, intake_status::accepted);
    EXPECT_EQ(a_->get_subscription("sub_a")->id, "sub_a");
    EXPECT_TRUE(b_->change_state({"sub_a", source_kind::webhook, sub_state::active,
                                  sub_state::paused, state_reason::operator_paused},
                                 "evt_sc", t0));
    EXPECT_EQ(b_->list_deliveries("sub_a", {})->items.size(), 2u);
}

TEST_F(PostgresStoreTest, IdleNodeAnswersAtOnceAfterServerRestart) {
    ASSERT_TRUE(a_->insert_subscription(make_subscription("sub_a")));
    // Restarted while the node was idle: its connections are dead, but nothing failed yet.
    ASSERT_TRUE(server_->stop());
    ASSERT_TRUE(server_->start());
    EXPECT_EQ(a_->get_subscription("sub_a")->id, "sub_a");
    auto out = a_->intake_sync(make_intake("sub_a", "k", "1"));
    ASSERT_TRUE(out) << out.error().message();
    EXPECT_EQ(out->status, intake_status::accepted);
    auto claimed = b_->claim_due(t0, 10, 1000);
    ASSERT_TRUE(claimed) << claimed.error().message();
    EXPECT_EQ(claimed->size(), 1u);
}

TEST_F(PostgresStoreTest, MigrationsRunOnceWhenNodesStartTogether) {
    const std::string fresh = server_->create_database();
    ASSERT_FALSE(fresh.empty());
    constexpr int nodes = 4;
    std::latch start(nodes);
    std::vector<std::unique_ptr<store>> opened(nodes);
    std::vector<std::string> errors(nodes);
    std::vector<std::thread> pool;
    for (int i = 0; i < nodes; ++i) {
        pool.emplace_back([&, i] {
            start.arrive_and_wait();
            auto s = open_postgres_store(postgres_options{server_->url(fresh)});
            if (s) {
                opened[i] = std::move(*s);
            } else {
                errors[i] = s.error().message;
            }
        });
    }
    for (auto& t : pool) {
        t.join();
    }
    for (int i = 0; i < nodes; ++i) {
        EXPECT_TRUE(opened[i]) << errors[i];
    }
    std::string out;
    // Each migration recorded once, up to the latest.
    ASSERT_TRUE(server_->sql(fresh,
                             "SELECT COUNT(*) = COUNT(DISTINCT version), MAX(version) "
                             "FROM schema_migrations",
                             &out));
    EXPECT_EQ(out, "t|" + std::to_string(postgres::latest_schema_version()));
    ASSERT_TRUE(opened[0]->insert_subscription(make_subscription("sub_a")));
    EXPECT_EQ(opened[3]->get_subscription("sub_a")->id, "sub_a");
}

// A database at schema version 1 (before whenNotActive and outbound webhooks) upgrades in place:
// its subscriptions read back as `refuse`, the behaviour they had, and the column stores `hold`.
// Each node caches subscriptions; a change made through another node, or by SQL outside any node,
// is announced at its commit and seen by the next read well before the cache's 5 s lifetime.
TEST_F(PostgresStoreTest, ASubscriptionChangedElsewhereIsSeenAtOnceByEveryNode) {
    ASSERT_TRUE(a_->insert_subscription(make_subscription("sub_a")));
    auto seen_by_a = [&](auto pred) {
        return testing::eventually([&] {
            auto s = a_->get_subscription("sub_a");
            return s && pred(*s);
        }, std::chrono::seconds(2));
    };
    // Node a's cache is live (its listener is connected), and a has read (cached) the row.
    ASSERT_TRUE(testing::eventually([&] { return a_->stats().subscription_cache_live; },
                                    std::chrono::seconds(5)));
    ASSERT_EQ(a_->get_subscription("sub_a")->state, sub_state::active);
    ASSERT_TRUE(b_->change_state(
        {"sub_a", source_kind::webhook, sub_state::active, sub_state::paused, state_reason::none},
        "evt_sc_1", t0 + 1));
    EXPECT_TRUE(seen_by_a([](const subscription& s) { return s.state == sub_state::paused; }));
    ASSERT_TRUE(server_->sql(db_, "UPDATE subscriptions SET workflow_id = 'wf_by_hand'"));
    EXPECT_TRUE(seen_by_a([](const subscription& s) { return s.workflow_id == "wf_by_hand"; }));
    ASSERT_TRUE(b_->delete_subscription("sub_a"));
    EXPECT_TRUE(testing::eventually(
        [&] { return a_->get_subscription("sub_a").error() == errc::not_found; },
        std::chrono::seconds(2)));
}

TEST_F(PostgresStoreTest, MigrationTwoUpgradesAVersionOneDatabase) {
    ASSERT_TRUE(a_->insert_subscription(make_subscription("sub_old")));
    a_.reset();
    b_.reset();
    // Back to what migration 1 left.
    ASSERT_TRUE(server_->sql(db_, "DROP TABLE outbound_dead_letters, outbound_state_changes, "
                                  "outbound_failures, outbound_deliveries, outbound_webhooks"));
    ASSERT_TRUE(server_->sql(db_, "ALTER TABLE subscriptions DROP COLUMN when_not_active, "
                                  "DROP COLUMN max_concurrency"));
    ASSERT_TRUE(server_->sql(db_, "DROP FUNCTION wopbridge_subscription_changed() CASCADE"));
    ASSERT_TRUE(server_->sql(db_, "DROP INDEX deliveries_by_subscription_status_due"));
    ASSERT_TRUE(server_->sql(db_, "DROP TABLE store_meta"));
    ASSERT_TRUE(server_->sql(db_, "DROP TABLE replay_job_items, replay_jobs"));
    ASSERT_TRUE(server_->sql(db_, "DROP TABLE nodes"));
    ASSERT_TRUE(server_->sql(db_, "ALTER TABLE deliveries DROP COLUMN claimed_by"));
    ASSERT_TRUE(server_->sql(db_, "DROP INDEX deliveries_leased_by_subscription; CREATE INDEX "
                                  "deliveries_leased ON deliveries (lease_until) "
                                  "WHERE status = 'in_flight'"));
    ASSERT_TRUE(server_->sql(db_, "DELETE FROM schema_migrations WHERE version >= 2"));

    a_ = open_node();
    ASSERT_TRUE(a_);
    auto old = a_->get_subscription("sub_old");
    ASSERT_TRUE(old) << old.error().message();
    EXPECT_FALSE(old->hold_when_not_active);
    auto held = make_subscription("sub_new", sub_state::paused);
    held.hold_when_not_active = true;
    ASSERT_TRUE(a_->insert_subscription(held));
    std::string out;
    ASSERT_TRUE(server_->sql(
        db_, "SELECT string_agg(id || '=' || when_not_active, ',' ORDER BY id) FROM subscriptions",
        &out));
    EXPECT_EQ(out, "sub_new=hold,sub_old=refuse");
    ASSERT_TRUE(server_->sql(db_, "SELECT MAX(version) FROM schema_migrations", &out));
    EXPECT_EQ(out, std::to_string(postgres::latest_schema_version()));
    EXPECT_TRUE(a_->list_outbound_webhooks("acme")); // the outbound tables exist again
    // Migration 11: an event's run is found by the statement that writes it, not by a check.
    ASSERT_TRUE(server_->sql(
        db_, "SELECT COUNT(*) FROM pg_constraint WHERE conname = 'run_events_run_id_fkey'", &out));
    EXPECT_EQ(out, "0");
}

TEST_F(PostgresStoreTest, TextThatIsNotUtf8FailsAloneAsInvalidArgument) {
    ASSERT_TRUE(a_->insert_subscription(make_subscription("sub_a")));
    std::promise<void> all_queued;
    auto queued = all_queued.get_future().share();
    std::vector<result<intake_outcome>> out(3, errc::internal);
    std::latch done(3);
    a_->intake(make_intake("sub_a", "gate", "gate"), [&, queued](result<intake_outcome> r) {
        queued.wait();
        out[0] = std::move(r);
        done.count_down();
    });
    a_->intake(make_intake("sub_a", "bad\xff\xfekey", "bad"), [&](result<intake_outcome> r) {
        out[1] = std::move(r);
        done.count_down();
    });
    a_->intake(make_intake("sub_a", "good", "good"), [&](result<intake_outcome> r) {
        out[2] = std::move(r);
        done.count_down();
    });
    all_queued.set_value();
    done.wait();
    EXPECT_TRUE(out[0]);
    EXPECT_EQ(out[1].error(), errc::invalid_argument);
    ASSERT_TRUE(out[2]);
    EXPECT_EQ(out[2]->status, intake_status::accepted);
}

TEST_F(PostgresStoreTest, NewerSchemaIsRefusedAsUnsupported) {
    ASSERT_TRUE(server_->sql(db_, "INSERT INTO schema_migrations VALUES (999, 0)"));
    auto s = open_postgres_store(postgres_options{server_->url(db_)});
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().code, errc::unsupported);
    EXPECT_NE(s.error().message.find("newer"), std::string::npos);
}

TEST_F(PostgresStoreTest, UnreachableServerIsStoreUnavailableWithoutTheUrl) {
    postgres_options opts{"postgresql://postgres:hunter2@127.0.0.1:1/nope"};
    opts.connect_timeout_s = 2;
    auto s = open_postgres_store(opts);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().code, errc::store_unavailable);
    EXPECT_EQ(s.error().message.find("hunter2"), std::string::npos);
}

// Measurements, not assertions: round trips per accepted intake / per delivered attempt and a rough
// intake rate with one and two nodes. Run with --gtest_also_run_disabled_tests.
TEST_F(PostgresStoreTest, DISABLED_MeasureRoundTripsAndThroughput) {
    ASSERT_TRUE(a_->insert_subscription(make_subscription("sub_a")));
    // Sequential intakes: one request per batch.
    auto before = a_->stats();
    constexpr int sequential = 50;
    for (int i = 0; i < sequential; ++i) {
        const auto id = "s" + std::to_string(i);
        ASSERT_TRUE(a_->intake_sync(make_intake("sub_a", id, id)));
    }
    auto after = a_->stats();
    std::printf("round trips per accepted intake (sequential, batch of 1): %.2f\n",
                double(after.round_trips - before.round_trips) / sequential);
    // Delivered attempts: claim one at a time, record delivered.
    std::uint64_t claim_trips = 0;
    std::uint64_t record_trips = 0;
    for (int i = 0; i < sequential; ++i) {
        before = a_->stats();
        auto c = a_->claim_due(t0 + 1, 1, 60000);
        ASSERT_TRUE(c);
        ASSERT_EQ(c->size(), 1u);
        after = a_->stats();
        claim_trips += after.round_trips - before.round_trips;
        ASSERT_TRUE(a_->record_attempt(record((*c)[0], 1, attempt_outcome::delivered, t0 + 1)));
        record_trips += a_->stats().round_trips - after.round_trips;
    }
    before = a_->stats();
    ASSERT_TRUE(a_->claim_due(t0 + 1, 1, 60000)->empty());
    std::printf("round trips per delivered attempt: claim_due %.2f + record_attempt %.2f "
                "(an idle claim_due: %llu)\n",
                double(claim_trips) / sequential, double(record_trips) / sequential,
                static_cast<unsigned long long>(a_->stats().round_trips - before.round_trips));

    auto rate = [&](std::vector<store*> nodes, const std::string& tag) {
        constexpr int threads_per_node = 16;
        constexpr int per_thread = 150;
        std::vector<store_stats> start_stats;
        for (auto* n : nodes) {
            start_stats.push_back(n->stats());
        }
        std::atomic<int> ok{0};
        const auto started = std::chrono::steady_clock::now();
        std::vector<std::thread> pool;
        for (std::size_t n = 0; n < nodes.size(); ++n) {
            for (int t = 0; t < threads_per_node; ++t) {
                pool.emplace_back([&, n, t] {
                    for (int i = 0; i < per_thread; ++i) {
                        auto id = tag + "_" + std::to_string(n) + "_" + std::to_string(t) + "_" +
                                  std::to_string(i);
                        if (nodes[n]->intake_sync(make_intake("sub_a", id, id))) {
                            ++ok;
                        }
                    }
                });
            }
        }
        for (auto& th : pool) {
            th.join();
        }
        const double secs =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        std::uint64_t trips = 0;
        std::uint64_t batches = 0;
        for (std::size_t n = 0; n < nodes.size(); ++n) {
            trips += nodes[n]->stats().round_trips - start_stats[n].round_trips;
            batches += nodes[n]->stats().intake_batches - start_stats[n].intake_batches;
        }
        std::printf("%zu node(s), %d concurrent callers: %d intakes in %.2f s = %.0f/s, "
                    "%.1f per batch, %.2f round trips per intake\n",
                    nodes.size(), int(nodes.size()) * threads_per_node, ok.load(), secs,
                    ok.load() / secs, double(ok.load()) / double(batches),
                    double(trips) / ok.load());
    };
    rate({a_.get()}, "one");
    rate({a_.get(), b_.get()}, "two");
}

} // namespace
} // namespace wopbridge
