#include "email/smtp_session.hpp"

#include <gtest/gtest.h>

namespace wopbridge::email {
namespace {

class SmtpSessionTest : public ::testing::Test {
  protected:
    smtp_session make(smtp_config cfg = {}) {
        cfg.hostname = "mx.test";
        smtp_hooks hooks;
        hooks.recipient_known = [this](std::string_view a) { return a == "in@bridge.test"; };
        hooks.has_capacity = [this] { return capacity_; };
        hooks.check_auth = [](std::string_view u, std::string_view p) {
            return u == "user" && p == "pw";
        };
        return smtp_session(cfg, hooks);
    }
    static std::string code(const smtp_step& s) { return s.reply.substr(0, 3); }

    // Splits raw bytes into lines the way the I/O layer does (on LF, naming CRLF or bare LF), feeds
    // them, commits every message handed out and returns every reply in order.
    std::string feed(smtp_session& s, std::string_view bytes) {
        std::string replies;
        while (!bytes.empty()) {
            auto nl = bytes.find('\n');
            if (nl == std::string_view::npos) {
                break;
            }
            auto line = bytes.substr(0, nl);
            bytes.remove_prefix(nl + 1);
            auto end = line_end::bare_lf;
            if (!line.empty() && line.back() == '\r') {
                line.remove_suffix(1);
                end = line_end::crlf;
            }
            auto step = s.on_line(line, end);
            if (step.message_ready) {
                ++messages_;
                s.take_envelope();
                step = s.finish_message(smtp_session::commit_result::committed);
            }
            replies += step.reply;
        }
        return replies;
    }
    int messages_ = 0;

