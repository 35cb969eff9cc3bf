#include "wopbridge/json_util.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

namespace wopbridge::json {
namespace {

class JsonUtilTest : public ::testing::Test {};

TEST_F(JsonUtilTest, QuotesIntoValidJson) {
    EXPECT_EQ(quote("plain"), R"("plain")");
    EXPECT_EQ(quote("a\"b\\c\n\x01"), R"("a\"b\\c\n\u0001")");
    EXPECT_EQ(quote("caf\xc3\xa9"), "\"caf\xc3\xa9\"");
    EXPECT_EQ(quote("bad\xff"), "\"bad\xEF\xBF\xBD\"");
    // Whatever the input, Boost.JSON reads back a string.
    const std::string nasty("\x00\x1f\"\\\xc0\xaf\xed\xa0\x80ok", 12);
    const auto v = boost::json::parse(quote(nasty));
    EXPECT_TRUE(v.is_string());
}

TEST_F(JsonUtilTest, ReadsFlatObjects) {
    const auto o = parse_flat_object(
        R"( {"greeting":"hi\u00e9\n","n":-1.5e3,"on":true,"off":false,"none":null,"z":0} )");
    ASSERT_TRUE(o);
    EXPECT_EQ(o->at("greeting").text, "hi\xc3\xa9\n");
    EXPECT_EQ(o->at("greeting").type, flat_value::kind::string);
    EXPECT_EQ(o->at("n").text, "-1.5e3");
    EXPECT_EQ(o->at("n").type, flat_value::kind::number);
    EXPECT_EQ(o->at("on").text, "true");
    EXPECT_EQ(o->at("none").type, flat_value::kind::null);
    EXPECT_EQ(o->at("z").text, "0");
    EXPECT_TRUE(parse_flat_object("{}")->empty());
    EXPECT_EQ(parse_flat_object(R"({"s":"\ud83d\ude00"})")->at("s").text, "\xf0\x9f\x98\x80");
}

TEST_F(JsonUtilTest, RefusesWhatItDoesNotRead) {
    std::string error;
    const char* bad[] = {"",
                         "[]",
                         "{",
                         R"({"a":})",
                         R"({"a":1,})",
                         R"({"a":{}})",
                         R"({"a":[1]})",
                         R"({"a":1} x)",
                         R"({"a":1,"a":2})",
                         R"({"a":01})",
                         R"({"a":1.})",
                         R"({"a":"\x"})",
                         R"({"a":"\ud800"})",
                         "{\"a\":\"\x01\"}",
                         R"({a:1})",
                         R"({"a":tru})"};
    for (const char* text : bad) {
        error.clear();
        EXPECT_FALSE(parse_flat_object(text, &error)) << text;
        EXPECT_FALSE(error.empty()) << text;
    }
}

} // namespace
} // namespace wopbridge::json
