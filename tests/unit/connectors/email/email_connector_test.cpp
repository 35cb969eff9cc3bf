// Module-level tests: the built email.so driven through the connector harness, with real SMTP
// sessions from Python's smtplib (tests/unit/connectors/email/smtp_client.py) over loopback.
#include "email/inbound_parse.hpp"
#include "support/connector_harness.hpp"
#include "support/temp_dir.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>

namespace wopbridge::email {
namespace {

using wopbridge::testing::connector_harness;
using wopbridge::testing::http_request_spec;
using wopbridge::testing::subscription_spec;

constexpr const char* signing_key = "mailgun-signing-key-0123456789";

// A raw loopback SMTP client for what smtplib hides (pipelined writes, the shutdown reply).
class raw_client {
  public:
    explicit raw_client(int port) {
        fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(static_cast<std::uint16_t>(port));
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    }
    ~raw_client() { ::close(fd_); }
    bool connected() const { return connected_; }
    void write(const std::string& data) {
        ASSERT_EQ(::send(fd_, data.data(), data.size(), MSG_NOSIGNAL),
                  static_cast<ssize_t>(data.size()));
    }
    // Reads until `n` final reply lines ("ddd " lines) arrived or the deadline passed.
    std::vector<std::string> replies(std::size_t n,
                                     std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
        auto deadline = std::chrono::steady_clock::now() + timeout;
        while (final_lines_.size() < n && std::chrono::steady_clock::now() < deadline) {
            pollfd p{fd_, POLLIN, 0};
            if (::poll(&p, 1, 50) <= 0) {
                continue;
            }
            char buf[4096];
            auto got = ::recv(fd_, buf, sizeof buf, 0);
            if (got <= 0) {
                break;
            }
            pending_.append(buf, static_cast<std::size_t>(got));
            std::size_t nl;
            while ((nl = pending_.find("\r\n")) != std::string::npos) {
                auto line = pending_.substr(0, nl);
                pending_.erase(0, nl + 2);
                if (line.size() >= 4 && line[3] == ' ') {
                    final_lines_.push_back(line.substr(0, 3));
                }
            }
        }
        auto out = final_lines_;
        final_lines_.clear();
        return out;
    }

  private:
    int fd_ = -1;
    bool connected_ = false;
    std::string pending_;
    std::vector<std::string> final_lines_;
};

class EmailConnectorTest : public ::testing::Test {
  protected:
    void SetUp() override {
        static const bool have_python =
            std::system("python3 -c 'import smtplib' >/dev/null 2>&1") == 0;
        if (!have_python) {
            GTEST_SKIP() << "python3 with smtplib is not available";
        }
    }

    void bring_up(const std::string& extra_config = "",
                  const std::string& addresses = R"(["in@bridge.test"])") {
        std::string config = R"({"listen":"127.0.0.1:0","hostname":"mx.bridge.test",)"
                             R"("webhookSigningKey":")" +
                             std::string(signing_key) + "\"" + extra_config + "}";
        subscription_spec sub;
        sub.id = "sub-1";
        sub.source = "email";
        sub.settings_json = R"({"addresses":)" + addresses + "}";
        std::string err;
        ASSERT_EQ(h_.bring_up(config, sub, &err), WB_OK) << err;
        port_ = find_port();
        ASSERT_GT(port_, 0);
    }

    int find_port() {
        static const std::regex re(R"re("event":"smtp.listening","port":(\d+))re");
        for (const auto& line : h_.log_lines()) {
            std::smatch m;
            if (std::regex_search(line, m, re)) {
                return std::stoi(m[1]);
            }
        }
        return 0;
    }

    // Runs one smtplib session; returns its JSON summary.
    boost::json::object smtp(const std::string& message,
                             const std::string& rcpts = "in@bridge.test", bool size_param = false,
                             std::string options = {}) {
        if (size_param) {
            options = options.empty() ? "size" : options + ",size";
        }
        auto file = dir_.path() / ("msg" + std::to_string(counter_++) + ".eml");
        {
            std::ofstream out(file, std::ios::binary);
            out << message;
        }
        std::string cmd = "python3 '" + std::string(WOPBRIDGE_SOURCE_DIR) +
                          "/tests/unit/connectors/email/smtp_client.py' " + std::to_string(port_) +
                          " sender@example.com " + rcpts + " '" + file.string() + "'" +
                          (options.empty() ? "" : " '" + options + "'");
        std::string output;
        FILE* p = ::popen(cmd.c_str(), "r");
        if (p == nullptr) {
            ADD_FAILURE() << "popen failed";
            return {};
        }
        std::array<char, 4096> buf{};
        while (auto n = std::fread(buf.data(), 1, buf.size(), p)) {
            output.append(buf.data(), n);
        }
        int rc = ::pclose(p);
        EXPECT_EQ(rc, 0) << output;
        boost::system::error_code ec;
        auto v = boost::json::parse(output, ec);
        if (ec || !v.is_object()) {
            ADD_FAILURE() << "smtp client output: " << output;
            return {};
        }
        return v.as_object();
    }

