// The backend-neutral row codec and migration runner: a subscription written as values reads back
// the same, the outbound dead-letter cursor round-trips, and the runner applies only newer steps,
// refuses a newer database and rolls back what failed.
#include "store/migration_runner.hpp"
#include "store/page_cursor.hpp"
#include "store/store_rows.hpp"

#include <gtest/gtest.h>

#include <array>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wopbridge {
namespace {

// One row as both backends hand it over: columns of text or NULL, integers spelled in decimal.
struct fake_row {
    std::vector<std::optional<std::string>> cols;

    void operator()(std::optional<std::string_view> text) {
        cols.push_back(text ? std::optional<std::string>(std::string(*text)) : std::nullopt);
    }
    void operator()(std::string_view text) { cols.emplace_back(std::string(text)); }
    void operator()(std::int64_t v) { cols.emplace_back(std::to_string(v)); }
    void operator()(int v) { cols.emplace_back(std::to_string(v)); }
    void operator()(bool v) { cols.emplace_back(v ? "1" : "0"); }

    bool is_null(int col) const { return !cols.at(static_cast<std::size_t>(col)).has_value(); }
    std::string text(int col) const { return cols.at(static_cast<std::size_t>(col)).value_or(""); }
    std::int64_t int64(int col) const { return std::stoll(text(col)); }
    int integer(int col) const { return static_cast<int>(int64(col)); }
};

TEST(StoreRowsTest, SubscriptionValuesReadBack) {
    subscription s;
    s.id = "sub_1";
    s.tenant = "t";
    s.source = source_kind::schedule;
    s.state = sub_state::paused;
    s.workflow_id = "wf";
    s.dedup_enabled = true;
    s.retry.max_attempts = 7;
    s.retry.backoff = backoff_kind::fixed;
    s.retry.base_delay_ms = 1500;
    s.retry.max_delay_ms = 60000;
    s.retry.jitter = true;
    s.breaker.failure_threshold = 4;
    s.breaker.probe_interval_ms = 30000;
    s.verification = verification_mode::best_effort;
    s.schedule = schedule_spec{"*/5 * * * *", "Europe/Paris"};
    s.origin = subscription::origin_kind::api;
    s.consecutive_failures = 2;
    s.created_at = 11;
    s.updated_at = 12;
    s.hold_when_not_active = true;
    s.max_concurrency = 3;

    fake_row row;
    store_codec::subscription_values(s, row);
    ASSERT_EQ(row.cols.size(), 28u);
    auto back = store_codec::read_subscription(row);
    ASSERT_TRUE(back);
    EXPECT_EQ(back->id, s.id);
    EXPECT_EQ(back->source, s.source);
    EXPECT_EQ(back->state, s.state);
    EXPECT_TRUE(back->dedup_enabled);
    EXPECT_EQ(back->retry.max_attempts, 7);
    EXPECT_EQ(back->retry.backoff, backoff_kind::fixed);
    EXPECT_EQ(back->retry.base_delay_ms, 1500);
    EXPECT_EQ(back->verification, verification_mode::best_effort);
    ASSERT_TRUE(back->schedule);
    EXPECT_EQ(back->schedule->time_zone, "Europe/Paris");
    EXPECT_EQ(back->origin, subscription::origin_kind::api);
    EXPECT_TRUE(back->hold_when_not_active);
    EXPECT_EQ(back->max_concurrency, 3);

    s.schedule.reset();
    fake_row unscheduled;
    store_codec::subscription_values(s, unscheduled);
    EXPECT_TRUE(unscheduled.is_null(17));
    auto again = store_codec::read_subscription(unscheduled);
    ASSERT_TRUE(again);
    EXPECT_FALSE(again->schedule);
}

TEST(StoreRowsTest, UnknownSpellingIsInternal) {
    subscription s;
    fake_row row;
    store_codec::subscription_values(s, row);
    row.cols[2] = "carrier-pigeon";
    auto back = store_codec::read_subscription(row);
    ASSERT_FALSE(back);
    EXPECT_EQ(back.error(), make_error_code(errc::internal));
}

TEST(StoreRowsTest, OutboundCursorRoundTrips) {
    page_request first;
    auto top = store_codec::outbound_page_start(first, "owh_1");
    ASSERT_TRUE(top);
    EXPECT_EQ(*top, std::numeric_limits<std::int64_t>::max());

    page_request next{10, store_codec::outbound_cursor("owh_1", 42)};
    auto key = store_codec::outbound_page_start(next, "owh_1");
    ASSERT_TRUE(key);
    EXPECT_EQ(*key, 42);

    EXPECT_FALSE(store_codec::outbound_page_start(next, "owh_2"));
    EXPECT_FALSE(store_codec::outbound_page_start(page_request{10, "owh_1:x"}, "owh_1"));
    EXPECT_FALSE(store_codec::outbound_page_start(page_request{10, "garbage"}, "owh_1"));
}

// A database that records what the runner asks of it.
struct fake_schema {
    int version = 0;
    int version_under_lock = -1; // what the second read answers (-1: the same as the first)
    const char* failing_sql = nullptr;
    int reads = 0;
    bool open = false;
    std::vector<std::string> ran;
    std::vector<int> recorded;
    int rollbacks = 0;

