#include "email/mime.hpp"

#include <gtest/gtest.h>

namespace wopbridge::email {
namespace {

class MimeTest : public ::testing::Test {};

TEST_F(MimeTest, PlainMessageWithUnfoldedHeaders) {
    std::string raw = "From: Ada <ada@example.com>\r\n"
                      "To: inbox@bridge.test, \"Doe, J\" <j@x.test>\r\n"
                      "Subject: a long\r\n subject\r\n"
                      "Message-ID: <m1@example.com>\r\n"
                      "\r\n"
                      "Hello\r\n";
    auto m = parse_message(raw);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->from, "Ada <ada@example.com>");
    ASSERT_EQ(m->to.size(), 2u);
    EXPECT_EQ(m->to[1], "\"Doe, J\" <j@x.test>");
    EXPECT_EQ(address_of(m->to[1]), "j@x.test");
    EXPECT_EQ(m->subject, "a long subject");
    EXPECT_EQ(m->message_id, "<m1@example.com>");
    EXPECT_EQ(m->text, "Hello\r\n");
    EXPECT_FALSE(m->html);
    EXPECT_TRUE(m->attachments.empty());
}

TEST_F(MimeTest, AlternativeChoosesTextAndHtml) {
    std::string raw = "Content-Type: multipart/alternative; boundary=\"alt\"\r\n"
                      "\r\n"
                      "This is a multi-part message.\r\n"
                      "--alt\r\n"
                      "Content-Type: text/plain; charset=utf-8\r\n\r\n"
                      "plain body\r\n"
                      "--alt\r\n"
                      "Content-Type: text/html; charset=utf-8\r\n\r\n"
                      "<p>html body</p>\r\n"
                      "--alt--\r\n";
    auto m = parse_message(raw);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->text, "plain body");
    ASSERT_TRUE(m->html);
    EXPECT_EQ(*m->html, "<p>html body</p>");
    EXPECT_TRUE(m->attachments.empty());
}

TEST_F(MimeTest, NestedMixedWithBase64Attachment) {
    std::string raw = "Content-Type: multipart/mixed; boundary=outer\r\n\r\n"
                      "--outer\r\n"
                      "Content-Type: multipart/alternative; boundary=inner\r\n\r\n"
                      "--inner\r\n"
                      "Content-Type: text/plain\r\n\r\n"
                      "see attached\r\n"
                      "--inner\r\n"
                      "Content-Type: multipart/related; boundary=rel\r\n\r\n"
                      "--rel\r\n"
                      "Content-Type: text/html\r\n\r\n"
                      "<b>see</b>\r\n"
                      "--rel--\r\n"
                      "--inner--\r\n"
                      "--outer\r\n"
                      "Content-Type: application/pdf; name=\"ignored.pdf\"\r\n"
                      "Content-Disposition: attachment; filename=\"report.pdf\"\r\n"
                      "Content-Transfer-Encoding: base64\r\n\r\n"
                      "JVBERi0x\r\nLjQK\r\n"
                      "--outer--\r\n";
    auto m = parse_message(raw);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->text, "see attached");
    EXPECT_EQ(m->html.value_or(""), "<b>see</b>");
    ASSERT_EQ(m->attachments.size(), 1u);
    EXPECT_EQ(m->attachments[0].filename, "report.pdf");
    EXPECT_EQ(m->attachments[0].media_type, "application/pdf");
    EXPECT_EQ(m->attachments[0].bytes, "%PDF-1.4\n");
}

TEST_F(MimeTest, QuotedPrintableBody) {
    std::string raw = "Content-Type: text/plain; charset=utf-8\r\n"
                      "Content-Transfer-Encoding: quoted-printable\r\n\r\n"
                      "caf=C3=A9 au lait, a very long line that is =\r\nsoft broken=3D  \r\nend";
    auto m = parse_message(raw);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->text, "caf\xC3\xA9 au lait, a very long line that is soft broken=\r\nend");
}

TEST_F(MimeTest, EncodedWordSubjects) {
    EXPECT_EQ(decode_encoded_words("=?UTF-8?B?SMOpbGxv?="), "H\xC3\xA9llo");
    EXPECT_EQ(decode_encoded_words("=?iso-8859-1?Q?Caf=E9_cr=E8me?="), "Caf\xC3\xA9 cr\xC3\xA8me");
    // Whitespace between adjacent encoded-words disappears; around plain text it stays.
    EXPECT_EQ(decode_encoded_words("=?UTF-8?Q?a?= =?UTF-8?Q?b?= c"), "ab c");
    EXPECT_EQ(decode_encoded_words("Re: =?windows-1252?Q?=93quoted=94?="),
              "Re: \xE2\x80\x9Cquoted\xE2\x80\x9D");
    EXPECT_EQ(decode_encoded_words("=?bogus"), "=?bogus");
    bool converted = true;
    EXPECT_EQ(decode_encoded_words("=?koi8-r?B?YWJj?=", &converted), "abc");
    EXPECT_FALSE(converted);
}