    static std::string plain_message(const std::string& message_id = "<m1@example.com>") {
        std::string m = "From: Sender <sender@example.com>\r\n"
                        "To: in@bridge.test\r\n"
                        "Subject: =?UTF-8?Q?Gr=C3=BC=C3=9Fe?=\r\n";
        if (!message_id.empty()) {
            m += "Message-ID: " + message_id + "\r\n";
        }
        m += "\r\nHello from smtplib\r\n.starts with a dot\r\n";
        return m;
    }

    http_request_spec webhook(const std::string& token, bool good_signature = true,
                              std::string timestamp = {}) {
        if (timestamp.empty()) {
            timestamp = std::to_string(h_.now_ms() / 1000);
        }
        auto signature = sign_inbound(good_signature ? signing_key : "wrong-key", timestamp, token);
        auto field = [](const std::string& name, const std::string& value) {
            return "--XX\r\nContent-Disposition: form-data; name=\"" + name + "\"\r\n\r\n" + value +
                   "\r\n";
        };
        http_request_spec r;
        r.headers = {{"content-type", "multipart/form-data; boundary=XX"}};
        r.body = field("timestamp", timestamp) + field("token", token) +
                 field("signature", signature) + field("sender", "a@example.com") +
                 field("recipient", "in@bridge.test") + field("subject", "Hook") +
                 field("body-plain", "hello") + field("Message-Id", "<hook-1@example.com>") +
                 "--XX\r\nContent-Disposition: form-data; name=\"attachment-1\"; "
                 "filename=\"a.txt\"\r\nContent-Type: text/plain\r\n\r\nattached\r\n--XX--\r\n";
        return r;
    }