    bool capacity_ = true;
};

TEST_F(SmtpSessionTest, HappyPathWithDotUnstuffing) {
    auto s = make();
    EXPECT_EQ(s.greeting().substr(0, 4), "220 ");
    auto ehlo = s.on_line("EHLO client.test");
    EXPECT_NE(ehlo.reply.find("250-PIPELINING"), std::string::npos);
    EXPECT_NE(ehlo.reply.find("SIZE 26214400"), std::string::npos);
    EXPECT_EQ(code(s.on_line("MAIL FROM:<a@b.test> SIZE=100 BODY=8BITMIME")), "250");
    EXPECT_EQ(code(s.on_line("RCPT TO:<In@Bridge.test>")), "250");
    EXPECT_EQ(code(s.on_line("DATA")), "354");
    EXPECT_TRUE(s.in_data());
    EXPECT_TRUE(s.on_line("Subject: x").reply.empty());
    s.on_line("");
    s.on_line("..leading dot");
    auto end = s.on_line(".");
    EXPECT_TRUE(end.message_ready);
    EXPECT_TRUE(end.reply.empty());
    auto env = s.take_envelope();
    EXPECT_EQ(env.mail_from, "a@b.test");
    ASSERT_EQ(env.recipients.size(), 1u);
    EXPECT_EQ(env.recipients[0], "in@bridge.test");
    EXPECT_EQ(env.data, "Subject: x\r\n\r\n.leading dot\r\n");
    EXPECT_EQ(code(s.finish_message(smtp_session::commit_result::committed)), "250");
    EXPECT_EQ(code(s.finish_message(smtp_session::commit_result::temporary_failure)), "451");
    // A new transaction may start right away.
    EXPECT_EQ(code(s.on_line("MAIL FROM:<>")), "250");
    auto quit = s.on_line("QUIT");
    EXPECT_EQ(code(quit), "221");
    EXPECT_TRUE(quit.close);
}

TEST_F(SmtpSessionTest, SequenceErrors) {
    auto s = make();
    EXPECT_EQ(code(s.on_line("MAIL FROM:<a@b>")), "503");
    EXPECT_EQ(code(s.on_line("HELO")), "501");
    EXPECT_EQ(code(s.on_line("HELO c")), "250");
    EXPECT_EQ(code(s.on_line("RCPT TO:<in@bridge.test>")), "503");
    EXPECT_EQ(code(s.on_line("DATA")), "503");
    EXPECT_EQ(code(s.on_line("MAIL FROM:<a@b>")), "250");
    EXPECT_EQ(code(s.on_line("MAIL FROM:<a@b>")), "503");
    EXPECT_EQ(code(s.on_line("DATA")), "554");
    EXPECT_EQ(code(s.on_line("RSET")), "250");
    EXPECT_EQ(code(s.on_line("RCPT TO:<in@bridge.test>")), "503");
    EXPECT_EQ(code(s.on_line("FOO")), "500");
    EXPECT_EQ(code(s.on_line("NOOP")), "250");
    EXPECT_EQ(code(s.on_line("MAIL FROM:a@b")), "501");
}

TEST_F(SmtpSessionTest, UnknownRecipientIs550AndLimitIs452) {
    smtp_config cfg;
    cfg.max_recipients = 1;
    auto s = make(cfg);
    s.on_line("EHLO c");
    s.on_line("MAIL FROM:<a@b>");
    EXPECT_EQ(code(s.on_line("RCPT TO:<nobody@bridge.test>")), "550");
    EXPECT_EQ(code(s.on_line("RCPT TO:<in@bridge.test>")), "250");
    EXPECT_EQ(code(s.on_line("RCPT TO:<in@bridge.test>")), "452");
}

TEST_F(SmtpSessionTest, SizeLimitsGive552) {
    smtp_config cfg;
    cfg.max_message_bytes = 20;
    auto s = make(cfg);
    s.on_line("EHLO c");
    EXPECT_EQ(code(s.on_line("MAIL FROM:<a@b> SIZE=21")), "552");
    EXPECT_EQ(code(s.on_line("MAIL FROM:<a@b>")), "250");
    s.on_line("RCPT TO:<in@bridge.test>");
    s.on_line("DATA");
    s.on_line("0123456789");
    s.on_line("0123456789");
    auto end = s.on_line(".");
    EXPECT_FALSE(end.message_ready);
    EXPECT_EQ(code(end), "552");
    EXPECT_EQ(code(s.on_line("MAIL FROM:<a@b>")), "250"); // the session goes on
    // ... and its next message is judged on its own (the size flag does not stick).
    s.on_line("RCPT TO:<in@bridge.test>");
    s.on_line("DATA");
    s.on_line("short");
    EXPECT_TRUE(s.on_line(".").message_ready);
}

TEST_F(SmtpSessionTest, NoCapacityGives452) {
    auto s = make();
    s.on_line("EHLO c");
    capacity_ = false;
    EXPECT_EQ(code(s.on_line("MAIL FROM:<a@b>")), "452");
    capacity_ = true;
    EXPECT_EQ(code(s.on_line("MAIL FROM:<a@b>")), "250");
}

TEST_F(SmtpSessionTest, AuthPlainRequiredBeforeMail) {
    smtp_config cfg;
    cfg.auth_required = true;
    auto s = make(cfg);
    EXPECT_NE(s.on_line("EHLO c").reply.find("AUTH PLAIN"), std::string::npos);
    EXPECT_EQ(code(s.on_line("MAIL FROM:<a@b>")), "530");
    EXPECT_EQ(code(s.on_line("AUTH PLAIN AHVzZXIAYmFk")), "535"); // \0user\0bad
    EXPECT_EQ(code(s.on_line("AUTH PLAIN")), "334");
    EXPECT_EQ(code(s.on_line("AHVzZXIAcHc=")), "235"); // \0user\0pw
    EXPECT_EQ(code(s.on_line("MAIL FROM:<a@b>")), "250");
}

TEST_F(SmtpSessionTest, StartTlsAdvertisedAndResets) {
    smtp_config cfg;
    cfg.tls_available = true;
    cfg.auth_required = true;
    auto s = make(cfg);
    auto ehlo = s.on_line("EHLO c");
    EXPECT_NE(ehlo.reply.find("STARTTLS"), std::string::npos);
    EXPECT_EQ(ehlo.reply.find("AUTH"), std::string::npos); // no credentials in clear text
    EXPECT_EQ(code(s.on_line("AUTH PLAIN AHVzZXIAcHc=")), "538");
    auto st = s.on_line("STARTTLS");
    EXPECT_EQ(code(st), "220");
    EXPECT_TRUE(st.start_tls);
    s.tls_started();
    EXPECT_EQ(code(s.on_line("MAIL FROM:<a@b>")), "503"); // EHLO again first
    auto again = s.on_line("EHLO c");
    EXPECT_EQ(again.reply.find("STARTTLS"), std::string::npos);
    EXPECT_NE(again.reply.find("AUTH PLAIN"), std::string::npos);
}

TEST_F(SmtpSessionTest, OnlyCrlfDotCrlfEndsDataSoABareLfDotSmugglesNoSecondMessage) {
    const std::string head = "EHLO c\r\nMAIL FROM:<a@b>\r\nRCPT TO:<in@bridge.test>\r\nDATA\r\n";
    const std::string smuggled =
        "MAIL FROM:<evil@b>\r\nRCPT TO:<in@bridge.test>\r\nDATA\r\nSubject: two\r\n\r\nx\r\n";
    for (std::string_view fake_end : {"\n.\n", "\n.\r\n", "\r\n.\n", "\r.\r\n", "\r\n.\r\r\n"}) {
        messages_ = 0;
        auto s = make();
        auto replies = feed(s, head + "Subject: one\r\n\r\nbody" + std::string(fake_end) +
                                   smuggled + ".\r\n" + "NOOP\r\n");
        EXPECT_EQ(messages_, 0) << fake_end;
        // One refusal for the whole stream, at its real CRLF.CRLF; then the session goes on.
        EXPECT_NE(replies.find("354 end data"), std::string::npos);
        EXPECT_NE(replies.find("550 5.6.11"), std::string::npos) << replies;
        EXPECT_EQ(replies.find("250 2.0.0 OK: queued"), std::string::npos) << replies;
        EXPECT_EQ(replies.substr(replies.size() - 14), "250 2.0.0 OK\r\n") << replies;
        EXPECT_FALSE(s.in_data());
    }
    // The same session takes a well-formed message afterwards.
    messages_ = 0;
    auto s = make();
    // "\n.\r\n" is no end either; the CRLF.CRLF after it is.
    EXPECT_NE(feed(s, head + "body\r\n.\n.\r\n.\r\n").find("550 5.6.11"), std::string::npos);
    EXPECT_EQ(messages_, 0);
    auto replies = feed(s, "MAIL FROM:<a@b>\r\nRCPT TO:<in@bridge.test>\r\nDATA\r\nok\r\n.\r\n");
    EXPECT_EQ(messages_, 1) << replies;
    EXPECT_NE(replies.find("250 2.0.0 OK: queued"), std::string::npos) << replies;
}

TEST_F(SmtpSessionTest, BareLfOrCrInACommandRefusesTheCommand) {
    auto s = make();
    EXPECT_EQ(s.on_line("EHLO c", line_end::bare_lf).reply.substr(0, 9), "500 5.5.2");
    EXPECT_EQ(code(s.on_line("EHLO c\rMAIL FROM:<a@b>")), "500");
    EXPECT_EQ(code(s.on_line("EHLO c")), "250");
    EXPECT_EQ(code(s.on_line("MAIL FROM:<a@b>", line_end::bare_lf)), "500");
    EXPECT_EQ(code(s.on_line("RCPT TO:<in@bridge.test>")), "503"); // the MAIL never happened
    EXPECT_EQ(code(s.on_line("MAIL FROM:<a@b>")), "250");
}

TEST_F(SmtpSessionTest, AnOverlongDataLineEndedByABareLfDoesNotEndData) {
    auto s = make();
    feed(s, "EHLO c\r\nMAIL FROM:<a@b>\r\nRCPT TO:<in@bridge.test>\r\nDATA\r\n");
    s.on_overlong_line();
    s.overlong_line_ended(line_end::bare_lf);
    EXPECT_EQ(feed(s, ".\r\n"), ""); // "\n.\r\n": still in DATA
    EXPECT_TRUE(s.in_data());
    EXPECT_EQ(feed(s, ".\r\n").substr(0, 10), "550 5.6.11");
    EXPECT_EQ(messages_, 0);
}

TEST_F(SmtpSessionTest, AuthPlainForAnotherAuthorizationIdentityIsRefused) {
    smtp_config cfg;
    cfg.auth_required = true;
    auto s = make(cfg);
    s.on_line("EHLO c");
    // "admin\0user\0pw": the right password, but asking to act as someone else.
    EXPECT_EQ(code(s.on_line("AUTH PLAIN YWRtaW4AdXNlcgBwdw==")), "535");
    EXPECT_EQ(code(s.on_line("MAIL FROM:<a@b>")), "530");
    // "user\0user\0pw": the authorization identity is the user itself.
    EXPECT_EQ(code(s.on_line("AUTH PLAIN dXNlcgB1c2VyAHB3")), "235");
    EXPECT_EQ(code(s.on_line("MAIL FROM:<a@b>")), "250");
}

TEST_F(SmtpSessionTest, TooManyErrorsCloses) {
    smtp_config cfg;
    cfg.max_errors = 3;
    auto s = make(cfg);
    s.on_line("X");
    s.on_line("X");
    auto last = s.on_line("X");
    EXPECT_TRUE(last.close);
    EXPECT_NE(last.reply.find("421"), std::string::npos);
}

TEST_F(SmtpSessionTest, PathParsing) {
    auto p = parse_smtp_path(" <@relay.test:User@Example.test> SIZE=10 body=8bitmime");
    ASSERT_TRUE(p);
    EXPECT_EQ(p->address, "User@Example.test");
    ASSERT_EQ(p->params.size(), 2u);
    EXPECT_EQ(p->params[1].first, "BODY");
    EXPECT_TRUE(parse_smtp_path("<>"));
    EXPECT_FALSE(parse_smtp_path("<no-at-sign>"));
    EXPECT_FALSE(parse_smtp_path("<a b@c>"));
    EXPECT_FALSE(parse_smtp_path("a@b"));
}

} // namespace
} // namespace wopbridge::email
