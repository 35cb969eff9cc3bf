// SQLite-specific behaviour of the store (the shared contract is in store_contract*_test.cpp). Uses
// the backend's own connection wrapper to reach under the store, as only store/sqlite/ may.
#include "store/sqlite/sqlite_connection.hpp"
#include "store/sqlite/sqlite_due_queries.hpp"
#include "store/sqlite/sqlite_migrations.hpp"
#include "store/store.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <chrono>
#include <condition_variable>
#include <fstream>
#include <future>
#include <mutex>
#include <string>
#include <vector>

namespace wopbridge {
namespace {

class SqliteStoreTest : public ::testing::Test {
  protected:
    std::string path() const { return dir_.file("bridge.db"); }

    std::unique_ptr<sqlite::connection> raw() {
        auto c = sqlite::connection::open(path(), false, 1000);
        EXPECT_TRUE(c) << c.error().message;
        return c ? std::move(*c) : nullptr;
    }

    // The `detail` column of EXPLAIN QUERY PLAN, one entry per plan step.
    std::vector<std::string> plan(const char* sql) {
        auto c = raw();
        std::vector<std::string> out;
        if (!c) {
            return out;
        }
        const std::string explain = std::string("EXPLAIN QUERY PLAN ") + sql;
        sqlite3_stmt* st = nullptr;
        EXPECT_EQ(sqlite3_prepare_v2(c->handle(), explain.c_str(), -1, &st, nullptr), SQLITE_OK)
            << c->last_error();
        while (st != nullptr && sqlite3_step(st) == SQLITE_ROW) {
            out.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(st, 3)));
        }
        sqlite3_finalize(st);
        return out;
    }

    // Every step that reads deliveries seeks the per-subscription due index; none scans the table
    // or walks the status index (whose cost grows with the whole backlog), none sorts.
    void expect_per_subscription_plan(const char* name, const char* sql) {
        auto steps = plan(sql);
        ASSERT_FALSE(steps.empty()) << name;
        bool seeks = false;
        for (const auto& step : steps) {
            SCOPED_TRACE(std::string(name) + ": " + step);
            const bool reads_deliveries = step.rfind("SEARCH d ", 0) == 0 ||
                                          step.rfind("SEARCH x ", 0) == 0 ||
                                          step.rfind("SCAN d", 0) == 0 ||
                                          step.rfind("SCAN x", 0) == 0;
            if (reads_deliveries) {
                EXPECT_NE(step.find("deliveries_unsettled (subscription_id=? AND "
                                    "status=?"),
                          std::string::npos);
                seeks = true;
            }
            EXPECT_EQ(step.find("deliveries_by_status_due"), std::string::npos);
            EXPECT_EQ(step.find("TEMP B-TREE"), std::string::npos);
        }
        EXPECT_TRUE(seeks) << name;
    }

    testing::temp_dir dir_;
};

TEST_F(SqliteStoreTest, RefusesInMemoryDatabases) {
    for (const char* p : {":memory:", "file::memory:?cache=shared", "file:x?mode=memory", ""}) {
        auto s = open_sqlite_store(sqlite_options{p});
        ASSERT_FALSE(s) << p;
        EXPECT_EQ(s.error().code, errc::invalid_argument) << p;
        EXPECT_FALSE(s.error().message.empty());
    }
}

TEST_F(SqliteStoreTest, UnopenablePathIsStoreUnavailable) {
    auto s = open_sqlite_store(sqlite_options{dir_.file("missing-dir/bridge.db")});
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().code, errc::store_unavailable);
    EXPECT_FALSE(s.error().message.empty());
}

