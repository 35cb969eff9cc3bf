#include "core/secret_box.hpp"

#include "support/fake_clock.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <latch>
#include <string>
#include <thread>
#include <vector>

namespace wopbridge {
namespace {

class SecretBoxTest : public ::testing::Test {
protected:
    testing::seeded_random random_{7};
    testing::temp_dir dir_;
};

TEST_F(SecretBoxTest, CreatesTheKeyFileWithMode0600) {
    auto path = dir_.file("host.key");
    auto box = secret_box::open(path, random_);
    ASSERT_TRUE(box.has_value());
    struct stat st{};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600);
    EXPECT_EQ(st.st_size, 32);
}

TEST_F(SecretBoxTest, ReopeningTheKeyFileGivesTheSameKey) {
    auto path = dir_.file("host.key");
    auto a = secret_box::open(path, random_);
    testing::seeded_random other{99};
    auto b = secret_box::open(path, other);
    ASSERT_TRUE(a && b);
    EXPECT_EQ(a->fingerprint("whsec_abc"), b->fingerprint("whsec_abc"));
    auto sealed = a->seal("whsec_abc", random_);
    EXPECT_EQ(b->unseal(sealed).value(), "whsec_abc");
}

// Cluster nodes sharing a key file may start at the same moment: every one ends up with the same
// key (none reads a half-written file, none overwrites the winner's).
TEST_F(SecretBoxTest, ConcurrentOpenersOfANewKeyFileAgreeOnOneKey) {
    for (int round = 0; round < 20; ++round) {
        auto path = dir_.file("host" + std::to_string(round) + ".key");
        constexpr int openers = 6;
        std::latch go(openers);
        std::vector<result<secret_box>> boxes(openers, make_error_code(errc::internal));
        std::vector<std::thread> threads;
        for (int i = 0; i < openers; ++i) {
            threads.emplace_back([&, i] {
                testing::seeded_random own{static_cast<std::uint64_t>(1000 * round + i)};
                go.arrive_and_wait();
                boxes[static_cast<std::size_t>(i)] = secret_box::open(path, own);
            });
        }
        for (auto& t : threads) {
            t.join();
        }
        ASSERT_TRUE(boxes[0]) << "round " << round;
        auto sealed = boxes[0]->seal("whsec_abc", random_);
        for (int i = 1; i < openers; ++i) {
            ASSERT_TRUE(boxes[static_cast<std::size_t>(i)]) << "round " << round << " opener " << i;
            EXPECT_EQ(boxes[static_cast<std::size_t>(i)]->unseal(sealed).value(), "whsec_abc");
        }
    }
    EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_.path()),
                            std::filesystem::directory_iterator{}),
              20); // no temp files left behind
}

TEST_F(SecretBoxTest, RefusesAGroupOrWorldReadableKeyFile) {
    auto path = dir_.file("host.key");
    ASSERT_TRUE(secret_box::open(path, random_));
    ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
    auto box = secret_box::open(path, random_);
    ASSERT_FALSE(box.has_value());
    EXPECT_EQ(box.error(), make_error_code(errc::invalid_argument));
}

TEST_F(SecretBoxTest, RefusesAKeyFileOfTheWrongSize) {
    auto path = dir_.file("short.key");
    std::ofstream(path) << "short";
    ::chmod(path.c_str(), 0600);
    EXPECT_FALSE(secret_box::open(path, random_).has_value());
}

TEST_F(SecretBoxTest, AnEmptyKeyFileLeftByAKilledCreationIsReplaced) {
    // What a SIGKILL between creating and writing the key file used to leave behind: every later
    // start then failed to open the host key (intake answered 503 for good).
    auto path = dir_.file("host.key");
    std::ofstream(path).close();
    ::chmod(path.c_str(), 0600);
    auto box = secret_box::open(path, random_);
    ASSERT_TRUE(box.has_value());
    struct stat st{};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_size, 32);
    testing::seeded_random other{99};
    EXPECT_EQ(secret_box::open(path, other)->fingerprint("whsec_x"), box->fingerprint("whsec_x"));
}

TEST_F(SecretBoxTest, CreationLeavesNoTemporaryFileBehind) {
    ASSERT_TRUE(secret_box::open(dir_.file("host.key"), random_));
    int files = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir_.path())) {
        ++files;
        EXPECT_EQ(e.path().filename(), "host.key");
    }
    EXPECT_EQ(files, 1);
}

