// Request framing is decided from the header alone and refuses everything a proxy in front of us
// could frame differently (request smuggling): only one plain Content-Length, or
// `Transfer-Encoding: chunked` alone.
#include "http/request_framing.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace wopbridge::http {
namespace {

class RequestFramingTest : public ::testing::Test {
  protected:
    static result<request_framing> of(std::vector<header_view> fields) {
        fields.insert(fields.begin(), {"Host", "x"});
        return framing_of(fields);
    }
};

TEST_F(RequestFramingTest, NoFramingHeaderMeansNoBody) {
    auto f = of({});
    ASSERT_TRUE(f.has_value());
    EXPECT_EQ(f->kind, body_framing::none);
}

TEST_F(RequestFramingTest, OnePlainContentLengthIsAccepted) {
    for (std::string_view v : {"0", "42", " 42 ", "4194304", "18446744073709551615"}) {
        auto f = of({{"Content-Length", v}});
        ASSERT_TRUE(f.has_value()) << v;
        EXPECT_EQ(f->kind, body_framing::content_length) << v;
    }
    EXPECT_EQ(of({{"content-length", "4194304"}})->content_length, 4194304u);
}

TEST_F(RequestFramingTest, ChunkedAloneIsAcceptedInAnyCase) {
    for (std::string_view v : {"chunked", "Chunked", "CHUNKED", " chunked\t"}) {
        auto f = of({{"Transfer-Encoding", v}});
        ASSERT_TRUE(f.has_value()) << v;
        EXPECT_EQ(f->kind, body_framing::chunked) << v;
    }
}

TEST_F(RequestFramingTest, AnyOtherTransferCodingIsRefused) {
    for (std::string_view v : {"chunked, identity", "gzip, chunked", "xchunked", "gzip", "identity",
                               "chunked,", ", chunked", "chunked;q=1", "chunked chunked", "",
                               "chunke", "chunked\x0b"}) {
        EXPECT_FALSE(of({{"Transfer-Encoding", v}}).has_value()) << v;
    }
}

TEST_F(RequestFramingTest, TwoTransferEncodingFieldsAreRefused) {
    EXPECT_FALSE(of({{"Transfer-Encoding", "gzip"}, {"Transfer-Encoding", "chunked"}}));
    EXPECT_FALSE(of({{"Transfer-Encoding", "chunked"}, {"transfer-encoding", "chunked"}}));
}

TEST_F(RequestFramingTest, ContentLengthWithTransferEncodingIsRefusedInEitherOrder) {
    EXPECT_FALSE(of({{"Content-Length", "5"}, {"Transfer-Encoding", "chunked"}}));
    EXPECT_FALSE(of({{"Transfer-Encoding", "chunked"}, {"Content-Length", "5"}}));
    EXPECT_FALSE(of({{"Transfer-Encoding", "gzip"}, {"Content-Length", "5"}}));
}

TEST_F(RequestFramingTest, DuplicateOrMalformedContentLengthIsRefused) {
    EXPECT_FALSE(of({{"Content-Length", "5"}, {"Content-Length", "5"}}));
    EXPECT_FALSE(of({{"Content-Length", "5"}, {"Content-Length", "6"}}));
    for (std::string_view v : {"5, 5", "5,6", "+5", "-5", "0x10", "5 5", "", " ", "5a",
                               "18446744073709551616", "99999999999999999999999"}) {
        EXPECT_FALSE(of({{"Content-Length", v}}).has_value()) << v;
    }
}

} // namespace
} // namespace wopbridge::http
