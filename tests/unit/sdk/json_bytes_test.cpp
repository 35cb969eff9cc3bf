// Bytes that are not UTF-8 are carried losslessly inside submitted content (sdk json_bytes.hpp).
#include <wopbridge/json_bytes.hpp>

#include <boost/json.hpp>
#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

namespace wopbridge::json {
namespace {

TEST(JsonBytesTest, CarriedTextKeepsUtf8AndMarksOtherBytes) {
    EXPECT_EQ(carried_text("report.pdf"), "report.pdf");
    EXPECT_EQ(carried_text("r\xC3\xA9sum\xC3\xA9.pdf"), "r\xC3\xA9sum\xC3\xA9.pdf");
    EXPECT_EQ(carried_text("r\xff.txt"), "$base64:cv8udHh0");
    EXPECT_EQ(carried_text("caf\xe9"), "$base64:Y2Fm6Q=="); // Windows-1252, as a legacy page sends
    EXPECT_EQ(sig::base64_decode(carried_text("\x80\x81\xfe").substr(8)).value_or(""),
              "\x80\x81\xfe");
}

TEST(JsonBytesTest, InvalidValuesAndKeysAreRewrittenAndValidOnesLeftAlone) {
    boost::json::value v = boost::json::object{{"ok", "fine"}, {"bad", "a\xff"}, {"k\xfe", "v"}};
    EXPECT_TRUE(carry_invalid_utf8(v));
    const auto& o = v.as_object();
    EXPECT_EQ(o.at("ok"), "fine");
    EXPECT_EQ(o.at("bad"), (boost::json::object{{"$base64", "Yf8="}}));
    EXPECT_EQ(o.at("$base64:a/4="), "v");
    boost::json::value clean = boost::json::array{"x", 1, boost::json::object{{"y", "z"}}};
    EXPECT_FALSE(carry_invalid_utf8(clean));
}

TEST(JsonBytesTest, PostedWebhookContentCarriesHeadersAndABodyWithBytes) {
    const auto text = posted_webhook_content(boost::json::object{{"content-type", "text/plain"}},
                                             boost::json::object{{"Body", "caf\xe9"}});
    const auto v = boost::json::parse(text);
    EXPECT_EQ(v, boost::json::parse(R"({"webhook":{"method":"POST",)"
                                    R"("headers":{"content-type":"text/plain"},)"
                                    R"("body":{"Body":{"$base64":"Y2Fm6Q=="}}}})"));
}

TEST(JsonBytesTest, NumbersAreExactOnlyWhenTheirTextSurvives) {
    auto fidelity = [](std::string_view text) {
        return numbers_in(text, boost::json::parse(text));
    };
    EXPECT_EQ(fidelity(R"({"a":1,"b":-2.5e10,"c":[0,18446744073709551615]})"),
              number_fidelity::exact);
    EXPECT_EQ(fidelity("-9223372036854775808"), number_fidelity::exact);
    EXPECT_EQ(fidelity(R"({"s":"123456789012345678901234567890 in a string"})"),
              number_fidelity::exact);
    EXPECT_EQ(fidelity(R"({"s":"quote \" 99999999999999999999999"})"), number_fidelity::exact);
    EXPECT_EQ(fidelity("18446744073709551616"), number_fidelity::rounded);
    EXPECT_EQ(fidelity("-9223372036854775809"), number_fidelity::rounded);
    EXPECT_EQ(fidelity(R"({"id":123456789012345678901234567890})"), number_fidelity::rounded);
    EXPECT_EQ(fidelity(R"({"n":1e400})"), number_fidelity::not_finite);
    EXPECT_EQ(fidelity("[" + std::string(400, '9') + "]"), number_fidelity::not_finite);
}

TEST(JsonBytesTest, ContentJsonKeepsBadUtf8AsTheMarkerAndGivesUpOnInexactNumbers) {
    auto v = parse_content_json("{\"t\":\"a\xff\"}");
    ASSERT_TRUE(v);
    EXPECT_EQ(boost::json::serialize(*v), R"({"t":{"$base64":"Yf8="}})");
    EXPECT_FALSE(parse_content_json(R"({"n":1e400})"));
    EXPECT_FALSE(parse_content_json("{nope"));
    EXPECT_TRUE(parse_content_json(R"({"n":1.5})"));
}

} // namespace
} // namespace wopbridge::json
