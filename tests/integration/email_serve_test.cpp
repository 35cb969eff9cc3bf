// The email connector's SMTP listener through the real `wopbridge serve`, driven by Python's smtplib
// (tests/scripts/smtp_send.py): a plain message and a multipart one with an attachment are answered
// 250 only after the commit and start one run each with the right causationId; the attachment
// reaches the run as an attachment reference (the bytes sit in the blob store, not in the event);
// an unknown recipient is refused with 550 and starts nothing; the same Message-ID twice is one run.
#include "support/http_client.hpp"
#include "support/provider_signing.hpp"
#include "support/serve_probe.hpp"
#include "support/serve_process.hpp"
#include "support/smtp_client.hpp"
#include "support/temp_dir.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <csignal>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

namespace wopbridge::testing::email_serve_test {
namespace {

namespace json = boost::json;

constexpr const char* sub = "support-mail";
constexpr const char* python = "/usr/bin/python3";
constexpr const char* webhook_key = "key-inbound-parse-0123456789abcdef";

class EmailServeTest : public ::testing::Test {
protected:
    void SetUp() override {
        if (::access(python, X_OK) != 0) {
            GTEST_SKIP() << python << " is not installed";
        }
        std::filesystem::create_directories(dir_.file("events"));
        // The workflow keeps the TriggerEvent it is given on stdin, one file per run.
        std::ofstream(dir_.file("wopbridge.yaml"))
            << probe_config_prelude(dir_.path().string(), "http://127.0.0.1:8080")
            << "runs:\n"
               "  local:\n"
               "    workflows:\n"
            << capturing_workflow_yaml("triage", dir_.file("events"))
            << "connectors:\n"
               "  - name: email\n"
               "    module: email\n"
               "    settings: {listen: \"127.0.0.1:0\", hostname: mx.example.test,\n"
               "               webhookSigningKey: \""
            << webhook_key
            << "\"}\n"
               "subscriptions:\n"
               "  - {id: support-mail, source: email, connector: email, workflowId: triage,\n"
               "     settings: {addresses: [support@example.test]}}\n";
        ASSERT_TRUE(serve_.start(dir_.file("wopbridge.yaml"), dir_.file("serve.log")))
            << serve_.error;
        probe_ = std::make_unique<serve_probe>(serve_.url(), "hk_probe");
        // The connector logs its bound port before the host's startup banner.
        const std::string log = read_text_file(dir_.file("serve.log"));
        auto at = log.find("smtp.listening");
        ASSERT_NE(at, std::string::npos) << log;
        at = log.find("port", at);
        at = log.find(':', at);
        smtp_port_ = std::stoi(log.substr(at + 1));
        ASSERT_GT(smtp_port_, 0);
    }

    void TearDown() override {
        if (probe_) {
            serve_.signal(SIGTERM);
            EXPECT_EQ(serve_.wait_exit(), 0) << read_text_file(dir_.file("serve.log"));
        }
    }

    // One smtplib session; the script's JSON verdict.
    json::object send(json::object spec) {
        spec["host"] = "127.0.0.1";
        spec["port"] = smtp_port_;
        if (!spec.contains("from")) {
            spec["from"] = "ada@example.com";
        }
        if (!spec.contains("text")) {
            spec["text"] = "Hello,\nthe printer is on fire.\n.\nThe line above is a lone dot.\n";
        }
        auto run = run_program({python, std::string(WOPBRIDGE_SOURCE_DIR) +
                                            "/tests/scripts/smtp_send.py",
                                json::serialize(spec)});
        EXPECT_EQ(run.exit_code, 0) << run.stdout_text;
        boost::system::error_code ec;
        auto v = json::parse(run.last_line, ec);
        if (ec || !v.is_object()) {
            ADD_FAILURE() << "smtp_send.py printed: " << run.stdout_text;
            return {};
        }
        return v.as_object();
    }

    // The TriggerEvent the run's workflow received on stdin.
    json::object event_of(const std::string& run_id) {
        EXPECT_TRUE(probe_->run_finished(run_id));
        const std::string text = read_text_file(dir_.file("events/" + run_id + ".json"));
        boost::system::error_code ec;
        auto v = json::parse(text, ec);
        if (ec || !v.is_object()) {
            ADD_FAILURE() << "run " << run_id << " received: " << text;
            return {};
        }
        return v.as_object();
    }

