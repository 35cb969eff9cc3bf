// Stores written by earlier releases' schemas opened by this build: version 9 (content in
// delivery_contents, AUTOINCREMENT deliveries, WITHOUT ROWID run_events), which migration 10 moved
// to the lean write path, and version 10 (the dedup table), which migration 11 folds into the
// delivery rows. Nothing they held is lost or changes meaning.
#include "store/sqlite/sqlite_connection.hpp"
#include "store/sqlite/sqlite_migrations.hpp"
#include "store/store.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace wopbridge {
namespace {

constexpr millis migrated_at = 1'800'000'000'000;

class SqliteMigrationTest : public ::testing::Test {
  protected:
    std::string path() const { return dir_.file("bridge.db"); }

    std::unique_ptr<sqlite::connection> raw(const std::string& file, bool create = false) {
        auto c = sqlite::connection::open(file, create, 1000);
        EXPECT_TRUE(c) << c.error().message;
        return c ? std::move(*c) : nullptr;
    }

    std::int64_t count(sqlite::connection& c, const std::string& sql) {
        auto st = c.prepare(sql.c_str());
        auto row = st.step();
        EXPECT_TRUE(row && *row) << sql << ": " << c.last_error();
        return row && *row ? st.int64(0) : -1;
    }

    // The previous release's file: schema 9, one subscription (copied from a store of this build:
    // its table did not change), a delivered delivery with its run and two events, a pending one.
    void write_previous_release_store() {
        {
            auto donor = open_sqlite_store(sqlite_options{dir_.file("donor.db")});
            ASSERT_TRUE(donor);
            subscription s;
            s.id = "sub_a";
            s.tenant = "acme";
            s.workflow_id = "wf_orders";
            s.created_at = s.updated_at = migrated_at;
            ASSERT_TRUE((*donor)->insert_subscription(s));
        }
        auto c = raw(path(), true);
        ASSERT_TRUE(c);
        auto migrated = sqlite::migrate_to(*c, 9);
        ASSERT_TRUE(migrated) << migrated.error().message;
        ASSERT_EQ(count(*c, "SELECT MAX(version) FROM schema_migrations"), 9);
        const std::string attach = "ATTACH DATABASE '" + dir_.file("donor.db") + "' AS donor";
        ASSERT_TRUE(c->exec(attach.c_str())) << c->last_error();
        ASSERT_TRUE(c->exec("INSERT INTO subscriptions SELECT * FROM donor.subscriptions"))
            << c->last_error();
        ASSERT_TRUE(c->exec("DETACH DATABASE donor"));
        const char* rows = R"sql(
INSERT INTO deliveries (id, subscription_id, tenant, dedup_key, run_id, status, attempts, due_at,
                        lease_until, received_at, updated_at, last_error)
    VALUES ('dlv_1', 'sub_a', 'acme', 'k1', 'run_1', 'delivered', 1, 1800000000000, 0,
            1800000000000, 1800000000001, ''),
           ('dlv_2', 'sub_a', 'acme', 'k2', 'run_2', 'pending', 0, 1800000000002, 0,
            1800000000002, 1800000000002, '');
INSERT INTO delivery_contents (delivery_id, content_json)
    VALUES ('dlv_1', '{"body":"first"}'), ('dlv_2', '{"body":"second"}');
INSERT INTO dedup (subscription_id, dedup_key, delivery_id, run_id, expires_at)
    VALUES ('sub_a', 'k1', 'dlv_1', 'run_1', 1800086400000),
           ('sub_a', 'k2', 'dlv_2', 'run_2', 1800086400002);
INSERT INTO runs (id, tenant, workflow_id, subscription_id, delivery_id, status, upstream_run_id,
                  created_at, updated_at)
    VALUES ('run_1', 'acme', 'wf_orders', 'sub_a', 'dlv_1', 'running', '', 1800000000001,
            1800000000001);
INSERT INTO run_events (run_id, sequence, event_id, type, payload_json, timestamp, causation_id)
    VALUES ('run_1', 0, 'evt_att_1', 'trigger.delivery.attempted', '{"attempt":1}',
            1800000000001, NULL),
           ('run_1', 1, 'evt_start_1', 'run.started', '{"workflowId":"wf_orders"}',
            1800000000001, 'evt_att_1');
)sql";
        ASSERT_TRUE(c->exec(rows)) << c->last_error();
    }

