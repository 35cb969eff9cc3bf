// The SQLite statement wrapper's row iteration: each_row visits rows in order, stops when asked,
// and answers the first error (a step's or a row's); collect_rows gathers what a reader returns.
#include "store/sqlite/sqlite_connection.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace wopbridge {
namespace {

class SqliteEachRowTest : public ::testing::Test {
  protected:
    void SetUp() override {
        auto c = sqlite::connection::open(dir_.file("rows.db"), true, 1000);
        ASSERT_TRUE(c) << c.error().message;
        conn_ = std::move(*c);
        ASSERT_TRUE(conn_->exec("CREATE TABLE t (n INTEGER, s TEXT); "
                                "INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c');"));
    }

    wopbridge::testing::temp_dir dir_;
    std::unique_ptr<sqlite::connection> conn_;
};

TEST_F(SqliteEachRowTest, VisitsEveryRowInOrder) {
    auto st = conn_->prepare("SELECT n FROM t ORDER BY n");
    std::vector<std::int64_t> seen;
    auto r =
        sqlite::each_row(st, [&](const sqlite::statement& row) { seen.push_back(row.int64(0)); });
    ASSERT_TRUE(r);
    EXPECT_EQ(seen, (std::vector<std::int64_t>{1, 2, 3}));
}

TEST_F(SqliteEachRowTest, FalseStopsWithoutError) {
    auto st = conn_->prepare("SELECT n FROM t ORDER BY n");
    std::vector<std::int64_t> seen;
    auto r = sqlite::each_row(st, [&](const sqlite::statement& row) {
        seen.push_back(row.int64(0));
        return seen.size() < 2;
    });
    ASSERT_TRUE(r);
    EXPECT_EQ(seen, (std::vector<std::int64_t>{1, 2}));
}

TEST_F(SqliteEachRowTest, RowErrorStopsAndIsTheAnswer) {
    {
        // Its own scope: the statement is cached by its text, and is reset when the handle goes.
        auto st = conn_->prepare("SELECT n FROM t ORDER BY n");
        int calls = 0;
        auto r = sqlite::each_row(st, [&](const sqlite::statement&) -> result<void> {
            ++calls;
            return errc::internal;
        });
        ASSERT_FALSE(r);
        EXPECT_EQ(r.error(), make_error_code(errc::internal));
        EXPECT_EQ(calls, 1);
    }
    auto again = conn_->prepare("SELECT n FROM t ORDER BY n");
    std::vector<std::int64_t> seen;
    auto stopped = sqlite::each_row(again, [&](const sqlite::statement& row) -> result<bool> {
        seen.push_back(row.int64(0));
        return row.int64(0) < 2;
    });
    ASSERT_TRUE(stopped);
    EXPECT_EQ(seen, (std::vector<std::int64_t>{1, 2}));
}

TEST_F(SqliteEachRowTest, StepErrorIsTheAnswer) {
    auto st = conn_->prepare("SELECT n FROM no_such_table");
    int calls = 0;
    auto r = sqlite::each_row(st, [&](const sqlite::statement&) { ++calls; });
    ASSERT_FALSE(r);
    EXPECT_EQ(calls, 0);
}

TEST_F(SqliteEachRowTest, CollectRowsTakesValuesOrResults) {
    auto st = conn_->prepare("SELECT s FROM t ORDER BY n");
    auto texts = sqlite::collect_rows(st, [](const sqlite::statement& row) { return row.text(0); });
    ASSERT_TRUE(texts);
    EXPECT_EQ(*texts, (std::vector<std::string>{"a", "b", "c"}));

    auto failing = conn_->prepare("SELECT n FROM t ORDER BY n");
    auto numbers = sqlite::collect_rows(failing, [](const sqlite::statement& row) -> result<int> {
        if (row.integer(0) == 2) {
            return errc::invalid_argument;
        }
        return row.integer(0);
    });
    ASSERT_FALSE(numbers);
    EXPECT_EQ(numbers.error(), make_error_code(errc::invalid_argument));
}

} // namespace
} // namespace wopbridge
