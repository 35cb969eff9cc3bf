#include "forms/form_logic.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

namespace wopbridge::forms {
namespace {

class FormLogicTest : public ::testing::Test {};

TEST_F(FormLogicTest, UrlencodedDecodesPlusAndEscapes) {
    auto f = parse_urlencoded("name=Ada+Lovelace&topic=a%26b&topic=c&empty=&flag");
    ASSERT_TRUE(f);
    ASSERT_EQ(f->size(), 5u);
    EXPECT_EQ((*f)[0].second, "Ada Lovelace");
    EXPECT_EQ((*f)[1].second, "a&b");
    EXPECT_EQ((*f)[3].second, "");
    EXPECT_EQ((*f)[4].first, "flag");
    EXPECT_FALSE(parse_urlencoded("a=%zz"));
    EXPECT_FALSE(parse_urlencoded("a=%4"));
    EXPECT_TRUE(parse_urlencoded("")->empty());
}

TEST_F(FormLogicTest, OriginNormalization) {
    EXPECT_EQ(normalize_origin("HTTPS://Example.COM:443").value_or(""), "https://example.com");
    EXPECT_EQ(normalize_origin("http://example.com:8080/x?y").value_or(""),
              "http://example.com:8080");
    EXPECT_EQ(normalize_origin("http://[::1]:80/").value_or(""), "http://[::1]");
    EXPECT_FALSE(normalize_origin("null"));
    EXPECT_FALSE(normalize_origin("ftp://example.com"));
    EXPECT_FALSE(normalize_origin("https://user@example.com"));
    EXPECT_FALSE(normalize_origin("https://example.com:99999"));
}

TEST_F(FormLogicTest, AllowedOriginEntriesAreExactlySchemeHostAndPort) {
    EXPECT_EQ(parse_allowed_origin("HTTPS://Example.COM:443").value_or(""), "https://example.com");
    EXPECT_EQ(parse_allowed_origin("http://localhost:8000").value_or(""), "http://localhost:8000");
    EXPECT_EQ(parse_allowed_origin("https://xn--bcher-kva.example").value_or(""),
              "https://xn--bcher-kva.example");
    EXPECT_EQ(parse_allowed_origin("http://[::1]:8080").value_or(""), "http://[::1]:8080");
    EXPECT_EQ(parse_allowed_origin("http://127.0.0.1:3000").value_or(""), "http://127.0.0.1:3000");
    for (const char* bad : {
             "javascript:alert(1)",          // not http(s), no authority
             "javascript://alert(1)",
             "data:text/html,x",
             "null",
             "ftp://example.com",
             "https://example.com/",         // a path, even an empty one
             "https://example.com/contact",
             "https://example.com?x=1",      // a query or fragment
             "https://example.com#top",
             "https://user@example.com",     // userinfo
             "https://user:pw@example.com",
             "https://example.com\\@evil.test",
             "https://*.example.com",        // no wildcards: it would never match
             "https://exa mple.com",
             "https://example..com",
             "https://example.com.",
             "https://example.com:",         // an empty, non-numeric or out-of-range port
             "https://example.com:+80",
             "https://example.com:99999",
             "https://example.com:0",
             "https://[::1",
             "https://[not-an-address]",
             "https://[::1]x",
             "https://",
         }) {
        EXPECT_FALSE(parse_allowed_origin(bad)) << bad;
    }
}

TEST_F(FormLogicTest, OriginAllowList) {
    std::vector<std::string> allowed{"https://example.com", "http://localhost:8000"};
    EXPECT_TRUE(origin_allowed("https://example.com", std::nullopt, allowed));
    EXPECT_TRUE(origin_allowed(std::nullopt, "http://localhost:8000/contact.html", allowed));
    EXPECT_FALSE(origin_allowed("https://evil.example", "https://example.com/", allowed));
    EXPECT_FALSE(origin_allowed("https://example.com.evil.test", std::nullopt, allowed));
    EXPECT_FALSE(origin_allowed("http://example.com", std::nullopt, allowed));
    EXPECT_FALSE(origin_allowed("null", std::nullopt, allowed));
    EXPECT_FALSE(origin_allowed(std::nullopt, std::nullopt, allowed));
}

TEST_F(FormLogicTest, TokenRoundTripAndRefusals) {
    const std::string secret = "0123456789abcdef-secret";
    auto token = issue_form_token(secret, "sub-1", 1000, "00ff");
    EXPECT_EQ(verify_form_token(secret, "sub-1", token, 999), token_verdict::valid);
    EXPECT_EQ(verify_form_token(secret, "sub-1", token, 1000), token_verdict::valid);
    EXPECT_EQ(verify_form_token(secret, "sub-1", token, 1001), token_verdict::expired);
    EXPECT_EQ(verify_form_token(secret, "sub-2", token, 999), token_verdict::mismatch);
    EXPECT_EQ(verify_form_token("another-secret-1234", "sub-1", token, 999),
              token_verdict::mismatch);
    auto forged = token;
    forged[0] = '9'; // a later expiry, same mac
    EXPECT_EQ(verify_form_token(secret, "sub-1", forged, 999), token_verdict::mismatch);
    EXPECT_EQ(verify_form_token(secret, "sub-1", std::nullopt, 999), token_verdict::missing);
    EXPECT_EQ(verify_form_token(secret, "sub-1", "a.b", 999), token_verdict::malformed);
    EXPECT_EQ(verify_form_token(secret, "sub-1", "1.zz.00", 999), token_verdict::malformed);
}

TEST_F(FormLogicTest, SubmissionIdWinsOverContentHash) {
    http::param_list fields{{"email", "a@example.com"}, {"sid", "abc-1"}};
    EXPECT_EQ(provider_event_id("sub-1", fields, {}, "sid", 5000, 10), "submission:abc-1");
    auto h = provider_event_id("sub-1", fields, {}, "missing", 5000, 10);
    EXPECT_EQ(h.rfind("hash:", 0), 0u);
    EXPECT_EQ(h.size(), 5u + 64u);
}

TEST_F(FormLogicTest, ContentHashIsOrderInsensitiveAndWindowed) {
    http::param_list a{{"x", "1"}, {"y", "2"}};
    http::param_list b{{"y", "2"}, {"x", "1"}};
    EXPECT_EQ(provider_event_id("s", a, {}, std::nullopt, 10'000, 10),
              provider_event_id("s", b, {}, std::nullopt, 19'999, 10));
    EXPECT_NE(provider_event_id("s", a, {}, std::nullopt, 10'000, 10),
              provider_event_id("s", a, {}, std::nullopt, 20'000, 10));
    EXPECT_NE(provider_event_id("s", a, {}, std::nullopt, 10'000, 10),
              provider_event_id("t", a, {}, std::nullopt, 10'000, 10));
    http::param_list c{{"x", "12"}};
    http::param_list d{{"x1", "2"}};
    EXPECT_NE(provider_event_id("s", c, {}, std::nullopt, 0, 10),
              provider_event_id("s", d, {}, std::nullopt, 0, 10));
    stored_file f1{"att_1", "a.txt", "text/plain", 1, "aa"};
    stored_file f2{"att_2", "a.txt", "text/plain", 1, "bb"};
    EXPECT_NE(provider_event_id("s", a, {f1}, std::nullopt, 0, 10),
              provider_event_id("s", a, {f2}, std::nullopt, 0, 10));
}

TEST_F(FormLogicTest, ContentJsonGroupsRepeatedFields) {
    http::param_list fields{{"topic", "a"}, {"name", "Ada"}, {"topic", "b"}};
    stored_file f{"att_00", "cv.pdf", "application/pdf", 4, "ignored"};
    auto v = boost::json::parse(form_content_json(fields, {f}));
    const auto& form = v.at("form").as_object();
    EXPECT_EQ(form.at("fields").at("name"), "Ada");
    EXPECT_EQ(form.at("fields").at("topic"), (boost::json::array{"a", "b"}));
    const auto& file = form.at("files").at(0).as_object();
    EXPECT_EQ(file.at("ref"), "att_00");
    EXPECT_EQ(file.at("filename"), "cv.pdf");
    EXPECT_EQ(file.at("mediaType"), "application/pdf");
    EXPECT_EQ(file.at("bytes"), 4);
    EXPECT_EQ(file.size(), 4u); // AttachmentRef is closed: no hash leaks into the event
}

TEST_F(FormLogicTest, AcceptNegotiationAndEnvelope) {
    EXPECT_TRUE(wants_json("application/json"));
    EXPECT_TRUE(wants_json("text/html, Application/JSON;q=0.5"));
    EXPECT_FALSE(wants_json("text/html,*/*"));
    EXPECT_FALSE(wants_json(std::nullopt));
    auto env = boost::json::parse(error_envelope("overloaded", "busy", 5)).as_object();
    EXPECT_EQ(env.size(), 3u);
    EXPECT_EQ(env.at("details").at("retryAfter"), 5);
    EXPECT_EQ(boost::json::parse(error_envelope("forbidden", "no")).as_object().size(), 2u);
}

} // namespace
} // namespace wopbridge::forms
