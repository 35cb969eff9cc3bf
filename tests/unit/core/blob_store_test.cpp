#include "core/blob_store.hpp"
#include "support/fake_clock.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>

namespace wopbridge {
namespace {

// The file name behind a reference: the hex after "att_".
std::string sig_hex_of(const std::string& ref) { return ref.substr(4); }

class BlobStoreTest : public ::testing::Test {
protected:
    testing::temp_dir dir_;
};

TEST_F(BlobStoreTest, PutIsContentAddressedAndReadBack) {
    blob_store blobs(dir_.file("attachments"));
    auto ref = blobs.put("report bytes");
    ASSERT_TRUE(ref);
    EXPECT_EQ(ref->rfind("att_", 0), 0u);
    EXPECT_EQ(ref->size(), 36u);
    EXPECT_EQ(*blobs.put("report bytes"), *ref); // the same bytes, the same reference
    EXPECT_NE(*blobs.put("other bytes"), *ref);
    EXPECT_EQ(*blobs.get(*ref), "report bytes");
    EXPECT_TRUE(std::filesystem::exists(dir_.file("attachments/" + ref->substr(4))));
    EXPECT_FALSE(blobs.get("att_0123"));   // malformed
    EXPECT_FALSE(blobs.get("../etc/passwd"));
}

// Two SMTP sessions storing one attachment at once: every put succeeds and leaves the whole bytes
// (a shared temp file let one put truncate the other's before its rename).
TEST_F(BlobStoreTest, ConcurrentPutsOfTheSameBytesAllSucceed) {
    blob_store blobs(dir_.file("attachments"));
    constexpr int threads_n = 8;
    constexpr int rounds = 12;
    std::barrier start(threads_n);
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < threads_n; ++t) {
        threads.emplace_back([&] {
            for (int r = 0; r < rounds; ++r) {
                // Every thread stores this round's bytes at the same moment.
                const std::string bytes = std::string(256 * 1024, static_cast<char>('a' + r % 26)) +
                                          std::to_string(r);
                start.arrive_and_wait();
                auto ref = blobs.put(bytes);
                if (!ref) {
                    ++failures;
                    continue;
                }
                auto back = blobs.get(*ref);
                if (!back || *back != bytes) {
                    ++failures;
                }
            }
        });
    }
    for (auto& t : threads) {
        t.join();
    }
    EXPECT_EQ(failures.load(), 0);
}

millis mtime_of(const std::string& path) {
    struct stat st{};
    EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
    return static_cast<millis>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
}

constexpr millis hour = 3600 * 1000;

// The retention clock of a file is its last put: a put of bytes already there writes nothing but
// moves the mtime to now, before the reference is handed out.
TEST_F(BlobStoreTest, APutOfExistingBytesRefreshesTheFilesMtime) {
    testing::fake_clock clock;
    blob_store blobs(dir_.file("attachments"), &clock);
    auto ref = blobs.put("invoice bytes");
    ASSERT_TRUE(ref);
    const std::string file = dir_.file("attachments/" + sig_hex_of(*ref));
    EXPECT_EQ(mtime_of(file), clock.now_ms());
    clock.advance(240 * hour);
    ASSERT_EQ(*blobs.put("invoice bytes"), *ref);
    EXPECT_EQ(mtime_of(file), clock.now_ms());
}

// Files older than the cutoff go, younger ones stay, and so does whatever a put refreshed;
// leftovers of interrupted puts go too; a directory never created purges nothing.
TEST_F(BlobStoreTest, PurgeRemovesOnlyFilesNotPutSinceTheCutoff) {
    testing::fake_clock clock;
    blob_store missing(dir_.file("never"), &clock);
    EXPECT_EQ(missing.purge_older_than(clock.now_ms()).value(), 0);

    blob_store blobs(dir_.file("attachments"), &clock);
    auto old_ref = blobs.put("old bytes").value();
    auto refreshed_ref = blobs.put("refreshed bytes").value();
    const std::string leftover = dir_.file("attachments/" + sig_hex_of(old_ref) + ".tmp.1.2");
    std::ofstream(leftover) << "half";
    const millis stamp = clock.now_ms();
    struct timespec times[2] = {{stamp / 1000, 0}, {stamp / 1000, 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, leftover.c_str(), times, 0), 0);
    clock.advance(100 * hour);
    auto young_ref = blobs.put("young bytes").value();
    ASSERT_EQ(blobs.put("refreshed bytes").value(), refreshed_ref);
    clock.advance(100 * hour);

    EXPECT_EQ(blobs.purge_older_than(clock.now_ms() - 150 * hour).value(), 1);
    EXPECT_EQ(blobs.get(old_ref).error(), make_error_code(errc::not_found));
    EXPECT_FALSE(std::filesystem::exists(leftover));
    EXPECT_EQ(blobs.get(young_ref).value(), "young bytes");
    EXPECT_EQ(blobs.get(refreshed_ref).value(), "refreshed bytes");
    EXPECT_EQ(blobs.purge_older_than(clock.now_ms() - 150 * hour).value(), 0);
    // A put after the purge writes the bytes anew.
    EXPECT_EQ(blobs.put("old bytes").value(), old_ref);
    EXPECT_EQ(blobs.get(old_ref).value(), "old bytes");
}

// Puts of the same bytes racing purges whose cutoff is just below the puts' time: every reference
// a put handed out reads back right after (a purge's look and unlink exclude the put's refresh).
TEST_F(BlobStoreTest, PurgesRacingPutsNeverRemoveBytesAPutHandedOut) {
    testing::fake_clock clock;
    blob_store blobs(dir_.file("attachments"), &clock);
    ASSERT_TRUE(blobs.put("shared bytes"));
    std::atomic<bool> done{false};
    std::atomic<int> failures{0};
    std::thread putter([&] {
        for (int i = 0; i < 2000; ++i) {
            clock.advance(10);
            auto ref = blobs.put("shared bytes");
            if (!ref || !blobs.get(*ref)) {
                ++failures;
            }
        }
        done = true;
    });
    while (!done) {
        // Only files older than the current time minus 5 ms: the last put is never that old.
        (void)blobs.purge_older_than(clock.now_ms() - 5);
    }
    putter.join();
    EXPECT_EQ(failures.load(), 0);
    auto ref = blobs.put("shared bytes").value();
    EXPECT_EQ(blobs.get(ref).value(), "shared bytes");
}

} // namespace
} // namespace wopbridge
