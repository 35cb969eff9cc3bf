#include "core/blob_store.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <filesystem>
#include <thread>
#include <vector>

namespace wopbridge {
namespace {

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

} // namespace
} // namespace wopbridge
