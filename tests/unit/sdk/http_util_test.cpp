#include "wopbridge/http_util.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace wopbridge::http {
namespace {

using ::testing::ElementsAre;
using pair = std::pair<std::string, std::string>;

class HttpUtilTest : public ::testing::Test {};

TEST_F(HttpUtilTest, DecodesPercentAndPlus) {
    EXPECT_EQ(percent_decode("a%20b%2Fc"), "a b/c");
    EXPECT_EQ(percent_decode("a+b"), "a+b");
    EXPECT_EQ(percent_decode("a+b", true), "a b");
    EXPECT_EQ(percent_decode("%e2%82%AC"), "\xe2\x82\xac");
    EXPECT_EQ(percent_decode(""), "");
}

TEST_F(HttpUtilTest, RefusesMalformedEscapes) {
    EXPECT_FALSE(percent_decode("%"));
    EXPECT_FALSE(percent_decode("abc%2"));
    EXPECT_FALSE(percent_decode("%zz"));
    EXPECT_FALSE(percent_decode("%2g"));
}

TEST_F(HttpUtilTest, ParsesFormBodiesInOrder) {
    const auto p = parse_form_urlencoded("b=2&a=1&text=hello+world&a=3&flag&empty=&&x=%26%3D");
    ASSERT_TRUE(p);
    EXPECT_THAT(*p,
                ElementsAre(pair{"b", "2"}, pair{"a", "1"}, pair{"text", "hello world"},
                            pair{"a", "3"}, pair{"flag", ""}, pair{"empty", ""}, pair{"x", "&="}));
    EXPECT_EQ(find_param(*p, "a"), "1");
    EXPECT_FALSE(find_param(*p, "A"));
}

TEST_F(HttpUtilTest, ParsesTheSlackSlashCommandBody) {
    const auto p = parse_form_urlencoded("command=%2Fwebhook-collect&text=&response_url=https%3A%"
                                         "2F%2Fhooks.slack.com%2Fcommands%2FT1");
    ASSERT_TRUE(p);
    EXPECT_EQ(find_param(*p, "command"), "/webhook-collect");
    EXPECT_EQ(find_param(*p, "response_url"), "https://hooks.slack.com/commands/T1");
}

TEST_F(HttpUtilTest, RefusesAFormWithABadEscape) {
    EXPECT_FALSE(parse_form_urlencoded("a=1&b=%G1"));
    EXPECT_FALSE(parse_form_urlencoded("a%=1"));
    EXPECT_TRUE(parse_form_urlencoded("")->empty());
}

TEST_F(HttpUtilTest, FormRoundTrips) {
    const param_list in = {{"To", "+1 800"}, {"Body", "a&b=c/é"}};
    const auto text = format_form_urlencoded(in);
    EXPECT_EQ(text, "To=%2B1+800&Body=a%26b%3Dc%2F%C3%A9");
    EXPECT_EQ(parse_form_urlencoded(text), in);
}

TEST_F(HttpUtilTest, SplitsTargets) {
    EXPECT_EQ(path_of("/v1/ingest/x?a=1#f"), "/v1/ingest/x");
    EXPECT_EQ(query_of("/v1/ingest/x?a=1#f"), "a=1");
    EXPECT_EQ(query_of("/v1/ingest/x"), "");
    const auto q = parse_query("https://h.example/p?foo=1&bar=2&bodySHA256=ab");
    ASSERT_TRUE(q);
    EXPECT_THAT(*q, ElementsAre(pair{"foo", "1"}, pair{"bar", "2"}, pair{"bodySHA256", "ab"}));
    EXPECT_FALSE(parse_query("/p?x=%"));
}

TEST_F(HttpUtilTest, FindsHeadersIgnoringCase) {
    const std::vector<pair> headers = {{"content-type", "application/json"},
                                       {"X-Slack-Signature", "v0=abc"}};
    EXPECT_EQ(find_header(headers, "Content-Type"), "application/json");
    EXPECT_EQ(find_header(headers, "x-slack-signature"), "v0=abc");
    EXPECT_FALSE(find_header(headers, "x-slack-signature-x"));
    EXPECT_TRUE(iequals("ABC", "abc"));
    EXPECT_FALSE(iequals("abc", "abd"));
}

TEST_F(HttpUtilTest, ExtractsTheMediaType) {
    EXPECT_EQ(media_type("Application/JSON; charset=utf-8"), "application/json");
    EXPECT_EQ(media_type(" application/x-www-form-urlencoded "),
              "application/x-www-form-urlencoded");
    EXPECT_EQ(media_type(""), "");
}

} // namespace
} // namespace wopbridge::http
