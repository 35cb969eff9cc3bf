// The WAL reader that runs before SQLite opens a store: a WAL whose frames all verify, a torn tail
// and no WAL at all pass; one byte changed in an early frame, with committed transactions after
// it, is found (what SQLite's recovery would silently drop), and the store refuses to open.
// The WAL images are made by SQLite itself: a connection that never checkpoints, copied while
// it is open (the state a SIGKILL leaves).
#include "store/sqlite/wal_check.hpp"
#include "store/store.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace wopbridge {
namespace {

namespace fs = std::filesystem;

class WalCheckTest : public ::testing::Test {
  protected:
    // A database with `transactions` committed inserts, all still in its WAL; copied to
    // `copy` (+ "-wal") while the connection is open.
    void make_crash_image(const std::string& copy, int transactions) {
        const std::string live = copy + ".live";
        sqlite3* db = nullptr;
        ASSERT_EQ(sqlite3_open(live.c_str(), &db), SQLITE_OK);
        ASSERT_EQ(sqlite3_exec(db,
                               "PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0;"
                               "PRAGMA synchronous=FULL; CREATE TABLE t (n INTEGER, v TEXT);",
                               nullptr, nullptr, nullptr),
                  SQLITE_OK);
        for (int i = 0; i < transactions; ++i) {
            const std::string sql =
                "INSERT INTO t VALUES (" + std::to_string(i) + ", hex(randomblob(300)))";
            ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
        }
        fs::copy_file(live, copy, fs::copy_options::overwrite_existing);
        fs::copy_file(live + "-wal", copy + "-wal", fs::copy_options::overwrite_existing);
        sqlite3_close(db);
    }

    static std::uint32_t page_size_of_wal(const std::string& wal) {
        std::ifstream in(wal, std::ios::binary);
        unsigned char h[12] = {};
        in.read(reinterpret_cast<char*>(h), sizeof h);
        return (std::uint32_t{h[8]} << 24) | (std::uint32_t{h[9]} << 16) |
               (std::uint32_t{h[10]} << 8) | std::uint32_t{h[11]};
    }

    static void flip_byte(const std::string& path, std::size_t offset) {
        std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
        f.seekg(static_cast<std::streamoff>(offset));
        char c = 0;
        f.get(c);
        f.seekp(static_cast<std::streamoff>(offset));
        f.put(static_cast<char>(c ^ 0x01));
    }

    // Rows SQLite itself sees after its recovery; -1 when the table is not there.
    static int rows_after_recovery(const std::string& path) {
        sqlite3* db = nullptr;
        int n = -1;
        if (sqlite3_open(path.c_str(), &db) == SQLITE_OK) {
            sqlite3_stmt* st = nullptr;
            if (sqlite3_prepare_v2(db, "SELECT count(*) FROM t", -1, &st, nullptr) == SQLITE_OK &&
                sqlite3_step(st) == SQLITE_ROW) {
                n = sqlite3_column_int(st, 0);
            }
            sqlite3_finalize(st);
        }
        sqlite3_close(db);
        return n;
    }

    testing::temp_dir dir_;
};

// The damage found in `db`'s WAL; a WAL that cannot be read fails the test.
std::optional<sqlite::wal_damage> damage_in(const std::string& db) {
    auto found = sqlite::find_wal_damage(db);
    EXPECT_TRUE(found) << found.error().message;
    return found ? *found : std::nullopt;
}

TEST_F(WalCheckTest, NoWalAndAnIntactWalPass) {
    EXPECT_FALSE(damage_in(dir_.file("none.db")));
    const std::string copy = dir_.file("intact.db");
    make_crash_image(copy, 5);
    EXPECT_FALSE(damage_in(copy));
    EXPECT_EQ(rows_after_recovery(copy), 5);
}

TEST_F(WalCheckTest, ATornTailIsNotALoss) {
    const std::string copy = dir_.file("torn.db");
    make_crash_image(copy, 5);
    const auto wal = copy + "-wal";
    // Half of the last frame never reached the disk.
    fs::resize_file(wal, fs::file_size(wal) - page_size_of_wal(wal) / 2);
    EXPECT_FALSE(damage_in(copy));
    // A damaged last frame: the last transaction is one that never finished, nothing follows.
    const std::string last = dir_.file("last.db");
    make_crash_image(last, 5);
    flip_byte(last + "-wal", fs::file_size(last + "-wal") - 100);
    EXPECT_FALSE(damage_in(last));
}

TEST_F(WalCheckTest, OneByteChangedInTheFirstFrameIsFoundWithTheCommitsRecoveryWouldDrop) {
    const std::string copy = dir_.file("damaged.db");
    make_crash_image(copy, 6);
    const auto wal = copy + "-wal";
    const auto page = page_size_of_wal(wal);
    flip_byte(wal, 32 + 24 + page / 2); // inside the first frame's page
    auto damage = damage_in(copy);
    ASSERT_TRUE(damage);
    EXPECT_EQ(damage->first_bad_frame, 1u);
    EXPECT_EQ(damage->frames, (fs::file_size(wal) - 32) / (24 + page));
    // CREATE TABLE and the six inserts each committed after the damaged frame, except the one
    // whose frames it is part of.
    EXPECT_GE(damage->commits_after, 6u);

    // The store refuses to open it, naming the frame and the fix; the files are left as they are
    // (SQLite has not run its recovery, which would drop those transactions for good).
    const auto before = fs::file_size(wal);
    sqlite_options opts;
    opts.path = copy;
    auto st = open_sqlite_store(opts);
    ASSERT_FALSE(st);
    const auto& why = st.error();
    EXPECT_NE(why.message.find("-wal is damaged: frame 1 of"), std::string::npos) << why.message;
    EXPECT_NE(why.message.find("restore the database from a backup"), std::string::npos);
    EXPECT_EQ(fs::file_size(wal), before);

    // What the refusal saves: SQLite's own recovery keeps none of it (-1: not even the table,
    // whose CREATE was the damaged frame's transaction).
    EXPECT_EQ(rows_after_recovery(copy), -1);
}

TEST_F(WalCheckTest, ADamagedHeaderWithCommitsAfterItIsFound) {
    const std::string copy = dir_.file("header.db");
    make_crash_image(copy, 3);
    flip_byte(copy + "-wal", 12); // the checkpoint sequence: covered by the header checksum
    auto damage = damage_in(copy);
    ASSERT_TRUE(damage);
    EXPECT_EQ(damage->first_bad_frame, 0u);
    EXPECT_GE(damage->commits_after, 3u);
}

} // namespace
} // namespace wopbridge
