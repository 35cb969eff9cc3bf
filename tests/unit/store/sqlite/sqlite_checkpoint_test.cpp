// SQLite checkpoints run off the writer: the WAL stays bounded under sustained writes (the
// checkpointer copies it back and restarts it once it passes checkpoint_pages) and is truncated to
// zero bytes once the store is idle.
#include "store/store.hpp"
#include "support/eventually.hpp"
#include "support/fake_clock.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

namespace wopbridge {
namespace {

using testing::t0;

std::uintmax_t size_or_zero(const std::string& path) {
    std::error_code ec;
    auto n = std::filesystem::file_size(path, ec);
    return ec ? 0 : n;
}

TEST(SqliteCheckpointTest, TheWalStaysBoundedUnderLoadAndIsTruncatedWhenIdle) {
    testing::temp_dir dir;
    sqlite_options o;
    o.path = dir.file("bridge.db");
    o.checkpoint_pages = 64; // 256 KiB of 4 KiB pages
    auto st = open_sqlite_store(o);
    ASSERT_TRUE(st) << st.error().message;
    auto& store = **st;
    subscription s;
    s.id = "sub";
    s.tenant = "acme";
    s.workflow_id = "wf";
    s.created_at = s.updated_at = t0;
    ASSERT_TRUE(store.insert_subscription(s));

    const std::string body(2000, 'x');
    std::uintmax_t largest_wal = 0;
    for (int i = 0; i < 3000; ++i) { // about 8 MB written through the WAL
        intake_request r;
        r.subscription_id = "sub";
        r.tenant = "acme";
        r.dedup_key = "k" + std::to_string(i);
        r.delivery_id = "dlv_" + std::to_string(i);
        r.run_id = "run_" + std::to_string(i);
        r.received_at = r.due_at = t0;
        r.dedup_expires_at = t0 + 24 * 3600 * 1000;
        r.content_json = R"({"b":")" + body + R"("})";
        ASSERT_TRUE(store.intake_sync(std::move(r)));
        largest_wal = std::max(largest_wal, size_or_zero(o.path + "-wal"));
    }
    // Without a checkpoint the WAL would hold every page written (~60 MB: each 2 KB intake
    // writes several pages). The checkpointer keeps it near the threshold (measured 1-6 MB here,
    // depending on how soon its thread gets a core).
    EXPECT_LT(largest_wal, 16u * 1024 * 1024);
    EXPECT_TRUE(testing::eventually([&] { return size_or_zero(o.path + "-wal") == 0; },
                                    std::chrono::seconds(10)))
        << "the WAL was not truncated once idle: " << size_or_zero(o.path + "-wal") << " bytes";
    // Everything written is in the database.
    EXPECT_EQ(store.get_delivery("dlv_2999")->id, "dlv_2999");
}

} // namespace
} // namespace wopbridge
