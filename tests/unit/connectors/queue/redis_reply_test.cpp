// The queue connector's protocol pieces on their own: replies read by hiredis' reader into owned
// values (and the limits put on it), redis:// URLs, settings, reply shapes and the event content.

#include "queue/redis_client.hpp"
#include "queue/redis_reply.hpp"
#include "queue/settings.hpp"
#include "queue/stream_worker.hpp"

#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

namespace wopbridge::queue {
namespace {

using kind = resp_value::kind;

class RedisReplyTest : public ::testing::Test {
  protected:
    // Reads exactly one reply from `bytes`, fed in one piece.
    resp_value one(std::string_view bytes) {
        reply_reader r;
        EXPECT_TRUE(r.feed(bytes));
        resp_value v;
        std::string error;
        EXPECT_EQ(r.next(v, error), reply_reader::state::value) << error;
        EXPECT_EQ(r.buffered(), 0u);
        return v;
    }

    std::string failure(std::string_view bytes) {
        reply_reader r;
        EXPECT_TRUE(r.feed(bytes));
        resp_value v;
        std::string error;
        EXPECT_EQ(r.next(v, error), reply_reader::state::error) << bytes;
        return error;
    }
};

TEST_F(RedisReplyTest, ParsesScalars) {
    auto s = one("+OK\r\n");
    EXPECT_EQ(s.type, kind::simple);
    EXPECT_EQ(s.text, "OK");
    auto e = one("-NOGROUP No such key 'x'\r\n");
    EXPECT_TRUE(e.is_error());
    EXPECT_EQ(e.error_code(), "NOGROUP");
    auto i = one(":-42\r\n");
    EXPECT_EQ(i.type, kind::integer);
    EXPECT_EQ(i.integer, -42);
    EXPECT_TRUE(one("$-1\r\n").is_null());
    EXPECT_TRUE(one("*-1\r\n").is_null());
    auto empty = one("$0\r\n\r\n");
    EXPECT_EQ(empty.type, kind::bulk);
    EXPECT_EQ(empty.text, "");
}

TEST_F(RedisReplyTest, BulkStringsAreBinarySafe) {
    const std::string payload("a\r\nb\0c", 6);
    auto v = one("$6\r\n" + payload + "\r\n");
    EXPECT_EQ(v.type, kind::bulk);
    EXPECT_EQ(v.text, payload);
}

TEST_F(RedisReplyTest, ParsesNestedArraysWithNulls) {
    auto v = one("*3\r\n*2\r\n$6\r\norders\r\n*1\r\n*2\r\n$3\r\n1-0\r\n*-1\r\n:7\r\n*0\r\n");
    ASSERT_TRUE(v.is_array());
    ASSERT_EQ(v.elements.size(), 3u);
    EXPECT_EQ(v.elements[0].elements[0].text, "orders");
    EXPECT_EQ(v.elements[0].elements[1].elements[0].elements[0].text, "1-0");
    EXPECT_TRUE(v.elements[0].elements[1].elements[0].elements[1].is_null());
    EXPECT_EQ(v.elements[1].integer, 7);
    EXPECT_TRUE(v.elements[2].is_array());
    EXPECT_TRUE(v.elements[2].elements.empty());
}

TEST_F(RedisReplyTest, ByteByByteFeedGivesTheSameRepliesInOrder) {
    const std::string wire = "+OK\r\n*2\r\n$3\r\nfoo\r\n:12\r\n$-1\r\n-ERR x\r\n";
    reply_reader p;
    std::vector<resp_value> got;
    for (const char c : wire) {
        p.feed(std::string_view(&c, 1));
        resp_value v;
        std::string error;
        while (p.next(v, error) == reply_reader::state::value) {
            got.push_back(v);
        }
        ASSERT_TRUE(error.empty()) << error;
    }
    ASSERT_EQ(got.size(), 4u);
    EXPECT_EQ(got[0].text, "OK");
    EXPECT_EQ(got[1].elements[0].text, "foo");
    EXPECT_EQ(got[1].elements[1].integer, 12);
    EXPECT_TRUE(got[2].is_null());
    EXPECT_TRUE(got[3].is_error());
}

TEST_F(RedisReplyTest, IncompleteReplyWaitsForMoreBytes) {
    reply_reader p;
    p.feed("$10\r\n01234");
    resp_value v;
    std::string error;
    EXPECT_EQ(p.next(v, error), reply_reader::state::incomplete);
    p.feed("56789\r");
    EXPECT_EQ(p.next(v, error), reply_reader::state::incomplete);
    p.feed("\n");
    ASSERT_EQ(p.next(v, error), reply_reader::state::value);
    EXPECT_EQ(v.text, "0123456789");
}

TEST_F(RedisReplyTest, RefusesMalformedReplies) {
    EXPECT_FALSE(failure("?what\r\n").empty());
    EXPECT_FALSE(failure(":12a\r\n").empty());
    EXPECT_FALSE(failure("$-2\r\n").empty());
    EXPECT_FALSE(failure("$abc\r\n").empty());
    EXPECT_FALSE(failure("*-5\r\n").empty());
    EXPECT_FALSE(failure("*1\r\n!\r\n").empty());
}

TEST_F(RedisReplyTest, EnforcesLimits) {
    // hiredis' own: its reader takes 8 nested arrays, not 9 (stream replies need 4).
    EXPECT_FALSE(failure("*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n").empty());
    // Ours, on top: a huge array is refused before hiredis allocates it...
    EXPECT_NE(failure("*16777217\r\n").find("16777216 elements"), std::string::npos);
    std::string error;
    resp_value v;
    {
        reply_reader ok;
        ASSERT_TRUE(ok.feed("*16777216\r\n")); // at the limit: allocated, waits for elements
        EXPECT_EQ(ok.next(v, error), reply_reader::state::incomplete) << error;
    }
    // ...a huge declared bulk length up front, not buffered...
    EXPECT_NE(failure("$99999999999\r\n").find("bulk string"), std::string::npos);
    EXPECT_NE(failure("*2\r\n:1\r\n$536870913\r\n").find("bulk string"), std::string::npos);
    {
        reply_reader ok;
        ASSERT_TRUE(ok.feed("$536870912\r\nabc")); // Redis' own maximum: waits for the rest
        EXPECT_EQ(ok.next(v, error), reply_reader::state::incomplete) << error;
    }
    // ...and an endless header line is garbage, not a reason to buffer forever.
    EXPECT_NE(failure("+" + std::string(70000, 'a')).find("line"), std::string::npos);
    reply_reader partial;
    ASSERT_TRUE(partial.feed("+" + std::string(60000, 'a')));
    EXPECT_EQ(partial.next(v, error), reply_reader::state::incomplete) << error;
}

TEST_F(RedisReplyTest, ParsesRedisUrls) {
    std::string error;
    auto u = parse_redis_url("redis://alice:s%40cret@cache.local:6380/3", error);
    ASSERT_TRUE(u) << error;
    EXPECT_EQ(u->host, "cache.local");
    EXPECT_EQ(u->port, 6380);
    EXPECT_EQ(u->user, "alice");
    EXPECT_EQ(u->password, "s@cret");
    EXPECT_EQ(u->db, 3);

    auto p = parse_redis_url("redis://:pw@127.0.0.1", error);
    ASSERT_TRUE(p) << error;
    EXPECT_EQ(p->user, "");
    EXPECT_EQ(p->password, "pw");
    EXPECT_EQ(p->port, 6379);
    EXPECT_EQ(p->db, 0);

    for (const char* bad : {"rediss://h:1", "http://h", "redis://h:0", "redis://h:70000",
                            "redis://h/x", "redis://", "redis://h?x=1", "not a url"}) {
        EXPECT_FALSE(parse_redis_url(bad, error)) << bad;
    }
    EXPECT_FALSE(parse_redis_url("redis://u:topsecret@h:99999", error));
    EXPECT_EQ(error.find("topsecret"), std::string::npos);
}

TEST_F(RedisReplyTest, SettingsHaveDefaultsAndRefuseUnknownKeys) {
    std::string error;
    auto s = parse_connector_settings(R"({"url":"redis://127.0.0.1:1"})", error);
    ASSERT_TRUE(s) << error;
    EXPECT_EQ(s->block_ms, 2000);
    EXPECT_EQ(s->batch_size, 16u);
    EXPECT_EQ(s->claim_idle_ms, 60000);
    EXPECT_FALSE(s->consumer.empty());

    EXPECT_FALSE(parse_connector_settings("{}", error));
    EXPECT_FALSE(parse_connector_settings(R"({"url":"redis://h","maxDeliveries":3})", error));
    EXPECT_NE(error.find("maxDeliveries"), std::string::npos);
    EXPECT_FALSE(parse_connector_settings(R"({"url":"redis://h","batchSize":0})", error));
    EXPECT_FALSE(parse_connector_settings(R"({"url":"redis://h","consumer":"a b"})", error));

    auto sub = parse_subscription_settings(
        R"({"stream":"orders","group":"g","startFrom":"beginning","keyField":"k"})", error);
    ASSERT_TRUE(sub) << error;
    EXPECT_TRUE(sub->from_beginning);
    EXPECT_EQ(sub->key_field, "k");
    EXPECT_EQ(parse_subscription_settings(R"({"stream":"s"})", error)->group, "wopbridge");
    EXPECT_FALSE(parse_subscription_settings("{}", error));
    EXPECT_FALSE(parse_subscription_settings(R"({"stream":"s","startFrom":"middle"})", error));
}

TEST_F(RedisReplyTest, ReadsXreadgroupAndXautoclaimReplies) {
    auto read = one("*1\r\n*2\r\n$1\r\ns\r\n*2\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n"
                    "*2\r\n$3\r\n2-0\r\n*-1\r\n");
    auto entries = entries_of_read(read);
    ASSERT_TRUE(entries);
    ASSERT_EQ(entries->size(), 2u);
    EXPECT_EQ((*entries)[0].id, "1-0");
    ASSERT_TRUE((*entries)[0].fields);
    EXPECT_EQ((*entries)[0].fields->at(0).second, "b");
    EXPECT_FALSE((*entries)[1].fields); // deleted while pending
    EXPECT_TRUE(entries_of_read(one("*-1\r\n"))->empty());
    EXPECT_FALSE(entries_of_read(one(":1\r\n")));
    EXPECT_FALSE(
        entries_of_read(one("*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$1\r\n1\r\n*1\r\n$1\r\na\r\n")));

    auto claim =
        one("*3\r\n$3\r\n0-0\r\n*1\r\n*2\r\n$3\r\n5-1\r\n*2\r\n$1\r\nx\r\n$1\r\ny\r\n*0\r\n");
    auto claimed = entries_of_autoclaim(claim);
    ASSERT_TRUE(claimed);
    EXPECT_EQ(claimed->first, "0-0");
    ASSERT_EQ(claimed->second.size(), 1u);
    EXPECT_EQ(claimed->second[0].id, "5-1");
}

TEST_F(RedisReplyTest, EventContentFollowsTheStreamEventShape) {
    subscription_settings sub;
    sub.stream = "orders";
    sub.key_field = "customer";
    stream_entry e{
        "1700000000000-0",
        std::vector<std::pair<std::string, std::string>>{
            {"customer", "c-9"}, {"note", "line\n\"q\""}, {"note", "second"}, {"bin", "\xff"}}};
    auto doc = boost::json::parse(event_content(sub, e, 1024));
    const auto& s = doc.at("stream").as_object();
    EXPECT_EQ(doc.as_object().size(), 1u);
    EXPECT_EQ(s.at("topic").as_string(), "orders");
    EXPECT_EQ(s.at("offset").as_string(), "1700000000000-0");
    EXPECT_EQ(s.at("key").as_string(), "c-9");
    EXPECT_FALSE(s.contains("partition"));
    EXPECT_EQ(s.at("message").at("note").as_string(), "line\n\"q\""); // the first one wins
    EXPECT_EQ(s.at("message").at("bin").as_string(), "\xef\xbf\xbd");

    // Oversize: still one event, without the payload.
    auto big = boost::json::parse(event_content(sub, e, 5));
    EXPECT_TRUE(big.at("stream").at("message").is_null());
    EXPECT_EQ(big.at("stream").at("offset").as_string(), "1700000000000-0");

    sub.message_field = "note";
    stream_entry j{"2-0", std::vector<std::pair<std::string, std::string>>{
                              {"note", R"({"n":1,"tags":["a"]})"}}};
    EXPECT_EQ(boost::json::parse(event_content(sub, j, 1024)).at("stream").at("message").at("n"),
              1);
    stream_entry t{"3-0", std::vector<std::pair<std::string, std::string>>{{"note", "plain"}}};
    EXPECT_EQ(boost::json::parse(event_content(sub, t, 1024)).at("stream").at("message"), "plain");
}

} // namespace
} // namespace wopbridge::queue