TEST_F(MimeTest, Iso88591BodyBecomesUtf8) {
    std::string raw = "Subject: =?ISO-8859-1?Q?Gr=FC=DFe?=\r\n"
                      "Content-Type: text/plain; charset=\"ISO-8859-1\"\r\n"
                      "Content-Transfer-Encoding: 8bit\r\n\r\n"
                      "Gr\xFC\xDF"
                      "e \x80";
    auto m = parse_message(raw);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->subject, "Gr\xC3\xBC\xC3\x9F"
                          "e");
    EXPECT_EQ(m->text, "Gr\xC3\xBC\xC3\x9F"
                       "e \xE2\x82\xAC");
    EXPECT_FALSE(m->unconverted_charset);
}

TEST_F(MimeTest, UnknownCharsetIsFlaggedAndSanitized) {
    std::string raw = "Content-Type: text/plain; charset=shift_jis\r\n\r\nab\xFF";
    auto m = parse_message(raw);
    ASSERT_TRUE(m);
    EXPECT_TRUE(m->unconverted_charset);
    EXPECT_EQ(m->text, "ab\xEF\xBF\xBD");
}

TEST_F(MimeTest, NonTextPartWithFilenameIsAttachmentEvenInline) {
    std::string raw = "Content-Type: multipart/mixed; boundary=b\r\n\r\n"
                      "--b\r\nContent-Type: text/plain\r\n\r\nhi\r\n"
                      "--b\r\nContent-Type: image/png; name=\"=?UTF-8?Q?p=C3=A9.png?=\"\r\n"
                      "Content-Disposition: inline\r\n"
                      "Content-Transfer-Encoding: base64\r\n\r\niVBORw==\r\n"
                      "--b\r\nContent-Type: text/plain\r\n"
                      "Content-Disposition: attachment; filename=notes.txt\r\n\r\nnotes\r\n"
                      "--b--\r\n";
    auto m = parse_message(raw);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->text, "hi");
    ASSERT_EQ(m->attachments.size(), 2u);
    EXPECT_EQ(m->attachments[0].filename, "p\xC3\xA9.png");
    EXPECT_EQ(m->attachments[0].bytes, "\x89PNG");
    EXPECT_EQ(m->attachments[1].filename, "notes.txt");
    EXPECT_EQ(m->attachments[1].bytes, "notes");
}

TEST_F(MimeTest, DepthLimitTruncates) {
    std::string raw = "Content-Type: multipart/mixed; boundary=b0\r\n\r\n";
    std::string tail;
    for (int i = 1; i < 30; ++i) {
        raw += "--b" + std::to_string(i - 1) + "\r\nContent-Type: multipart/mixed; boundary=b" +
               std::to_string(i) + "\r\n\r\n";
        tail = "--b" + std::to_string(i - 1) + "--\r\n" + tail;
    }
    raw += "--b29\r\n\r\ndeep\r\n--b29--\r\n" + tail;
    mime_limits limits;
    limits.max_depth = 8;
    auto m = parse_message(raw, limits);
    ASSERT_TRUE(m);
    EXPECT_TRUE(m->truncated_structure);
    EXPECT_EQ(m->text, "");
}

TEST_F(MimeTest, Base64AndQpPrimitives) {
    EXPECT_EQ(decode_base64_mime("aGVs\r\nbG8=\r\n"), "hello");
    EXPECT_EQ(decode_quoted_printable("a=\nb=4"), "ab=4");
    EXPECT_EQ(sanitize_utf8("\xC0\xAF ok"), "\xEF\xBF\xBD\xEF\xBF\xBD ok");
    EXPECT_EQ(to_utf8("\x93x\x94", "windows-1252"), "\xE2\x80\x9Cx\xE2\x80\x9D");
}

TEST_F(MimeTest, AddressListRespectsQuotesAndBrackets) {
    auto list = split_address_list("\"A, B\" <a@x>, c@y ,=?UTF-8?Q?J=C3=B6rg?= <j@z>");
    ASSERT_EQ(list.size(), 3u);
    EXPECT_EQ(list[1], "c@y");
    EXPECT_EQ(list[2], "J\xC3\xB6rg <j@z>");
    EXPECT_EQ(address_of(list[0]), "a@x");
}

} // namespace
} // namespace wopbridge::email