    wopbridge::testing::temp_dir dir_;
    connector_harness h_{"email"};
    int port_ = 0;
    int counter_ = 0;
};

TEST_F(EmailConnectorTest, DescriptorIsWellFormed) {
    EXPECT_EQ(h_.descriptor_problem(), "");
    EXPECT_NE(h_.descriptor().capabilities & WB_CAP_LISTENER, 0u);
    EXPECT_NE(h_.descriptor().capabilities & WB_CAP_HTTP_INGEST, 0u);
    EXPECT_EQ(h_.validate(R"({"listen":"nope"})").first, WB_ERR_INVALID);
    EXPECT_EQ(h_.validate(R"({"tls":{"certFile":"x"}})").first, WB_ERR_INVALID);
}

TEST_F(EmailConnectorTest, PlainMessageOverSmtpSubmitsOneEvent) {
    bring_up();
    auto r = smtp(plain_message());
    EXPECT_EQ(r["mail"], 250);
    EXPECT_EQ(r["data"], 250);
    auto submits = h_.submits();
    ASSERT_EQ(submits.size(), 1u);
    EXPECT_EQ(submits[0].subscription_id, "sub-1");
    EXPECT_EQ(submits[0].provider_event_id, "msgid:<m1@example.com>");
    auto email = boost::json::parse(submits[0].content_json).at("email").as_object();
    EXPECT_EQ(email.at("from"), "Sender <sender@example.com>");
    EXPECT_EQ(email.at("to"), (boost::json::array{"in@bridge.test"}));
    EXPECT_EQ(email.at("subject"), "Gr\xC3\xBC\xC3\x9F"
                                   "e");
    EXPECT_EQ(email.at("text"), "Hello from smtplib\r\n.starts with a dot\r\n");
    EXPECT_FALSE(email.contains("html"));
    EXPECT_TRUE(h_.violations().empty());
}

TEST_F(EmailConnectorTest, MultipartWithAttachmentStoresIt) {
    bring_up();
    std::string m = "From: a@example.com\r\nTo: in@bridge.test\r\nSubject: files\r\n"
                    "Message-ID: <att@example.com>\r\nMIME-Version: 1.0\r\n"
                    "Content-Type: multipart/mixed; boundary=\"outer\"\r\n\r\n"
                    "--outer\r\nContent-Type: multipart/alternative; boundary=\"alt\"\r\n\r\n"
                    "--alt\r\nContent-Type: text/plain; charset=iso-8859-1\r\n"
                    "Content-Transfer-Encoding: quoted-printable\r\n\r\ncaf=E9\r\n"
                    "--alt\r\nContent-Type: text/html\r\n\r\n<p>cafe</p>\r\n--alt--\r\n"
                    "--outer\r\nContent-Type: application/octet-stream\r\n"
                    "Content-Disposition: attachment; filename=\"data.bin\"\r\n"
                    "Content-Transfer-Encoding: base64\r\n\r\nAAECAwQ=\r\n--outer--\r\n";
    auto r = smtp(m);
    EXPECT_EQ(r["data"], 250);
    auto submits = h_.submits();
    ASSERT_EQ(submits.size(), 1u);
    auto email = boost::json::parse(submits[0].content_json).at("email").as_object();
    EXPECT_EQ(email.at("text"), "caf\xC3\xA9");
    EXPECT_EQ(email.at("html"), "<p>cafe</p>");
    const auto& atts = email.at("attachments").as_array();
    ASSERT_EQ(atts.size(), 1u);
    EXPECT_EQ(atts[0].at("filename"), "data.bin");
    EXPECT_EQ(atts[0].at("bytes"), 5);
    auto bytes = h_.attachment(std::string(atts[0].at("ref").as_string()));
    ASSERT_TRUE(bytes);
    EXPECT_EQ(*bytes, std::string("\0\1\2\3\4", 5));
}

TEST_F(EmailConnectorTest, UnknownRecipientIs550AndSubmitsNothing) {
    bring_up();
    auto r = smtp(plain_message(), "nobody@bridge.test");
    EXPECT_EQ(r["rcpt"], (boost::json::array{550}));
    EXPECT_FALSE(r.contains("data"));
    EXPECT_TRUE(h_.submits().empty());
}

TEST_F(EmailConnectorTest, SizeLimitIs552AtMailAndInData) {
    bring_up(R"(,"maxMessageBytes":2048)");
    std::string big = plain_message() + std::string(4000, 'x') + "\r\n";
    EXPECT_EQ(smtp(big, "in@bridge.test", true)["mail"], 552);
    EXPECT_EQ(smtp(big, "in@bridge.test", false)["data"], 552);
    EXPECT_TRUE(h_.submits().empty());
}

TEST_F(EmailConnectorTest, DuplicateMessageIdIsAcknowledged) {
    bring_up();
    EXPECT_EQ(smtp(plain_message("<dup@example.com>"))["data"], 250);
    EXPECT_EQ(smtp(plain_message("<dup@example.com>"))["data"], 250);
    auto submits = h_.submits();
    ASSERT_EQ(submits.size(), 2u);
    EXPECT_EQ(submits[1].outcome, WB_SUBMIT_DUPLICATE);
    EXPECT_EQ(submits[1].run_id, submits[0].run_id);
}

TEST_F(EmailConnectorTest, MissingMessageIdFallsBackToContentHash) {
    bring_up();
    EXPECT_EQ(smtp(plain_message(""))["data"], 250);
    auto submits = h_.submits();
    ASSERT_EQ(submits.size(), 1u);
    EXPECT_EQ(submits[0].provider_event_id.rfind("hash:", 0), 0u);
}

TEST_F(EmailConnectorTest, RefusedCommitIs451SoTheSenderRetries) {
    bring_up();
    h_.set_submit_mode(wopbridge::testing::submit_mode::refuse, "overloaded", 3);
    EXPECT_EQ(smtp(plain_message())["data"], 451);
    h_.set_submit_mode(wopbridge::testing::submit_mode::accept);
    EXPECT_EQ(smtp(plain_message())["data"], 250);
    auto submits = h_.submits();
    ASSERT_EQ(submits.size(), 2u);
    EXPECT_EQ(submits[1].outcome, WB_SUBMIT_ACCEPTED);
}

TEST_F(EmailConnectorTest, NoCapacityIs452) {
    bring_up();
    h_.set_capacity(false);
    EXPECT_EQ(smtp(plain_message())["mail"], 452);
    EXPECT_TRUE(h_.submits().empty());
}

TEST_F(EmailConnectorTest, OneEventPerMatchedSubscription) {
    bring_up("", R"(["in@bridge.test","alias@bridge.test"])");
    subscription_spec second;
    second.id = "sub-2";
    second.source = "email";
    second.settings_json = R"({"addresses":["other@bridge.test"]})";
    ASSERT_EQ(h_.subscribe(second), WB_OK);
    auto r = smtp(plain_message(), "in@bridge.test,alias@bridge.test,other@bridge.test");
    EXPECT_EQ(r["data"], 250);
    auto submits = h_.submits();
    ASSERT_EQ(submits.size(), 2u);
    EXPECT_NE(submits[0].subscription_id, submits[1].subscription_id);
}

TEST_F(EmailConnectorTest, WebhookWithValidSignatureSubmits) {
    bring_up();
    auto reply = h_.send(webhook("token-aaaaaaaaaaaaaaaa"));
    EXPECT_EQ(reply.status, 200) << reply.body;
    EXPECT_EQ(boost::json::parse(reply.body).at("outcome"), "accepted");
    auto submits = h_.submits();
    ASSERT_EQ(submits.size(), 1u);
    EXPECT_EQ(submits[0].provider_event_id, "msgid:<hook-1@example.com>");
    auto email = boost::json::parse(submits[0].content_json).at("email").as_object();
    EXPECT_EQ(email.at("from"), "a@example.com");
    EXPECT_EQ(email.at("subject"), "Hook");
    EXPECT_EQ(email.at("attachments").as_array().size(), 1u);
    EXPECT_TRUE(h_.violations().empty());
}

TEST_F(EmailConnectorTest, WebhookBadSignatureOrStaleIsRefused) {
    bring_up();
    auto reply = h_.send(webhook("token-bbbbbbbbbbbbbbbb", false));
    EXPECT_EQ(reply.status, 401);
    EXPECT_EQ(boost::json::parse(reply.body).at("error"), "signature_invalid");
    auto stale = std::to_string(h_.now_ms() / 1000 - 3600);
    EXPECT_EQ(h_.send(webhook("token-cccccccccccccccc", true, stale)).status, 401);
    EXPECT_TRUE(h_.submits().empty());
}

TEST_F(EmailConnectorTest, WebhookReplayedTokenIsRefused) {
    bring_up();
    EXPECT_EQ(h_.send(webhook("token-dddddddddddddddd")).status, 200);
    EXPECT_EQ(h_.send(webhook("token-dddddddddddddddd")).status, 401);
    EXPECT_EQ(h_.submits().size(), 1u);
}

TEST_F(EmailConnectorTest, WebhookRefusedCommitReleasesTheToken) {
    bring_up();
    h_.set_submit_mode(wopbridge::testing::submit_mode::refuse, "overloaded", 2);
    EXPECT_EQ(h_.send(webhook("token-eeeeeeeeeeeeeeee")).status, 503);
    h_.set_submit_mode(wopbridge::testing::submit_mode::accept);
    EXPECT_EQ(h_.send(webhook("token-eeeeeeeeeeeeeeee")).status, 200);
}

TEST_F(EmailConnectorTest, AuthRequiredBeforeMail) {
    bring_up(R"(,"auth":{"username":"relay","password":"smtp-password-123"})");
    EXPECT_EQ(smtp(plain_message())["mail"], 530);
    auto bad = smtp(plain_message(), "in@bridge.test", false, "auth=relay:wrong");
    EXPECT_EQ(bad["auth"], 535);
    auto good = smtp(plain_message(), "in@bridge.test", false, "auth=relay:smtp-password-123");
    EXPECT_EQ(good["auth"], 235);
    EXPECT_EQ(good["data"], 250);
    auto submits = h_.submits();
    ASSERT_EQ(submits.size(), 1u);
    EXPECT_TRUE(submits[0].verified);
}

TEST_F(EmailConnectorTest, StartTlsThenAuth) {
    auto cert = dir_.path() / "cert.pem";
    auto key = dir_.path() / "key.pem";
    std::string gen = "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost "
                      "-keyout '" +
                      key.string() + "' -out '" + cert.string() + "' >/dev/null 2>&1";
    if (std::system(gen.c_str()) != 0) {
        GTEST_SKIP() << "openssl CLI not available to make a test certificate";
    }
    bring_up(R"(,"auth":{"username":"relay","password":"pw-0123456789"},"tls":{"certFile":")" +
             cert.string() + R"(","keyFile":")" + key.string() + R"("})");
    auto r = smtp(plain_message(), "in@bridge.test", false, "tls,auth=relay:pw-0123456789");
    EXPECT_EQ(r["starttls"], 220);
    EXPECT_EQ(r["auth"], 235);
    EXPECT_EQ(r["data"], 250);
    EXPECT_EQ(h_.submits().size(), 1u);
}