TEST_F(SecretBoxTest, SealedTextDoesNotContainTheSecretAndUnseals) {
    auto box = secret_box::open(dir_.file("k"), random_).value();
    const std::string secret = "whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQ=";
    auto sealed = box.seal(secret, random_);
    EXPECT_EQ(sealed.rfind("v1:", 0), 0u);
    EXPECT_EQ(sealed.find(secret), std::string::npos);
    EXPECT_EQ(sealed.find("whsec_"), std::string::npos);
    EXPECT_NE(box.seal(secret, random_), sealed); // fresh nonce each time
    EXPECT_EQ(box.unseal(sealed).value(), secret);
}

TEST_F(SecretBoxTest, TamperedOrForeignSealedTextIsRefused) {
    auto box = secret_box::open(dir_.file("k"), random_).value();
    auto sealed = box.seal("whsec_x", random_);
    std::string tampered = sealed;
    tampered[tampered.size() - 3] = tampered[tampered.size() - 3] == 'A' ? 'B' : 'A';
    EXPECT_FALSE(box.unseal(tampered).has_value());
    auto other = secret_box::from_key(std::string(32, 'k')).value();
    EXPECT_FALSE(other.unseal(sealed).has_value());
    EXPECT_FALSE(box.unseal("garbage").has_value());
    EXPECT_FALSE(box.unseal("v1:@@@@").has_value());
}

TEST_F(SecretBoxTest, FingerprintIsHostKeyedAndTruncated) {
    auto a = secret_box::from_key(std::string(32, 'a')).value();
    auto b = secret_box::from_key(std::string(32, 'b')).value();
    auto fp = a.fingerprint("whsec_secret");
    EXPECT_LE(fp.size(), 32u);
    EXPECT_EQ(fp.size(), 16u);
    EXPECT_NE(fp, b.fingerprint("whsec_secret"));
    EXPECT_NE(fp, a.fingerprint("whsec_other"));
    EXPECT_EQ(fp.find("secret"), std::string::npos);
}

TEST_F(SecretBoxTest, DedupKeyIsOpaqueAndStable) {
    auto a = secret_box::from_key(std::string(32, 'a')).value();
    auto k = a.dedup_key("sub_1", "msg_provider_event_0001");
    EXPECT_EQ(k.rfind("dk_", 0), 0u);
    EXPECT_EQ(k.size(), 3u + 32u);
    EXPECT_EQ(k, a.dedup_key("sub_1", "msg_provider_event_0001"));
    EXPECT_NE(k, a.dedup_key("sub_2", "msg_provider_event_0001"));
    EXPECT_NE(k, a.dedup_key("sub_1", "msg_provider_event_0002"));
    EXPECT_EQ(k.find("provider"), std::string::npos);
    // The separator keeps ("ab","c") and ("a","bc") apart.
    EXPECT_NE(a.dedup_key("ab", "c"), a.dedup_key("a", "bc"));
}

TEST_F(SecretBoxTest, DedupKeyAndFingerprintArePinnedHmacSha256) {
    // Stored dedup keys must match across versions: pinned to HMAC-SHA256 (Python's hmac).
    auto a = secret_box::from_key(std::string(32, 'a')).value();
    EXPECT_EQ(a.dedup_key("sub_1", "msg_provider_event_0001"),
              "dk_b266b26136818eab0cc9321e3301acfd");
    EXPECT_EQ(a.fingerprint("whsec_secret"), "4e09fc17c4947e5d");
    // A copy shares the keyed state and gives the same bytes, from many threads at once.
    const secret_box copy = a;
    std::vector<std::string> got(6);
    std::vector<std::thread> pool;
    for (std::size_t t = 0; t < got.size(); ++t) {
        pool.emplace_back([&, t] {
            for (int i = 0; i < 200; ++i) {
                got[t] = (t % 2 == 0 ? a : copy).dedup_key("sub_1", "msg_provider_event_0001");
            }
        });
    }
    for (auto& th : pool) {
        th.join();
    }
    for (const auto& g : got) {
        EXPECT_EQ(g, "dk_b266b26136818eab0cc9321e3301acfd");
    }
}

TEST_F(SecretBoxTest, EmptyPathGivesAnEphemeralKey) {
    auto box = secret_box::open("", random_);
    ASSERT_TRUE(box.has_value());
    EXPECT_EQ(box->unseal(box->seal("x", random_)).value(), "x");
}

} // namespace
} // namespace wopbridge
