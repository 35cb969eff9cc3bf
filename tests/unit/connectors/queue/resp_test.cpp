// The queue connector's protocol pieces on their own: RESP2 parsing/encoding, redis:// URLs,
// settings, reply shapes and the event content.

#include "queue/redis_client.hpp"
#include "queue/resp.hpp"
#include "queue/settings.hpp"
#include "queue/stream_worker.hpp"

#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

namespace wopbridge::queue {
namespace {

using kind = resp_value::kind;

class RespTest : public ::testing::Test {
  protected:
    // Parses exactly one reply from `bytes`, fed in one piece.
    resp_value one(std::string_view bytes) {
        resp_parser p;
        p.feed(bytes);
        resp_value v;
        std::string error;
        EXPECT_EQ(p.next(v, error), resp_parser::state::value) << error;
        EXPECT_EQ(p.buffered(), 0u);
        return v;
    }

    std::string failure(std::string_view bytes, resp_limits limits = {}) {
        resp_parser p(limits);
        p.feed(bytes);
        resp_value v;
        std::string error;
        EXPECT_EQ(p.next(v, error), resp_parser::state::error);
        return error;
    }
};

TEST_F(RespTest, ParsesScalars) {
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

TEST_F(RespTest, BulkStringsAreBinarySafe) {
    const std::string payload("a\r\nb\0c", 6);
    auto v = one("$6\r\n" + payload + "\r\n");
    EXPECT_EQ(v.type, kind::bulk);
    EXPECT_EQ(v.text, payload);
}

TEST_F(RespTest, ParsesNestedArraysWithNulls) {
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

TEST_F(RespTest, ByteByByteFeedGivesTheSameRepliesInOrder) {
    const std::string wire = "+OK\r\n*2\r\n$3\r\nfoo\r\n:12\r\n$-1\r\n-ERR x\r\n";
    resp_parser p;
    std::vector<resp_value> got;
    for (const char c : wire) {
        p.feed(std::string_view(&c, 1));
        resp_value v;
        std::string error;
        while (p.next(v, error) == resp_parser::state::value) {
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

TEST_F(RespTest, IncompleteReplyWaitsForMoreBytes) {
    resp_parser p;
    p.feed("$10\r\n01234");
    resp_value v;
    std::string error;
    EXPECT_EQ(p.next(v, error), resp_parser::state::incomplete);
    p.feed("56789\r");
    EXPECT_EQ(p.next(v, error), resp_parser::state::incomplete);
    p.feed("\n");
    ASSERT_EQ(p.next(v, error), resp_parser::state::value);
    EXPECT_EQ(v.text, "0123456789");
}

TEST_F(RespTest, RefusesMalformedReplies) {
    EXPECT_FALSE(failure("?what\r\n").empty());
    EXPECT_FALSE(failure(":12a\r\n").empty());
    EXPECT_FALSE(failure("$-2\r\n").empty());
    EXPECT_FALSE(failure("$abc\r\n").empty());
    EXPECT_FALSE(failure("$3\r\nfooXY").empty());
    EXPECT_FALSE(failure("*-5\r\n").empty());
    EXPECT_FALSE(failure("*1\r\n!\r\n").empty());
}

TEST_F(RespTest, EnforcesLimits) {
    resp_limits limits;
    limits.max_bulk_bytes = 4;
    limits.max_depth = 2;
    limits.max_array_elements = 3;
    EXPECT_FALSE(failure("$5\r\nhello\r\n", limits).empty());
    EXPECT_FALSE(failure("*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n", limits).empty());
    EXPECT_FALSE(failure("*4\r\n", limits).empty());
    // A huge declared length is refused up front, not buffered.
    EXPECT_FALSE(failure("$99999999999\r\n").empty());
    // An endless header line is garbage, not a reason to buffer forever.
    EXPECT_FALSE(failure("+" + std::string(70000, 'a')).empty());
}

TEST_F(RespTest, EncodesCommandsAsBulkArrays) {
    EXPECT_EQ(encode_command({"XACK", "s", "1-0"}), "*3\r\n$4\r\nXACK\r\n$1\r\ns\r\n$3\r\n1-0\r\n");
    EXPECT_EQ(encode_command({"SET", "k", std::string("a\r\n", 3)}),
              "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$3\r\na\r\n\r\n");
}

TEST_F(RespTest, ParsesRedisUrls) {
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

TEST_F(RespTest, SettingsHaveDefaultsAndRefuseUnknownKeys) {
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

TEST_F(RespTest, ReadsXreadgroupAndXautoclaimReplies) {
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

TEST_F(RespTest, EventContentFollowsTheStreamEventShape) {
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
