// SMTP smuggling and AUTH PLAIN proxy identities against the email connector of the real
// `wopbridge serve`, with exact bytes on a raw socket: only CRLF.CRLF ends DATA, so a message that
// hides "\n.\n" + a second MAIL transaction is refused whole (550 5.6.11) and starts nothing; a
// bare LF in a command refuses the command; an authzid other than the authcid is refused (535).
#include "support/raw_socket.hpp"
#include "support/serve_probe.hpp"
#include "support/serve_process.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <string>

namespace wopbridge::testing::smtp_smuggling_test {
namespace {

using namespace std::chrono_literals;

constexpr const char* sub = "support-mail";
// "\0mailer\0s3cret-pw" and "admin\0mailer\0s3cret-pw" in base64.
constexpr const char* auth_ok = "AG1haWxlcgBzM2NyZXQtcHc=";
constexpr const char* auth_as_admin = "YWRtaW4AbWFpbGVyAHMzY3JldC1wdw==";

class SmtpSmugglingTest : public ::testing::Test {
  protected:
    void SetUp() override {
        std::ofstream(dir_.file("wopbridge.yaml"))
            << probe_config_prelude(dir_.path().string(), "http://127.0.0.1:8080")
            << "runs: {local: {workflows: [{id: triage}]}}\n"
               "connectors:\n"
               "  - name: email\n"
               "    module: email\n"
               "    settings: {listen: \"127.0.0.1:0\", hostname: mx.example.test,\n"
               "               auth: {username: mailer, password: s3cret-pw}}\n"
               "subscriptions:\n"
               "  - {id: support-mail, source: email, connector: email, workflowId: triage,\n"
               "     settings: {addresses: [support@example.test]}}\n";
        ASSERT_TRUE(serve_.start(dir_.file("wopbridge.yaml"), dir_.file("serve.log")))
            << serve_.error;
        probe_ = std::make_unique<serve_probe>(serve_.url(), "hk_probe");
        const std::string log = read_text_file(dir_.file("serve.log"));
        auto at = log.find("smtp.listening");
        ASSERT_NE(at, std::string::npos) << log;
        at = log.find(':', log.find("port", at));
        smtp_port_ = static_cast<std::uint16_t>(std::stoi(log.substr(at + 1)));
        ASSERT_GT(smtp_port_, 0);
    }

    void TearDown() override {
        if (probe_) {
            serve_.signal(SIGTERM);
            EXPECT_EQ(serve_.wait_exit(), 0) << read_text_file(dir_.file("serve.log"));
        }
    }

    // Greeted, EHLO'd and authenticated; returns the session's replies so far.
    void open(raw_connection& c) {
        ASSERT_TRUE(c.connected());
        ASSERT_TRUE(c.read_until("220 ", 1, 10s)) << c.received();
        ASSERT_TRUE(c.send(std::string("EHLO client.test\r\nAUTH PLAIN ") + auth_ok + "\r\n"));
        ASSERT_TRUE(c.read_until("235 ", 1, 10s)) << c.received();
    }

    static std::string transaction(const std::string& subject) {
        return "MAIL FROM:<ada@example.com>\r\nRCPT TO:<support@example.test>\r\nDATA\r\n"
               "From: ada@example.com\r\nTo: support@example.test\r\nSubject: " +
               subject + "\r\nMessage-ID: <" + subject + "@example.com>\r\n\r\n";
    }

    temp_dir dir_;
    serve_process serve_;
    std::unique_ptr<serve_probe> probe_;
    std::uint16_t smtp_port_ = 0;
};

TEST_F(SmtpSmugglingTest, ABareLfDotInDataSmugglesNoSecondMessageAndStartsNothing) {
    int n = 0;
    for (std::string fake_end : {"\n.\n", "\n.\r\n", "\r\n.\n", "\r.\r\n"}) {
        raw_connection c(smtp_port_);
        open(c);
        // What a lenient server reads as two messages: the first ending at the fake end, the
        // second a whole MAIL transaction of the attacker's choosing.
        ASSERT_TRUE(c.send(transaction("outer-" + std::to_string(n)) + "first" + fake_end +
                           transaction("smuggled-" + std::to_string(n)) + "second\r\n.\r\n" +
                           "QUIT\r\n"));
        EXPECT_TRUE(c.read_until_closed(15s)) << c.received();
        const auto& r = c.received();
        EXPECT_EQ(count_of(r, "354 "), 1u) << r;
        EXPECT_EQ(count_of(r, "550 5.6.11"), 1u) << r;
        EXPECT_EQ(count_of(r, "250 2.0.0 OK: queued"), 0u) << r;
        EXPECT_EQ(count_of(r, "221 "), 1u) << r;
        ++n;
    }
    // A bare LF ending a command refuses it; the transaction never opens.
    {
        raw_connection c(smtp_port_);
        open(c);
        ASSERT_TRUE(c.send("MAIL FROM:<ada@example.com>\nRCPT TO:<support@example.test>\r\n"
                           "QUIT\r\n"));
        EXPECT_TRUE(c.read_until_closed(15s)) << c.received();
        EXPECT_EQ(count_of(c.received(), "500 5.5.2"), 1u) << c.received();
        EXPECT_EQ(count_of(c.received(), "503 "), 1u) << c.received();
    }
    EXPECT_TRUE(probe_->nothing_started(sub, 0));

    // Control: the same session bytes with CRLF everywhere are one accepted message.
    raw_connection c(smtp_port_);
    open(c);
    ASSERT_TRUE(c.send(transaction("control") + "first\r\n.\r\nQUIT\r\n"));
    EXPECT_TRUE(c.read_until_closed(15s)) << c.received();
    EXPECT_EQ(count_of(c.received(), "250 2.0.0 OK: queued"), 1u) << c.received();
    EXPECT_TRUE(probe_->runs_started(sub, 1));
}

TEST_F(SmtpSmugglingTest, AuthPlainAskingForAnotherIdentityIsRefused) {
    raw_connection c(smtp_port_);
    ASSERT_TRUE(c.connected());
    ASSERT_TRUE(c.read_until("220 ", 1, 10s));
    // The right authcid and password, asking to act as "admin".
    ASSERT_TRUE(c.send(std::string("EHLO client.test\r\nAUTH PLAIN ") + auth_as_admin +
                       "\r\nMAIL FROM:<ada@example.com>\r\n"));
    ASSERT_TRUE(c.read_until("530 ", 1, 10s)) << c.received();
    EXPECT_EQ(count_of(c.received(), "535 5.7.8"), 1u) << c.received();
    EXPECT_EQ(count_of(c.received(), "235 "), 0u) << c.received();
    // The same credentials without a foreign authzid pass on the same connection.
    ASSERT_TRUE(c.send(std::string("AUTH PLAIN ") + auth_ok + "\r\nQUIT\r\n"));
    EXPECT_TRUE(c.read_until_closed(10s)) << c.received();
    EXPECT_EQ(count_of(c.received(), "235 "), 1u) << c.received();
}

} // namespace
} // namespace wopbridge::testing::smtp_smuggling_test