    result<int> read_version() {
        ++reads;
        return reads > 1 && version_under_lock >= 0 ? version_under_lock : version;
    }
    result<void> exec(const char* sql) {
        ran.emplace_back(sql);
        if (failing_sql != nullptr && std::string_view(sql) == failing_sql) {
            return errc::store_unavailable;
        }
        open = std::string_view(sql) != "COMMIT";
        return {};
    }
    result<void> record(int v) {
        recorded.push_back(v);
        return {};
    }
    std::string last_error() const { return "boom"; }
    void rollback() {
        ++rollbacks;
        open = false;
    }
    void rollback_if_open() {
        if (open) {
            rollback();
        }
    }
};

constexpr std::array<store_codec::migration, 3> steps{{{1, "one"}, {2, "two"}, {3, "three"}}};
constexpr std::array<store_codec::opening_step, 1> opening{{{"cannot start migration", "BEGIN"}}};

TEST(StoreMigrationRunnerTest, AppliesOnlyNewerStepsAndCommits) {
    fake_schema db;
    db.version = 1;
    auto r = store_codec::run_migrations(db, steps, opening);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(db.ran, (std::vector<std::string>{"BEGIN", "two", "three", "COMMIT"}));
    EXPECT_EQ(db.recorded, (std::vector<int>{2, 3}));
}

TEST(StoreMigrationRunnerTest, CurrentDatabaseIsNotWritten) {
    fake_schema db;
    db.version = 3;
    ASSERT_TRUE(store_codec::run_migrations(db, steps, opening));
    EXPECT_TRUE(db.ran.empty());
}

TEST(StoreMigrationRunnerTest, NewerDatabaseIsUnsupported) {
    fake_schema db;
    db.version = 4;
    auto r = store_codec::run_migrations(db, steps, opening);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, errc::unsupported);
    EXPECT_EQ(r.error().message, "database schema version 4 is newer than this build supports (3); upgrade "
                                  "wopbridge");

    // Migrated by a newer build while this one waited for the lock.
    fake_schema raced;
    raced.version = 1;
    raced.version_under_lock = 5;
    auto late = store_codec::run_migrations(raced, steps, opening);
    ASSERT_FALSE(late);
    EXPECT_EQ(late.error().code, errc::unsupported);
    EXPECT_EQ(raced.rollbacks, 1);
    EXPECT_TRUE(raced.recorded.empty());
}

TEST(StoreMigrationRunnerTest, FailedStepRollsBackWithReason) {
    fake_schema db;
    db.failing_sql = "two";
    auto r = store_codec::run_migrations(db, steps, opening);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, errc::store_unavailable);
    EXPECT_EQ(r.error().message, "migration failed: boom");
    EXPECT_EQ(db.recorded, (std::vector<int>{1}));
    EXPECT_EQ(db.rollbacks, 1);
}

} // namespace
} // namespace wopbridge