    temp_dir dir_;
    serve_process serve_;
    std::unique_ptr<serve_probe> probe_;
    int smtp_port_ = 0;
};

TEST_F(EmailServeTest, ConnectorLogLinesHaveTheHostsShapeWithoutDoubleEncoding) {
    // Every line of the service log is one JSON object {"ts","level","event",...}; the module's
    // own fields are fields of that object, not JSON text inside a string.
    std::istringstream lines(read_text_file(dir_.file("serve.log")));
    std::string line;
    bool saw_listening = false;
    while (std::getline(lines, line)) {
        if (line.empty()) {
            continue;
        }
        boost::system::error_code ec;
        auto v = boost::json::parse(line, ec);
        ASSERT_FALSE(ec) << line;
        ASSERT_TRUE(v.is_object()) << line;
        const auto& o = v.as_object();
        EXPECT_TRUE(o.contains("ts") && o.contains("level") && o.contains("event")) << line;
        if (o.contains("msg")) {
            EXPECT_NE(o.at("msg").as_string().c_str()[0], '{') << line;
        }
        if (o.contains("event") && o.at("event") == "smtp.listening") {
            saw_listening = true;
            EXPECT_TRUE(o.at("port").is_int64()) << line;
            EXPECT_TRUE(o.contains("connector")) << line;
        }
    }
    EXPECT_TRUE(saw_listening);
}

TEST_F(EmailServeTest, PlainMessageIsAcknowledgedAfterTheCommitAndStartsOneRun) {
    auto r = send({{"rcpt", json::array{"support@example.test"}},
                   {"subject", "Printer on fire"},
                   {"messageId", "<plain-0001@example.com>"}});
    ASSERT_EQ(r.at("rcpt"), (json::array{250}));
    ASSERT_EQ(r.at("data"), 250) << r.at("dataReply");
    // 250 came after the commit: the delivery is already readable, without waiting.
    EXPECT_EQ(probe_->deliveries(sub).size(), 1u);
    std::vector<std::string> runs;
    ASSERT_TRUE(probe_->runs_started(sub, 1, &runs));

    auto event = event_of(runs[0]);
    ASSERT_TRUE(event.contains("email")) << json::serialize(event);
    const auto& email = event.at("email").as_object();
    EXPECT_EQ(email.at("subject"), "Printer on fire");
    EXPECT_EQ(email.at("from"), "ada@example.com");
    // smtplib dot-stuffs the lone "." line; the connector unstuffs it (line ends stay CRLF).
    EXPECT_NE(std::string(email.at("text").as_string())
                  .find("on fire.\r\n.\r\nThe line above is a lone dot."),
              std::string::npos)
        << email.at("text");
    EXPECT_TRUE(!email.contains("attachments") || email.at("attachments").as_array().empty());
    EXPECT_EQ(event.at("source"), "email");
    EXPECT_EQ(event.at("subscriptionId"), sub);
}

TEST_F(EmailServeTest, MultipartAttachmentReachesTheRunAsAReference) {
    const std::string content = "%PDF-1.4\nquarterly report: 42 printers, 3 on fire\n";
    auto r = send({{"rcpt", json::array{"support@example.test"}},
                   {"subject", "Report attached"},
                   {"messageId", "<multipart-0001@example.com>"},
                   {"attachment", json::object{{"filename", "report.pdf"},
                                               {"mediaType", "application/pdf"},
                                               {"content", content}}}});
    ASSERT_EQ(r.at("data"), 250) << r.at("dataReply");
    EXPECT_EQ(probe_->deliveries(sub).size(), 1u);
    std::vector<std::string> runs;
    ASSERT_TRUE(probe_->runs_started(sub, 1, &runs));

    auto event = event_of(runs[0]);
    const auto& email = event.at("email").as_object();
    ASSERT_EQ(email.at("attachments").as_array().size(), 1u) << json::serialize(event);
    const auto& att = email.at("attachments").as_array()[0].as_object();
    const std::string ref(att.at("ref").as_string());
    EXPECT_EQ(ref.rfind("att_", 0), 0u) << ref;
    EXPECT_EQ(att.at("filename"), "report.pdf");
    EXPECT_EQ(att.at("mediaType"), "application/pdf");
    EXPECT_EQ(att.at("bytes").to_number<std::size_t>(), content.size());
    // Not inline: neither the bytes nor their base64 are in the event.
    const std::string serialized = json::serialize(event);
    EXPECT_EQ(serialized.find("quarterly report"), std::string::npos);
    EXPECT_EQ(serialized.find("JVBERi0xLjQ"), std::string::npos); // base64 of "%PDF-1.4"
    EXPECT_NE(std::string(email.at("text").as_string()).find("printer is on fire"),
              std::string::npos);
    // The bytes are in the host's blob store beside the database, named by the reference.
    EXPECT_EQ(read_text_file(dir_.file("attachments/" + ref.substr(4))), content);
}

TEST_F(EmailServeTest, UnknownRecipientIsRefusedWith550AndStartsNoRun) {
    auto r = send({{"rcpt", json::array{"nobody@example.test"}}, {"subject", "Hello?"}});
    EXPECT_EQ(r.at("mail"), 250);
    EXPECT_EQ(r.at("rcpt"), (json::array{550}));
    EXPECT_TRUE(r.at("data").is_null());
    EXPECT_TRUE(probe_->nothing_started(sub, 0));
    // One known and one unknown recipient: the known one is delivered, once.
    auto mixed = send({{"rcpt", json::array{"nobody@example.test", "SUPPORT@example.test"}},
                       {"subject", "Mixed"},
                       {"messageId", "<mixed-0001@example.com>"}});
    EXPECT_EQ(mixed.at("rcpt"), (json::array{550, 250}));
    EXPECT_EQ(mixed.at("data"), 250);
    EXPECT_TRUE(probe_->runs_started(sub, 1));
}

// The README's bound: DATA lines of up to 64 KiB. A longer line fails the message with 500 even
// when it arrives whole within one read (70 KiB was once taken); a line at the bound is taken.
TEST_F(EmailServeTest, ADataLineOver64KiBFailsTheMessageAndOneAtTheBoundIsTaken) {
    const auto port = static_cast<std::uint16_t>(smtp_port_);
    auto over = smtp_send(port, "ada@example.com", "support@example.test", "long-0001@example.com",
                          std::string(70 * 1024, 'x'));
    EXPECT_EQ(over.final_code, 500) << over.last_reply;
    EXPECT_TRUE(probe_->nothing_started(sub, 0));
    auto at_bound = smtp_send(port, "ada@example.com", "support@example.test",
                              "long-0002@example.com", std::string(64 * 1024, 'y'));
    EXPECT_EQ(at_bound.final_code, 250) << at_bound.last_reply;
    EXPECT_TRUE(probe_->runs_started(sub, 1));
}

TEST_F(EmailServeTest, SameMessageIdTwiceStartsOneRun) {
    json::object spec{{"rcpt", json::array{"support@example.test"}},
                      {"subject", "Sent twice"},
                      {"messageId", "<twice-0001@example.com>"}};
    ASSERT_EQ(send(spec).at("data"), 250);
    std::vector<std::string> runs;
    ASSERT_TRUE(probe_->runs_started(sub, 1, &runs));
    // A sending MTA that lost our 250 sends the message again: accepted, not a second run.
    ASSERT_EQ(send(spec).at("data"), 250);
    EXPECT_EQ(probe_->ingest_count(sub, "duplicate"), 1);
    std::vector<std::string> after;
    EXPECT_TRUE(probe_->runs_started(sub, 1, &after));
    EXPECT_EQ(after, runs);
}

// The inbound-parse webhook variant (a hosted mail provider POSTs the parsed message): signed with
// hex HMAC-SHA256(key, timestamp + token), multipart with a file part. Accepted once with one run;
// the same token again is a replay and refused; a wrong signature starts nothing.
TEST_F(EmailServeTest, InboundParseWebhookStartsOneRunAndRefusesReplays) {
    auto post = [&](const std::string& token, const std::string& key) {
        const std::string ts = std::to_string(std::time(nullptr));
        auto part = [](const std::string& name, const std::string& value) {
            return "--b0undary\r\nContent-Disposition: form-data; name=\"" + name +
                   "\"\r\n\r\n" + value + "\r\n";
        };
        http_call c;
        c.method = "POST";
        c.url = serve_.url() + "/v1/ingest/" + sub;
        c.headers = {{"content-type", "multipart/form-data; boundary=b0undary"}};
        c.body = part("timestamp", ts) + part("token", token) +
                 part("signature", hmac_sha256_hex(key, ts + token)) +
                 part("from", "Ada <ada@example.com>") + part("recipient", "support@example.test") +
                 part("subject", "Via the provider") + part("body-plain", "Parsed upstream.") +
                 part("Message-Id", "<parse-0001@example.com>") +
                 "--b0undary\r\nContent-Disposition: form-data; name=\"attachment-1\"; "
                 "filename=\"log.txt\"\r\nContent-Type: text/plain\r\n\r\nprinter log\r\n"
                 "--b0undary--\r\n";
        return perform(c);
    };
    const std::string token = "tok-0123456789abcdef0123456789abcdef0123456789abcdef";
    auto forged = post(token, "not-the-key-0123456789");
    EXPECT_EQ(forged.status, 401) << forged.body;
    EXPECT_TRUE(probe_->nothing_started(sub, 0));

    auto r = post(token, webhook_key);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_NE(r.body.find("\"accepted\""), std::string::npos) << r.body;
    std::vector<std::string> runs;
    ASSERT_TRUE(probe_->runs_started(sub, 1, &runs));
    EXPECT_NE(r.body.find(runs[0]), std::string::npos) << r.body;
    auto event = event_of(runs[0]);
    const auto& atts = event.at("email").at("attachments").as_array();
    ASSERT_EQ(atts.size(), 1u) << json::serialize(event);
    EXPECT_EQ(read_text_file(dir_.file("attachments/" +
                                       std::string(atts[0].at("ref").as_string()).substr(4))),
              "printer log");

    auto replay = post(token, webhook_key);
    EXPECT_EQ(replay.status, 401) << replay.body;
    EXPECT_TRUE(probe_->nothing_started(sub, 1));
}

// The connector's token cache is in memory: after a restart a captured post replayed within its
// tolerance passes verification again. It still starts nothing: its dedup identity is the message's
// (Message-Id, else a hash of the mapped content), so the bridge's durable dedup answers it as a
// duplicate of the first run.
TEST_F(EmailServeTest, ACapturedWebhookReplayedAfterARestartIsADuplicateAndStartsNoSecondRun) {
    const std::string ts = std::to_string(std::time(nullptr));
    const std::string token = "tok-replayed-after-restart-0123456789abcdef01234567";
    auto part = [](const std::string& name, const std::string& value) {
        return "--b0undary\r\nContent-Disposition: form-data; name=\"" + name + "\"\r\n\r\n" +
               value + "\r\n";
    };
    const std::string captured =
        part("timestamp", ts) + part("token", token) +
        part("signature", hmac_sha256_hex(webhook_key, ts + token)) +
        part("from", "Ada <ada@example.com>") + part("recipient", "support@example.test") +
        part("subject", "Captured") + part("body-plain", "Once only.") +
        part("Message-Id", "<captured-0001@example.com>") + "--b0undary--\r\n";
    auto post = [&] {
        http_call c;
        c.method = "POST";
        c.url = serve_.url() + "/v1/ingest/" + sub;
        c.headers = {{"content-type", "multipart/form-data; boundary=b0undary"}};
        c.body = captured;
        return perform(c);
    };
    auto first = post();
    ASSERT_EQ(first.status, 200) << first.body;
    std::vector<std::string> runs;
    ASSERT_TRUE(probe_->runs_started(sub, 1, &runs));
    ASSERT_TRUE(probe_->run_finished(runs[0]));

    serve_.signal(SIGKILL);
    EXPECT_EQ(serve_.wait_exit(), -1);
    ASSERT_TRUE(serve_.start(dir_.file("wopbridge.yaml"), dir_.file("serve.log"))) << serve_.error;
    probe_ = std::make_unique<serve_probe>(serve_.url(), "hk_probe");

    auto replay = post();
    ASSERT_EQ(replay.status, 200) << replay.body;
    EXPECT_NE(replay.body.find("\"duplicate\""), std::string::npos) << replay.body;
    EXPECT_NE(replay.body.find(runs[0]), std::string::npos) << replay.body;
    EXPECT_TRUE(probe_->nothing_started(sub, 1));
    // Within this process the token cache refuses it before the bridge is asked.
    EXPECT_EQ(post().status, 401);
    EXPECT_TRUE(probe_->nothing_started(sub, 1));
}

} // namespace
} // namespace wopbridge::testing::email_serve_test
