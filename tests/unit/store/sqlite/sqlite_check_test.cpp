// The start-up check of a SQLite store: integrity_check (the default) finds an index that no
// longer matches its table, which quick_check passes (the review's damaged index page, served).
#include "store/sqlite/sqlite_check.hpp"
#include "store/sqlite/sqlite_connection.hpp"
#include "store/store.hpp"
#include "support/store_damage.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <string>

namespace wopbridge {
namespace {

class SqliteCheckTest : public ::testing::Test {
  protected:
    std::string path() const { return dir_.file("bridge.db"); }

    void fill(int deliveries) {
        auto s = open_sqlite_store(sqlite_options{path()});
        ASSERT_TRUE(s);
        subscription sub;
        sub.id = "sub_a";
        sub.workflow_id = "wf";
        ASSERT_TRUE((*s)->insert_subscription(sub));
        for (int i = 0; i < deliveries; ++i) {
            intake_request r;
            r.subscription_id = "sub_a";
            r.dedup_key = "k" + std::to_string(i);
            r.delivery_id = "dlv_" + std::to_string(i);
            r.run_id = "run_" + std::to_string(i);
            r.content_json = R"({"n":1})";
            r.dedup_expires_at = 1000;
            ASSERT_TRUE((*s)->intake_sync(r));
        }
    }

    sqlite::check_report check(sqlite_startup_check depth) {
        auto c = sqlite::connection::open(path(), false, 1000);
        EXPECT_TRUE(c) << c.error().message;
        return c ? sqlite::run_check(**c, depth, 100) : sqlite::check_report{};
    }

    testing::temp_dir dir_;
};

TEST_F(SqliteCheckTest, AnIndexMissingItsRowsIsRefusedAtStartThoughQuickCheckPassesIt) {
    fill(20);
    ASSERT_EQ(testing::empty_an_index(path(), "deliveries_by_subscription"), "");

    auto quick = check(sqlite_startup_check::quick);
    EXPECT_TRUE(quick.ok()) << "quick_check does not compare an index with its table";
    auto full = check(sqlite_startup_check::integrity);
    ASSERT_FALSE(full.ok());
    EXPECT_TRUE(full.error.empty()) << full.error;
    EXPECT_GE(full.findings.size(), 20u); // one per missing row, and the count
    EXPECT_NE(
        full.findings.front().find("missing from index deliveries_by_subscription"),
        std::string::npos)
        << full.findings.front();

    auto refused = open_sqlite_store(sqlite_options{path()});
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code, errc::store_unavailable);
    EXPECT_NE(refused.error().message.find("is damaged (integrity_check: row "), std::string::npos)
        << refused.error().message;
    EXPECT_NE(refused.error().message.find("wopbridge check-store"), std::string::npos)
        << refused.error().message;

    // startupCheck: quick is the operator's choice to start faster; it serves this file.
    sqlite_options quick_start{path()};
    quick_start.startup_check = sqlite_startup_check::quick;
    EXPECT_TRUE(open_sqlite_store(quick_start));
}

TEST_F(SqliteCheckTest, AnIntactStoreIsOkAtEitherDepthAndFindingsAreCapped) {
    fill(5);
    EXPECT_TRUE(check(sqlite_startup_check::quick).ok());
    EXPECT_TRUE(check(sqlite_startup_check::integrity).ok());
    EXPECT_TRUE(open_sqlite_store(sqlite_options{path()}));

    ASSERT_EQ(testing::empty_an_index(path(), "deliveries_by_subscription"), "");
    auto c = sqlite::connection::open(path(), false, 1000);
    ASSERT_TRUE(c) << c.error().message;
    auto capped = sqlite::run_check(**c, sqlite_startup_check::integrity, 2);
    EXPECT_EQ(capped.findings.size(), 2u);
}

} // namespace
} // namespace wopbridge