// Whatever the umask, a new store and its -wal / -shm are readable by their owner only.
TEST_F(SqliteStoreTest, ANewStoreIsCreatedOwnerOnly) {
    const mode_t old = ::umask(022);
    auto s = open_sqlite_store(sqlite_options{path()});
    ::umask(old);
    ASSERT_TRUE(s);
    struct stat st {};
    ASSERT_EQ(::stat(path().c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    ASSERT_TRUE((*s)->probe_write()); // the WAL exists once something was written
    ASSERT_EQ(::stat((path() + "-wal").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(SqliteStoreTest, MigratesOnceAndUsesWal) {
    ASSERT_TRUE(open_sqlite_store(sqlite_options{path()}));
    auto count_after_first = [&] {
        auto c = raw();
        auto st = c->prepare("SELECT COUNT(*), MAX(version) FROM schema_migrations");
        EXPECT_TRUE(st.step().value());
        EXPECT_EQ(st.int64(1), sqlite::latest_schema_version());
        return st.int64(0);
    };
    const auto applied = count_after_first();
    EXPECT_GE(applied, 1);
    ASSERT_TRUE(open_sqlite_store(sqlite_options{path()})); // a second open applies nothing
    EXPECT_EQ(count_after_first(), applied);
    auto c = raw();
    ASSERT_TRUE(c);
    auto mode = c->prepare("PRAGMA journal_mode");
    ASSERT_TRUE(mode.step().value());
    EXPECT_EQ(mode.text(0), "wal");
}

TEST_F(SqliteStoreTest, RefusesNewerSchemaWithAClearReason) {
    ASSERT_TRUE(open_sqlite_store(sqlite_options{path()}));
    {
        auto c = raw();
        ASSERT_TRUE(c);
        ASSERT_TRUE(c->exec("INSERT INTO schema_migrations (version, applied_at) VALUES (999, 0)"));
    }
    auto s = open_sqlite_store(sqlite_options{path()});
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().code, errc::unsupported);
    EXPECT_NE(s.error().message.find("999"), std::string::npos) << s.error().message;
    EXPECT_NE(s.error().message.find("newer"), std::string::npos) << s.error().message;
}

TEST_F(SqliteStoreTest, ContentIsStoredOnceInItsOwnColumn) {
    auto s = open_sqlite_store(sqlite_options{path()});
    ASSERT_TRUE(s);
    subscription sub;
    sub.id = "sub_a";
    sub.workflow_id = "wf";
    ASSERT_TRUE((*s)->insert_subscription(sub));
    intake_request r;
    r.subscription_id = "sub_a";
    r.dedup_key = "k";
    r.delivery_id = "dlv_1";
    r.run_id = "run_1";
    r.content_json = R"({"body":"PAYLOAD-MARKER"})";
    r.dedup_expires_at = 1;
    ASSERT_TRUE((*s)->intake_sync(r));
    auto c = raw();
    ASSERT_TRUE(c);
    auto st =
        c->prepare("SELECT COUNT(*) FROM deliveries WHERE "
                   "instr(id || subscription_id || tenant || dedup_key || run_id || status || "
                   "last_error, 'PAYLOAD-MARKER') > 0");
    ASSERT_TRUE(st.step().value());
    EXPECT_EQ(st.int64(0), 0);
    auto content = c->prepare("SELECT content_json FROM deliveries WHERE id = 'dlv_1'");
    ASSERT_TRUE(content.step().value());
    EXPECT_EQ(content.text(0), r.content_json);
}

TEST_F(SqliteStoreTest, FullDatabaseAnswersStoreUnavailableAndKeepsNothing) {
    sqlite_options opts{path()};
    opts.max_page_count = 1; // raised by SQLite to the current size: no room left to grow
    auto s = open_sqlite_store(opts);
    ASSERT_TRUE(s);
    subscription sub;
    sub.id = "sub_a";
    sub.workflow_id = "wf";
    // A small row still fits in the table's existing page; a 1 MiB content cannot.
    ASSERT_TRUE((*s)->insert_subscription(sub));
    intake_request r;
    r.subscription_id = "sub_a";
    r.dedup_key = "k";
    r.delivery_id = "dlv_big";
    r.run_id = "run_big";
    r.content_json = std::string(1 << 20, 'x');
    r.dedup_expires_at = 1000;
    auto out = (*s)->intake_sync(r);
    ASSERT_FALSE(out);
    EXPECT_EQ(out.error(), errc::store_unavailable);
    EXPECT_EQ((*s)->get_delivery("dlv_big").error(), errc::not_found);
    s->reset();

    // Room again: the key was not taken by the failed intake (its dedup row was rolled back).
    auto roomy = open_sqlite_store(sqlite_options{path()});
    ASSERT_TRUE(roomy);
    r.delivery_id = "dlv_small";
    r.run_id = "run_small";
    r.content_json = "{}";
    auto again = (*roomy)->intake_sync(r);
    ASSERT_TRUE(again) << again.error().message();
    EXPECT_EQ(again->status, intake_status::accepted);
}

TEST_F(SqliteStoreTest, AZeroByteFileIsRefusedUnlessInit) {
    { std::ofstream(path(), std::ios::trunc); }
    auto refused = open_sqlite_store(sqlite_options{path()});
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code, errc::invalid_argument);
    EXPECT_NE(refused.error().message.find("is empty (0 bytes)"), std::string::npos)
        << refused.error().message;
    EXPECT_NE(refused.error().message.find("--init"), std::string::npos) << refused.error().message;
    sqlite_options init{path()};
    init.init = true;
    EXPECT_TRUE(open_sqlite_store(init));
    EXPECT_TRUE(open_sqlite_store(sqlite_options{path()})); // a store now, not an empty file
}

TEST_F(SqliteStoreTest, ADamagedFileIsRefusedWithTheChecksFinding) {
    {
        auto s = open_sqlite_store(sqlite_options{path()});
        ASSERT_TRUE(s);
        subscription sub;
        sub.id = "sub_a";
        sub.workflow_id = "wf";
        ASSERT_TRUE((*s)->insert_subscription(sub));
        for (int i = 0; i < 50; ++i) {
            intake_request r;
            r.subscription_id = "sub_a";
            r.dedup_key = "k" + std::to_string(i);
            r.delivery_id = "dlv_" + std::to_string(i);
            r.run_id = "run_" + std::to_string(i);
            r.content_json = std::string(2000, 'c');
            r.dedup_expires_at = 1000;
            ASSERT_TRUE((*s)->intake_sync(r));
        }
    }
    // Everything into the main file, then zero the root page of the deliveries table.
    long long root = 0;
    long long page_size = 0;
    {
        auto c = raw();
        ASSERT_TRUE(c->exec("PRAGMA wal_checkpoint(TRUNCATE)"));
        auto rp = c->prepare("SELECT rootpage FROM sqlite_master WHERE name = 'deliveries'");
        ASSERT_TRUE(rp.step().value());
        root = rp.int64(0);
        auto ps = c->prepare("PRAGMA page_size");
        ASSERT_TRUE(ps.step().value());
        page_size = ps.int64(0);
    }
    ASSERT_GT(root, 1);
    {
        std::fstream f(path(), std::ios::in | std::ios::out | std::ios::binary);
        f.seekp((root - 1) * page_size);
        const std::string zeros(static_cast<std::size_t>(page_size), '\0');
        f.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));
    }
    auto refused = open_sqlite_store(sqlite_options{path()});
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code, errc::store_unavailable);
    EXPECT_NE(refused.error().message.find("is damaged (integrity_check: "), std::string::npos)
        << refused.error().message;
    EXPECT_NE(refused.error().message.find("restore it from a backup"), std::string::npos)
        << refused.error().message;
}

