#include <wopbridge/multipart.hpp>

#include <gtest/gtest.h>

namespace wopbridge::http {
namespace {

class MultipartTest : public ::testing::Test {
  protected:
    multipart_limits limits_;
};

TEST_F(MultipartTest, ParsesFieldsAndFileWithCrlf) {
    std::string body = "--XyZ\r\n"
                       "Content-Disposition: form-data; name=\"name\"\r\n\r\n"
                       "Ada Lovelace\r\n"
                       "--XyZ\r\n"
                       "Content-Disposition: form-data; name=\"cv\"; filename=\"cv.pdf\"\r\n"
                       "Content-Type: application/pdf\r\n\r\n"
                       "%PDF\r\n--not-a-boundary\r\n" +
                       std::string("\0\x01", 2) + "\r\n--XyZ--\r\nepilogue";
    auto r = parse_multipart(body, "XyZ", limits_);
    ASSERT_EQ(r.error, multipart_error::none);
    ASSERT_EQ(r.parts.size(), 2u);
    EXPECT_EQ(r.parts[0].body, "Ada Lovelace");
    auto info = form_part_info_of(r.parts[1]);
    ASSERT_TRUE(info);
    EXPECT_EQ(info->name, "cv");
    EXPECT_EQ(info->filename.value_or(""), "cv.pdf");
    EXPECT_EQ(info->media_type, "application/pdf");
    EXPECT_EQ(r.parts[1].body.substr(0, 22), "%PDF\r\n--not-a-boundary");
    EXPECT_EQ(r.parts[1].body.size(), 26u);
}

TEST_F(MultipartTest, ToleratesBareLfAndPreamble) {
    std::string body = "preamble\n--b\nContent-Disposition: form-data; name=a\n\n1\n--b--\n";
    auto r = parse_multipart(body, "b", limits_);
    ASSERT_EQ(r.error, multipart_error::none);
    ASSERT_EQ(r.parts.size(), 1u);
    EXPECT_EQ(r.parts[0].body, "1");
    EXPECT_EQ(form_part_info_of(r.parts[0])->name, "a");
}

TEST_F(MultipartTest, EmptyPartBody) {
    std::string body = "--b\r\nContent-Disposition: form-data; name=\"e\"\r\n\r\n\r\n--b--\r\n";
    auto r = parse_multipart(body, "b", limits_);
    ASSERT_EQ(r.error, multipart_error::none);
    ASSERT_EQ(r.parts.size(), 1u);
    EXPECT_EQ(r.parts[0].body, "");
}

TEST_F(MultipartTest, MissingCloseDelimiterIsMalformedUnlessLenient) {
    std::string body = "--b\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nvalue";
    EXPECT_EQ(parse_multipart(body, "b", limits_).error, multipart_error::malformed);
    auto lenient = parse_multipart(body, "b", limits_, true);
    ASSERT_EQ(lenient.error, multipart_error::none);
    EXPECT_EQ(lenient.parts.at(0).body, "value");
}

TEST_F(MultipartTest, NoDelimiterAtAllIsMalformed) {
    EXPECT_EQ(parse_multipart("just text", "b", limits_).error, multipart_error::malformed);
}

TEST_F(MultipartTest, HeaderWithoutColonIsMalformed) {
    std::string body = "--b\r\nthis is not a header\r\n\r\nx\r\n--b--";
    EXPECT_EQ(parse_multipart(body, "b", limits_).error, multipart_error::malformed);
}

TEST_F(MultipartTest, EnforcesPartCount) {
    limits_.max_parts = 2;
    std::string body;
    for (int i = 0; i < 3; ++i) {
        body += "--b\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\nv\r\n";
    }
    body += "--b--\r\n";
    EXPECT_EQ(parse_multipart(body, "b", limits_).error, multipart_error::too_many_parts);
}

TEST_F(MultipartTest, EnforcesPartAndTotalSize) {
    limits_.max_part_bytes = 4;
    std::string body = "--b\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\n12345\r\n--b--";
    EXPECT_EQ(parse_multipart(body, "b", limits_).error, multipart_error::part_too_large);
    limits_.max_part_bytes = 100;
    limits_.max_total_bytes = 10;
    EXPECT_EQ(parse_multipart(body, "b", limits_).error, multipart_error::too_large);
}

TEST_F(MultipartTest, BoundaryFromContentType) {
    EXPECT_EQ(
        boundary_of("multipart/form-data; boundary=----WebKitFormBoundary7MA4YWxk").value_or(""),
        "----WebKitFormBoundary7MA4YWxk");
    EXPECT_EQ(boundary_of("Multipart/Form-Data; charset=utf-8; boundary=\"a b:c\"").value_or(""),
              "a b:c");
    EXPECT_FALSE(boundary_of("multipart/form-data"));
    EXPECT_FALSE(boundary_of("text/plain; boundary=x"));
    EXPECT_FALSE(boundary_of("multipart/form-data; boundary=" + std::string(71, 'a')));
    EXPECT_FALSE(boundary_of("multipart/form-data; boundary=\"bad{char\""));
}

TEST_F(MultipartTest, HeaderParamsQuotedAndRfc2231) {
    auto hv = parse_header_value(
        "form-data; name=\"a\\\"b\"; filename=\"C:\\x.txt\"; filename*=UTF-8''%E2%82%AC.txt");
    EXPECT_EQ(hv.value, "form-data");
    EXPECT_EQ(hv.param("name").value_or(""), "a\"b");
    EXPECT_EQ(hv.param("filename").value_or(""), "\xE2\x82\xAC.txt");
}

TEST_F(MultipartTest, HeaderBlockUnfolds) {
    auto h = parse_header_block("Subject: a\r\n b\r\nX-Y:  z \r\n");
    ASSERT_TRUE(h);
    ASSERT_EQ(h->size(), 2u);
    EXPECT_EQ((*h)[0].first, "subject");
    EXPECT_EQ((*h)[0].second, "a b");
    EXPECT_EQ((*h)[1].second, "z");
    EXPECT_FALSE(parse_header_block(" leading continuation\r\n"));
}

} // namespace
} // namespace wopbridge::http