TEST_F(EmailConnectorTest, PipelinedCommandsAreAnsweredInOrder) {
    bring_up();
    raw_client c(port_);
    ASSERT_TRUE(c.connected());
    EXPECT_EQ(c.replies(1), (std::vector<std::string>{"220"}));
    c.write("EHLO c.test\r\nMAIL FROM:<a@example.com>\r\nRCPT TO:<nobody@bridge.test>\r\n"
            "RCPT TO:<in@bridge.test>\r\nDATA\r\n");
    EXPECT_EQ(c.replies(5), (std::vector<std::string>{"250", "250", "550", "250", "354"}));
    c.write("Subject: pipelined\r\nMessage-ID: <p@x>\r\n\r\n..dot\r\n.\r\nNOOP\r\nQUIT\r\n");
    EXPECT_EQ(c.replies(3), (std::vector<std::string>{"250", "250", "221"}));
    auto submits = h_.submits();
    ASSERT_EQ(submits.size(), 1u);
    EXPECT_EQ(boost::json::parse(submits[0].content_json).at("email").at("text"), ".dot\r\n");
}

TEST_F(EmailConnectorTest, StopAnswers421ToIdleSessions) {
    bring_up();
    raw_client c(port_);
    ASSERT_TRUE(c.connected());
    EXPECT_EQ(c.replies(1), (std::vector<std::string>{"220"}));
    c.write("EHLO c.test\r\n");
    EXPECT_EQ(c.replies(1), (std::vector<std::string>{"250"}));
    EXPECT_EQ(h_.stop(), WB_OK);
    EXPECT_EQ(c.replies(1), (std::vector<std::string>{"421"}));
    EXPECT_FALSE(raw_client(port_).connected());
}

