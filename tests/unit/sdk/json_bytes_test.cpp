// Bytes that are not UTF-8 are carried losslessly inside submitted content (sdk json_bytes.hpp).
#include <wopbridge/json_bytes.hpp>

#include <boost/json.hpp>
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

} // namespace
} // namespace wopbridge::json
