#include "wopbridge/stream_event.hpp"

#include <gtest/gtest.h>

namespace wopbridge::json {
namespace {

TEST(SdkStreamEventTest, JsonPayloadIsCarriedAsJson) {
    EXPECT_EQ(stream_message(R"( {"a": [1, true]} )", 1024, false), R"({"a":[1,true]})");
    EXPECT_EQ(stream_message("42", 1024, false), "42");
}

TEST(SdkStreamEventTest, TextThatIsNotJsonIsCarriedAsAString) {
    EXPECT_EQ(stream_message("hello \"you\"", 1024, false), R"("hello \"you\"")");
    EXPECT_EQ(stream_message("", 1024, false), R"("")");
}

TEST(SdkStreamEventTest, BytesThatAreNotUtf8AreCarriedAsBase64) {
    const std::string raw("\xff\x00\x01", 3);
    EXPECT_EQ(stream_message(raw, 1024, false), R"({"$base64":"/wAB"})");
}

TEST(SdkStreamEventTest, OversizeOrRefusedPayloadIsNull) {
    EXPECT_EQ(stream_message("12345", 4, false), "null");
    EXPECT_EQ(stream_message("1234", 4, false), "1234");
    EXPECT_EQ(stream_message("{}", 1024, true), "null");
}

} // namespace
} // namespace wopbridge::json