TEST_F(EmailConnectorTest, StopCutsOffAStalledDataPhaseWithoutSubmitting) {
    bring_up();
    raw_client c(port_);
    ASSERT_TRUE(c.connected());
    c.write("EHLO c.test\r\nMAIL FROM:<a@example.com>\r\nRCPT TO:<in@bridge.test>\r\nDATA\r\n");
    EXPECT_EQ(c.replies(5), (std::vector<std::string>{"220", "250", "250", "250", "354"}));
    c.write("Subject: never finished\r\n\r\nhalf a mess");
    EXPECT_EQ(h_.stop(std::chrono::milliseconds(200)), WB_ERR_BUSY);
    EXPECT_EQ(c.replies(1), (std::vector<std::string>{"421"}));
    EXPECT_TRUE(h_.submits().empty());
}

// examples/email: the config's settings are accepted (listen moved to port 0) and mail to the
// example address gets through.
TEST_F(EmailConnectorTest, ExampleConfigIsAccepted) {
    const std::string path = std::string(WOPBRIDGE_SOURCE_DIR) + "/examples/email/wopbridge.yaml";
    const auto config = wopbridge::testing::settings_from_config(path, "email");
    EXPECT_EQ(h_.validate(config).first, WB_OK);
    auto obj = boost::json::parse(config).as_object();
    obj["listen"] = "127.0.0.1:0";
    subscription_spec sub;
    sub.id = "support-mail";
    sub.source = "email";
    sub.settings_json = wopbridge::testing::settings_from_config(path, "support-mail", true);
    std::string err;
    ASSERT_EQ(h_.bring_up(boost::json::serialize(obj), sub, &err), WB_OK) << err;
    port_ = find_port();
    ASSERT_GT(port_, 0);
    EXPECT_EQ(smtp(plain_message(), "support@example.test")["data"], 250);
    EXPECT_EQ(smtp(plain_message(), "sales@example.test")["rcpt"], (boost::json::array{550}));
    EXPECT_EQ(h_.submits().size(), 1u);
}

TEST_F(EmailConnectorTest, SecretsNeverLogged) {
    bring_up(R"(,"auth":{"username":"u","password":"smtp-password-123"})");
    h_.send(webhook("token-ffffffffffffffff", false));
    for (const auto& line : h_.log_lines()) {
        EXPECT_EQ(line.find(signing_key), std::string::npos);
        EXPECT_EQ(line.find("smtp-password-123"), std::string::npos);
    }
}

} // namespace
} // namespace wopbridge::email