    testing::temp_dir dir_;
};

TEST_F(SqliteMigrationTest, PreviousReleaseStoreOpensServesAndLosesNothing) {
    write_previous_release_store();
    auto opened = open_sqlite_store(sqlite_options{path()});
    ASSERT_TRUE(opened);
    auto& st = **opened;

    // What it held reads back as it was written.
    EXPECT_EQ(st.delivery_content("dlv_1").value(), R"({"body":"first"})");
    EXPECT_EQ(st.delivery_content("dlv_2").value(), R"({"body":"second"})");
    auto first = st.get_delivery("dlv_1");
    ASSERT_TRUE(first);
    EXPECT_EQ(first->status, delivery_status::delivered);
    EXPECT_EQ(first->run_id, "run_1");
    auto log = st.run_events_after("run_1", -1, 10);
    ASSERT_TRUE(log);
    ASSERT_EQ(log->size(), 2u);
    EXPECT_EQ((*log)[0].event_id, "evt_att_1");
    EXPECT_EQ((*log)[0].sequence, 0);
    EXPECT_EQ((*log)[1].type, "run.started");
    EXPECT_EQ((*log)[1].causation_id, "evt_att_1");
    auto running = st.list_runs_with_status(run_status::running);
    ASSERT_TRUE(running);
    ASSERT_EQ(running->size(), 1u);
    EXPECT_EQ(running->front().id, "run_1");

    // Its dedup window still holds: a repeat of k1 is the same delivery and run.
    intake_request again;
    again.subscription_id = "sub_a";
    again.tenant = "acme";
    again.dedup_enabled = true;
    again.dedup_key = "k1";
    again.delivery_id = "dlv_9";
    again.run_id = "run_9";
    again.received_at = again.due_at = migrated_at + 10;
    again.content_json = "{}";
    again.dedup_expires_at = migrated_at + 86'400'000;
    auto dup = st.intake_sync(again);
    ASSERT_TRUE(dup);
    EXPECT_EQ(dup->status, intake_status::duplicate);
    EXPECT_EQ(dup->delivery_id, "dlv_1");
    EXPECT_EQ(dup->run_id, "run_1");

    // The pending delivery is still due, and its attempt starts its run at sequence 0.
    auto claimed = st.claim_due(migrated_at + 20, 10, 60'000);
    ASSERT_TRUE(claimed);
    ASSERT_EQ(claimed->size(), 1u);
    EXPECT_EQ(claimed->front().id, "dlv_2");
    attempt_record rec;
    rec.delivery_id = "dlv_2";
    rec.subscription_id = "sub_a";
    rec.at = migrated_at + 21;
    rec.attempt = {"sub_a", "k2", 1, attempt_outcome::delivered, "run_2"};
    rec.attempt_event_id = "evt_att_2";
    rec.run = run_record{"run_2", "acme", "wf_orders", "sub_a", "dlv_2", run_status::running,
                         "",      migrated_at + 21, migrated_at + 21};
    rec.run_started_event_id = "evt_start_2";
    rec.run_started_payload_json = R"({"workflowId":"wf_orders"})";
    ASSERT_TRUE(st.record_attempt(rec));
    auto second = st.run_events_after("run_2", -1, 10).value();
    ASSERT_EQ(second.size(), 2u);
    EXPECT_EQ(second[0].event_id, "evt_att_2");
    EXPECT_EQ(second[1].causation_id, "evt_att_2");

    // A new intake lands after the old rows, and event ids stay unique across the old log.
    again.dedup_key = "k3";
    ASSERT_EQ(st.intake_sync(again)->status, intake_status::accepted);
    auto page = st.list_deliveries("sub_a", page_request{});
    ASSERT_TRUE(page);
    ASSERT_EQ(page->items.size(), 3u);
    EXPECT_EQ(page->items[0].id, "dlv_9"); // newest first
    EXPECT_EQ(page->items[2].id, "dlv_1");
    EXPECT_EQ(st.append_run_event("run_1", "run.log", "{}", {}, "evt_start_1", migrated_at + 30).error(),
              errc::already_exists);
    auto appended = st.append_run_event("run_1", "run.log", "{}", {}, "evt_log_1", migrated_at + 30);
    ASSERT_TRUE(appended);
    EXPECT_EQ(appended->sequence, 2);
    opened->reset();

    auto c = raw(path());
    ASSERT_TRUE(c);
    EXPECT_EQ(count(*c, "SELECT MAX(version) FROM schema_migrations"),
              sqlite::latest_schema_version());
    EXPECT_EQ(count(*c, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'delivery_contents'"), 0);
    EXPECT_EQ(count(*c, "SELECT COUNT(*) FROM pragma_foreign_key_check"), 0);
    auto check = c->prepare("PRAGMA integrity_check");
    ASSERT_TRUE(check.step().value());
    EXPECT_EQ(check.text(0), "ok");
}

// The hot tables of the lean schema: content in the delivery row, no AUTOINCREMENT counter
// rewritten at every intake, runs keyed by id alone, run events appended in arrival order.
TEST_F(SqliteMigrationTest, LeanSchemaShapesTheHotTables) {
    ASSERT_TRUE(open_sqlite_store(sqlite_options{path()}));
    auto c = raw(path());
    ASSERT_TRUE(c);
    auto sql_of = [&](const char* name) {
        auto st = c->prepare("SELECT sql FROM sqlite_master WHERE name = ?1");
        st.bind(1, std::string_view(name));
        auto row = st.step();
        return row && *row ? st.text(0) : std::string{};
    };
    const auto deliveries = sql_of("deliveries");
    EXPECT_NE(deliveries.find("content_json"), std::string::npos);
    EXPECT_EQ(deliveries.find("AUTOINCREMENT"), std::string::npos);
    EXPECT_NE(sql_of("runs").find("WITHOUT ROWID"), std::string::npos);
    EXPECT_NE(sql_of("run_events").find("seq          INTEGER PRIMARY KEY"), std::string::npos);
    EXPECT_NE(sql_of("runs_running").find("WHERE status = 'running'"), std::string::npos);
    EXPECT_FALSE(sql_of("run_events_by_event_id").empty());
    // Dedup claims live in the delivery row (11); the due index holds only unsettled rows.
    EXPECT_TRUE(sql_of("dedup").empty());
    EXPECT_TRUE(sql_of("dedup_by_expiry").empty());
    EXPECT_NE(sql_of("deliveries_dedup").find("WHERE dedup_expires_at IS NOT NULL"),
              std::string::npos);
    EXPECT_NE(sql_of("deliveries_unsettled").find("WHERE status <> 'delivered'"),
              std::string::npos);
}

// A store of schema 10 (the dedup table beside deliveries): its live claims still hold, an
// expired one is taken by the next delivery of its key, and a key an older delivery once held
// belongs to the delivery its dedup row named.
TEST_F(SqliteMigrationTest, SchemaTenDedupRowsBecomeTheirDeliveriesClaims) {
    {
        auto donor = open_sqlite_store(sqlite_options{dir_.file("donor.db")});
        ASSERT_TRUE(donor);
        subscription s;
        s.id = "sub_a";
        s.tenant = "acme";
        s.workflow_id = "wf_orders";
        s.created_at = s.updated_at = migrated_at;
        ASSERT_TRUE((*donor)->insert_subscription(s));
    }
    {
        auto c = raw(path(), true);
        ASSERT_TRUE(c);
        auto migrated = sqlite::migrate_to(*c, 10);
        ASSERT_TRUE(migrated) << migrated.error().message;
        const std::string attach = "ATTACH DATABASE '" + dir_.file("donor.db") + "' AS donor";
        ASSERT_TRUE(c->exec(attach.c_str())) << c->last_error();
        ASSERT_TRUE(c->exec("INSERT INTO subscriptions SELECT * FROM donor.subscriptions"))
            << c->last_error();
        ASSERT_TRUE(c->exec("DETACH DATABASE donor"));
        // k_old: dlv_0 held it, its retention ran out and dlv_3 took it over (the row names
        // dlv_3). k_live: dlv_1, within retention. k_gone: dlv_2, retention over.
        const char* rows = R"sql(
INSERT INTO deliveries (id, subscription_id, tenant, dedup_key, run_id, status, attempts, due_at,
                        lease_until, received_at, updated_at, last_error, content_json)
    VALUES ('dlv_0', 'sub_a', 'acme', 'k_old', 'run_0', 'delivered', 1, 1700000000000, 0,
            1700000000000, 1700000000000, '', '{}'),
           ('dlv_1', 'sub_a', 'acme', 'k_live', 'run_1', 'delivered', 1, 1800000000000, 0,
            1800000000000, 1800000000000, '', '{}'),
           ('dlv_2', 'sub_a', 'acme', 'k_gone', 'run_2', 'pending', 0, 1799000000000, 0,
            1799000000000, 1799000000000, '', '{}'),
           ('dlv_3', 'sub_a', 'acme', 'k_old', 'run_3', 'pending', 0, 1800000000000, 0,
            1800000000000, 1800000000000, '', '{}');
INSERT INTO dedup (subscription_id, dedup_key, delivery_id, run_id, expires_at)
    VALUES ('sub_a', 'k_live', 'dlv_1', 'run_1', 1800086400000),
           ('sub_a', 'k_gone', 'dlv_2', 'run_2', 1799086400000),
           ('sub_a', 'k_old', 'dlv_3', 'run_3', 1800086400000);
)sql";
        ASSERT_TRUE(c->exec(rows)) << c->last_error();
    }
    auto opened = open_sqlite_store(sqlite_options{path()});
    ASSERT_TRUE(opened);
    auto& st = **opened;
    auto intake = [&](const std::string& key, const std::string& n) {
        intake_request r;
        r.subscription_id = "sub_a";
        r.tenant = "acme";
        r.dedup_enabled = true;
        r.dedup_key = key;
        r.delivery_id = "dlv_new_" + n;
        r.run_id = "run_new_" + n;
        r.received_at = r.due_at = migrated_at + 10;
        r.content_json = "{}";
        r.dedup_expires_at = migrated_at + 86'400'000;
        return st.intake_sync(r).value();
    };
    auto live = intake("k_live", "a");
    EXPECT_EQ(live.status, intake_status::duplicate);
    EXPECT_EQ(live.delivery_id, "dlv_1");
    EXPECT_EQ(live.run_id, "run_1");
    auto old = intake("k_old", "b");
    EXPECT_EQ(old.status, intake_status::duplicate);
    EXPECT_EQ(old.delivery_id, "dlv_3");
    auto gone = intake("k_gone", "c");
    EXPECT_EQ(gone.status, intake_status::accepted);
    EXPECT_EQ(gone.delivery_id, "dlv_new_c");
    EXPECT_EQ(intake("k_gone", "d").delivery_id, "dlv_new_c"); // the new claim holds
    auto found = st.deliveries_by_dedup_key("sub_a", {"k_live", "k_old", "k_gone", "k_none"});
    ASSERT_TRUE(found);
    EXPECT_EQ(found->size(), 3u);
    EXPECT_EQ(found->at("k_old").id, "dlv_3");
    EXPECT_EQ(found->at("k_gone").id, "dlv_new_c");
    // The pending deliveries of the old file are still due, in arrival order.
    auto claimed = st.claim_due(migrated_at + 20, 10, 60'000);
    ASSERT_TRUE(claimed);
    ASSERT_EQ(claimed->size(), 3u);
    EXPECT_EQ(claimed->at(0).id, "dlv_2");
    opened->reset();

    auto c = raw(path());
    ASSERT_TRUE(c);
    EXPECT_EQ(count(*c, "SELECT COUNT(*) FROM deliveries WHERE dedup_expires_at IS NOT NULL"), 3);
    auto check = c->prepare("PRAGMA integrity_check");
    ASSERT_TRUE(check.step().value());
    EXPECT_EQ(check.text(0), "ok");
}

} // namespace
} // namespace wopbridge
