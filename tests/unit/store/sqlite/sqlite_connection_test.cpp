// The SQLite connection wrapper's statement cache: keyed by SQL text, bounded, used by exec() for
// single statements, and correct when one buffer holds different SQL over time.
#include "store/sqlite/sqlite_connection.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace wopbridge {
namespace {

class SqliteConnectionTest : public ::testing::Test {
  protected:
    void SetUp() override {
        auto c = sqlite::connection::open(dir_.file("c.db"), true, 1000);
        ASSERT_TRUE(c) << c.error().message;
        conn_ = std::move(*c);
    }

    // Statements alive on the connection (cached ones included).
    int live_statements() {
        int n = 0;
        for (auto* st = sqlite3_next_stmt(conn_->handle(), nullptr); st != nullptr;
             st = sqlite3_next_stmt(conn_->handle(), st)) {
            ++n;
        }
        return n;
    }

    std::int64_t select_one(const char* sql) {
        auto st = conn_->prepare(sql);
        auto row = st.step();
        EXPECT_TRUE(row && *row) << sql;
        return row && *row ? st.int64(0) : -1;
    }

    testing::temp_dir dir_;
    std::unique_ptr<sqlite::connection> conn_;
};

TEST_F(SqliteConnectionTest, SameTextFromDifferentBuffersIsPreparedOnce) {
    const int before = live_statements();
    std::string a = "SELECT 41 + 1";
    std::string b = a; // equal text, another address
    EXPECT_EQ(select_one(a.c_str()), 42);
    EXPECT_EQ(select_one(b.c_str()), 42);
    EXPECT_EQ(live_statements(), before + 1);
}

TEST_F(SqliteConnectionTest, ReusedBufferWithOtherSqlGetsItsOwnStatement) {
    char buf[32];
    std::strcpy(buf, "SELECT 1");
    EXPECT_EQ(select_one(buf), 1);
    std::strcpy(buf, "SELECT 2"); // same address, different SQL
    EXPECT_EQ(select_one(buf), 2);
}

TEST_F(SqliteConnectionTest, CacheIsBoundedAndOverflowStatementsAreFinalised) {
    const int before = live_statements();
    const int extra = static_cast<int>(sqlite::connection::max_cached_statements) + 20;
    for (int i = 0; i < extra; ++i) {
        const std::string sql = "SELECT " + std::to_string(i);
        EXPECT_EQ(select_one(sql.c_str()), i);
    }
    EXPECT_LE(live_statements(),
              before + static_cast<int>(sqlite::connection::max_cached_statements));
    // Past the bound, statements still work (prepared per call).
    EXPECT_EQ(select_one("SELECT 123456"), 123456);
}

TEST_F(SqliteConnectionTest, ExecReusesSingleStatementsAndRunsScripts) {
    ASSERT_TRUE(conn_->exec("CREATE TABLE t (x INTEGER); CREATE TABLE u (y INTEGER);"));
    ASSERT_TRUE(conn_->exec("BEGIN"));
    ASSERT_TRUE(conn_->exec("INSERT INTO t VALUES (1)"));
    ASSERT_TRUE(conn_->exec("COMMIT"));
    const int after_first = live_statements();
    for (int i = 0; i < 5; ++i) {
        ASSERT_TRUE(conn_->exec("BEGIN"));
        ASSERT_TRUE(conn_->exec("INSERT INTO t VALUES (1)"));
        ASSERT_TRUE(conn_->exec("COMMIT"));
    }
    EXPECT_EQ(live_statements(), after_first);
    EXPECT_FALSE(conn_->in_transaction());
    EXPECT_EQ(select_one("SELECT COUNT(*) FROM t"), 6);
    EXPECT_EQ(select_one("SELECT COUNT(*) FROM u"), 0);
    // A failing statement still reports its error, and leaves the connection usable.
    EXPECT_FALSE(conn_->exec("INSERT INTO missing VALUES (1)"));
    ASSERT_TRUE(conn_->exec("SAVEPOINT s"));
    ASSERT_TRUE(conn_->exec("ROLLBACK TO s"));
    ASSERT_TRUE(conn_->exec("RELEASE s"));
    EXPECT_FALSE(conn_->in_transaction());
}

} // namespace
} // namespace wopbridge
