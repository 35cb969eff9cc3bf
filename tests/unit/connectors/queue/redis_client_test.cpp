// The queue connector's Redis client (on hiredis) against a real, throwaway redis-server.

#include "queue/redis_client.hpp"

#include "support/redis_server.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <thread>
#include <vector>

namespace wopbridge::queue {
namespace {

using namespace std::chrono_literals;
using testing::redis_server;

class RedisClientTest : public ::testing::Test {
  protected:
    void SetUp() override {
        WOPBRIDGE_REQUIRE_REDIS();
        redis_ = std::make_unique<redis_server>();
        std::string error;
        url_ = *parse_redis_url(redis_->url(), error);
    }

    std::unique_ptr<redis_server> redis_;
    redis_url url_;
};

TEST_F(RedisClientTest, PipelinesCommandsAndReadsEveryReplyKind) {
    redis_connection c;
    std::string error;
    ASSERT_TRUE(c.connect(url_, 2s, error)) << error;
    auto r = c.pipeline({{"SET", "k", std::string("v\r\n\0x", 5)},
                         {"GET", "k"},
                         {"GET", "missing"},
                         {"INCR", "n"},
                         {"XADD", "s", "*", "f", "1"},
                         {"XRANGE", "s", "-", "+"},
                         {"LPOP", "k"}},
                        2s, error);
    ASSERT_TRUE(r) << error;
    ASSERT_EQ(r->size(), 7u);
    EXPECT_EQ((*r)[0].text, "OK");
    EXPECT_EQ((*r)[1].text, std::string("v\r\n\0x", 5));
    EXPECT_TRUE((*r)[2].is_null());
    EXPECT_EQ((*r)[3].integer, 1);
    ASSERT_TRUE((*r)[5].is_array());
    EXPECT_EQ((*r)[5].elements[0].elements[1].elements[0].text, "f");
    EXPECT_EQ((*r)[6].error_code(), "WRONGTYPE");
    EXPECT_TRUE(c.connected()); // an error reply is a value, not a broken connection
}

TEST_F(RedisClientTest, LargeBinaryRepliesSpanManyReadsAndArriveWhole) {
    redis_connection c;
    std::string error;
    ASSERT_TRUE(c.connect(url_, 2s, error)) << error;
    std::string big(3u * 1024 * 1024, '\0');
    for (std::size_t i = 0; i < big.size(); ++i) {
        big[i] = static_cast<char>(i * 7 % 251);
    }
    std::vector<command> many;
    many.push_back({"SET", "big", big});
    for (int i = 0; i < 200; ++i) {
        many.push_back({"XADD", "s2", "*", "n", std::to_string(i)});
    }
    many.push_back({"GET", "big"});
    many.push_back({"XRANGE", "s2", "-", "+"});
    auto r = c.pipeline(many, 5s, error);
    ASSERT_TRUE(r) << error;
    ASSERT_EQ(r->size(), many.size());
    EXPECT_EQ((*r)[r->size() - 2].text, big);
    const auto& range = r->back();
    ASSERT_EQ(range.elements.size(), 200u);
    EXPECT_EQ(range.elements[199].elements[1].elements[1].text, "199");
}

TEST_F(RedisClientTest, BlockingReadTimesOutAndDropsTheConnection) {
    redis_connection c;
    std::string error;
    ASSERT_TRUE(c.connect(url_, 2s, error)) << error;
    const auto start = std::chrono::steady_clock::now();
    auto r = c.run({"BLPOP", "nothing", "5"}, 200ms, error);
    EXPECT_FALSE(r);
    EXPECT_NE(error.find("timed out"), std::string::npos) << error;
    EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
    EXPECT_FALSE(c.connected());
}

TEST_F(RedisClientTest, InterruptCutsABlockingReadShort) {
    redis_connection c;
    std::string error;
    ASSERT_TRUE(c.connect(url_, 2s, error)) << error;
    // Before or during the read: either way the read ends early with "interrupted".
    std::thread waker([&] { c.interrupt(); });
    const auto start = std::chrono::steady_clock::now();
    auto r = c.run({"BLPOP", "nothing", "10"}, 20s, error);
    waker.join();
    EXPECT_FALSE(r);
    EXPECT_EQ(error, "read: interrupted");
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

TEST_F(RedisClientTest, PendingInterruptStopsAConnectBeforeItStarts) {
    // hiredis' connect cannot be woken once started: stop() must at least prevent the next one.
    redis_connection c;
    c.interrupt();
    std::string error;
    EXPECT_FALSE(c.connect(url_, 2s, error));
    EXPECT_EQ(error, "connect: interrupted");
    EXPECT_FALSE(c.connected());
    c.clear_interrupt();
    ASSERT_TRUE(c.connect(url_, 2s, error)) << error;
    auto r = c.run({"PING"}, 2s, error);
    ASSERT_TRUE(r) << error;
    EXPECT_EQ(r->text, "PONG");
}

TEST_F(RedisClientTest, ServerGoingAwayIsAnErrorAndReconnectWorks) {
    redis_connection c;
    std::string error;
    ASSERT_TRUE(c.connect(url_, 2s, error)) << error;
    redis_->restart();
    EXPECT_FALSE(c.run({"PING"}, 2s, error));
    EXPECT_FALSE(c.connected());
    ASSERT_TRUE(c.connect(url_, 2s, error)) << error;
    auto r = c.run({"PING"}, 2s, error);
    ASSERT_TRUE(r) << error;
    EXPECT_EQ(r->text, "PONG");
}

TEST_F(RedisClientTest, ConnectToAClosedPortFails) {
    redis_->stop();
    redis_connection c;
    std::string error;
    EXPECT_FALSE(c.connect(url_, 1s, error));
    // The text the README's reconnect log line shows (hiredis' errno text, our prefix).
    EXPECT_EQ(error, "connect: Connection refused");
    EXPECT_FALSE(c.connected());
}

class RedisClientAuthTest : public ::testing::Test {};

TEST_F(RedisClientAuthTest, AuthenticatesAndRefusesAWrongPasswordWithoutEchoingIt) {
    WOPBRIDGE_REQUIRE_REDIS();
    redis_server redis(testing::redis_server_options{.password = "right-Pass-9"});
    std::string error;
    auto url = *parse_redis_url(redis.url() + "/1", error);
    redis_connection c;
    ASSERT_TRUE(c.connect(url, 2s, error)) << error;
    ASSERT_TRUE(c.run({"SET", "k", "v"}, 2s, error));
    EXPECT_EQ(redis.cli({"-n", "1", "GET", "k"}).out, "v");

    url.password = "wrong-Pass-9";
    EXPECT_FALSE(c.connect(url, 2s, error));
    EXPECT_NE(error.find("WRONGPASS"), std::string::npos) << error;
    EXPECT_EQ(error.find("wrong-Pass-9"), std::string::npos);
}

} // namespace
} // namespace wopbridge::queue
