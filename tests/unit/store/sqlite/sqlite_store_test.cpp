// SQLite-specific behaviour of the store (the shared contract is in store_contract_test.cpp). Uses
// the backend's own connection wrapper to reach under the store, as only store/sqlite/ may.
#include "store/sqlite/sqlite_connection.hpp"
#include "store/sqlite/sqlite_migrations.hpp"
#include "store/store.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <string>

namespace wopbridge {
namespace {

class SqliteStoreTest : public ::testing::Test {
protected:
    std::string path() const { return dir_.file("bridge.db"); }

    std::unique_ptr<sqlite::connection> raw() {
        std::string why;
        auto c = sqlite::connection::open(path(), false, 1000, why);
        EXPECT_TRUE(c) << why;
        return c ? std::move(*c) : nullptr;
    }

    testing::temp_dir dir_;
};

TEST_F(SqliteStoreTest, RefusesInMemoryDatabases) {
    for (const char* p : {":memory:", "file::memory:?cache=shared", "file:x?mode=memory", ""}) {
        error_info why;
        auto s = open_sqlite_store(sqlite_options{p}, why);
        ASSERT_FALSE(s) << p;
        EXPECT_EQ(s.error(), errc::invalid_argument) << p;
        EXPECT_FALSE(why.message.empty());
    }
}

TEST_F(SqliteStoreTest, UnopenablePathIsStoreUnavailable) {
    error_info why;
    auto s = open_sqlite_store(sqlite_options{dir_.file("missing-dir/bridge.db")}, why);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error(), errc::store_unavailable);
    EXPECT_EQ(why.code, errc::store_unavailable);
}

TEST_F(SqliteStoreTest, MigratesOnceAndUsesWal) {
    ASSERT_TRUE(open_sqlite_store(sqlite_options{path()}));
    ASSERT_TRUE(open_sqlite_store(sqlite_options{path()})); // a second open applies nothing
    auto c = raw();
    ASSERT_TRUE(c);
    auto st = c->prepare("SELECT COUNT(*), MAX(version) FROM schema_migrations");
    ASSERT_TRUE(st.step().value());
    EXPECT_EQ(st.int64(0), sqlite::latest_schema_version());
    EXPECT_EQ(st.int64(1), sqlite::latest_schema_version());
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
    error_info why;
    auto s = open_sqlite_store(sqlite_options{path()}, why);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error(), errc::unsupported);
    EXPECT_NE(why.message.find("999"), std::string::npos) << why.message;
    EXPECT_NE(why.message.find("newer"), std::string::npos) << why.message;
}

TEST_F(SqliteStoreTest, ContentIsKeptOutOfTheDeliveryRow) {
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
    auto st = c->prepare("SELECT COUNT(*) FROM deliveries WHERE "
                         "instr(id || subscription_id || tenant || dedup_key || run_id || status || "
                         "last_error, 'PAYLOAD-MARKER') > 0");
    ASSERT_TRUE(st.step().value());
    EXPECT_EQ(st.int64(0), 0);
    auto content = c->prepare("SELECT COUNT(*) FROM delivery_contents WHERE delivery_id = 'dlv_1'");
    ASSERT_TRUE(content.step().value());
    EXPECT_EQ(content.int64(0), 1);
}

} // namespace
} // namespace wopbridge
