#include "email/email_event.hpp"
#include "email/inbound_parse.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

namespace wopbridge::email {
namespace {

class InboundParseTest : public ::testing::Test {};

TEST_F(InboundParseTest, SignatureVerdicts) {
    const std::string key = "key-0123456789";
    auto sig = sign_inbound(key, "1700000000", "tok123");
    EXPECT_EQ(sig.size(), 64u);
    EXPECT_EQ(verify_inbound_signature(key, "1700000000", "tok123", sig, 1700000100, 300),
              parse_verdict::valid);
    EXPECT_EQ(verify_inbound_signature(key, "1700000000", "tok124", sig, 1700000100, 300),
              parse_verdict::mismatch);
    EXPECT_EQ(verify_inbound_signature("other", "1700000000", "tok123", sig, 1700000100, 300),
              parse_verdict::mismatch);
    EXPECT_EQ(verify_inbound_signature(key, "1700000000", "tok123", sig, 1700001000, 300),
              parse_verdict::stale_timestamp);
    EXPECT_EQ(verify_inbound_signature(key, "", "tok123", sig, 0, 300), parse_verdict::missing);
    EXPECT_EQ(verify_inbound_signature(key, "12x", "tok123", sig, 0, 300),
              parse_verdict::malformed);
}

TEST_F(InboundParseTest, ReplayCacheReservesReleasesAndExpires) {
    token_replay_cache cache(3, 600);
    EXPECT_TRUE(cache.reserve("a", 1000));
    EXPECT_FALSE(cache.reserve("a", 1001));
    cache.release("a");
    EXPECT_TRUE(cache.reserve("a", 1002));
    EXPECT_TRUE(cache.reserve("b", 1002));
    EXPECT_FALSE(cache.reserve("b", 1602));
    EXPECT_TRUE(cache.reserve("b", 1603)); // past the TTL
}

TEST_F(InboundParseTest, ReplayCacheIsBounded) {
    token_replay_cache cache(2, 600);
    EXPECT_TRUE(cache.reserve("a", 1));
    EXPECT_TRUE(cache.reserve("b", 1));
    EXPECT_TRUE(cache.reserve("c", 1)); // evicts a
    EXPECT_TRUE(cache.reserve("a", 1));
    EXPECT_FALSE(cache.reserve("c", 1));
}

TEST_F(InboundParseTest, FieldMapping) {
    auto part = [](std::string name, std::string body, std::string filename = "") {
        http::multipart_part p;
        std::string cd = "form-data; name=\"" + name + "\"";
        if (!filename.empty()) {
            cd += "; filename=\"" + filename + "\"";
            p.headers.emplace_back("content-type", "text/csv");
        }
        p.headers.insert(p.headers.begin(), {"content-disposition", cd});
        p.body = std::move(body);
        return p;
    };
    auto m = inbound_mail_of({part("sender", "bounce@x"), part("recipient", "a@b, c@d"),
                              part("subject", "Hi"), part("body-plain", "text"),
                              part("Message-Id", "<id@x>"), part("attachment-1", "1,2", "a.csv")});
    ASSERT_TRUE(m);
    EXPECT_EQ(m->from, "bounce@x");
    EXPECT_EQ(m->to, (std::vector<std::string>{"a@b", "c@d"}));
    EXPECT_EQ(m->message_id, "<id@x>");
    EXPECT_FALSE(m->html);
    ASSERT_EQ(m->files.size(), 1u);
    EXPECT_EQ(m->files[0].media_type, "text/csv");
}

TEST_F(InboundParseTest, ContentJsonIsClosedEmailEvent) {
    email_content c;
    c.from = "a@b";
    c.to = {"c@d"};
    c.subject = "s";
    c.text = "t";
    c.attachments.push_back({"att_1", "x.pdf", "application/pdf", 3});
    auto v = boost::json::parse(email_content_json(c));
    const auto& e = v.at("email").as_object();
    EXPECT_EQ(e.size(), 5u); // no html key when there is no html
    EXPECT_EQ(e.at("attachments").at(0).at("ref"), "att_1");
    EXPECT_EQ(email_event_id("<m@x>", "raw"), "msgid:<m@x>");
    EXPECT_EQ(email_event_id("", "raw").substr(0, 5), "hash:");
    EXPECT_NE(email_event_id("", "raw"), email_event_id("", "raw2"));
}

} // namespace
} // namespace wopbridge::email