TEST_F(SqliteStoreTest, GroupCommitHonoursMaxBatch) {
    sqlite_options opts{path()};
    opts.group_commit_max_batch = 16;
    auto s = open_sqlite_store(opts);
    ASSERT_TRUE(s);
    subscription sub;
    sub.id = "sub_a";
    sub.workflow_id = "wf";
    ASSERT_TRUE((*s)->insert_subscription(sub));
    constexpr int total = 100;
    std::mutex mu;
    std::condition_variable cv;
    int done = 0;
    std::promise<void> all_queued;
    auto queued = all_queued.get_future().share();
    for (int i = 0; i < total; ++i) {
        intake_request r;
        r.subscription_id = "sub_a";
        r.dedup_key = "k" + std::to_string(i);
        r.delivery_id = "dlv_" + std::to_string(i);
        r.run_id = "run_" + std::to_string(i);
        r.dedup_expires_at = 1000;
        (*s)->intake(std::move(r), [&, i, queued](result<intake_outcome> out) {
            EXPECT_TRUE(out);
            if (i == 0) {
                queued.wait_for(std::chrono::seconds(30)); // hold the writer: the rest queue up
            }
            std::lock_guard lock(mu);
            ++done;
            cv.notify_all();
        });
    }
    all_queued.set_value();
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return done == total; }));
    auto batches = (*s)->stats().intake_batches;
    EXPECT_GE(batches, 7u); // ceil(100 / 16)
    EXPECT_LE(batches, 8u); // plus the first, possibly short, batch
}

TEST_F(SqliteStoreTest, DueQueriesSeekPerSubscriptionInsteadOfScanningTheBacklog) {
    ASSERT_TRUE(open_sqlite_store(sqlite_options{path()}));
    expect_per_subscription_plan("next_due_at", sqlite::due_queries::next_due_at);
    expect_per_subscription_plan("due_pending_of_subscription",
                                 sqlite::due_queries::due_pending_of_subscription);
    expect_per_subscription_plan("probe_due_subscriptions",
                                 sqlite::due_queries::probe_due_subscriptions);
    // Leases are few (at most what was claimed); their rows are found by the same seek.
    auto leases = plan(sqlite::due_queries::expired_leases_of_subscription);
    ASSERT_FALSE(leases.empty());
    EXPECT_NE(leases[0].find("deliveries_unsettled (subscription_id=? AND "
                             "status=?"),
              std::string::npos)
        << leases[0];
}

} // namespace
} // namespace wopbridge
