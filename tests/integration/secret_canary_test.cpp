// Canary secrets and bodies through the real `wopbridge serve`: configured signing secrets, API keys,
// an SMTP AUTH password and a mail webhook key, a registered subscription's secret and an outbound
// webhook secret never appear in any output (log file at trace level, every REST read, error bodies,
// /metrics, discovery, the database files); request bodies never appear in the log, the audit records
// (deliveries and dead-letter pages), /metrics or error bodies. The TriggerEvent given to the run
// legitimately carries the body, so run reads are searched for secrets only.
#include "support/eventually.hpp"
#include "support/http_client.hpp"
#include "support/serve_process.hpp"
#include "support/temp_dir.hpp"
#include "support/webhook_signer.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

namespace wopbridge::testing {
namespace {

namespace json = boost::json;

constexpr const char* api_key = "hk_CANARYAPIKEY7f3a9";
constexpr const char* signing_secret = "whsec_Q0FOQVJZU0lHTklOR1NFQ1JFVDAxMjM0NTY3ODlhYg==";
constexpr const char* smtp_password = "CANARYSMTPPASS4242";
constexpr const char* mail_key = "CANARYMAILGUNKEY9999";
constexpr const char* outbound_secret = "whsec_Q0FOQVJZT1VUQk9VTkRTRUNSRVQwMTIzNDU2Nzg5eA==";
constexpr const char* body_canary = "CANARYBODY";

std::string base64(const std::string& in) {
    static const char* t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    std::size_t i = 0;
    for (; i + 2 < in.size(); i += 3) {
        unsigned v = (unsigned char)in[i] << 16 | (unsigned char)in[i + 1] << 8 | (unsigned char)in[i + 2];
        out += {t[v >> 18], t[(v >> 12) & 63], t[(v >> 6) & 63], t[v & 63]};
    }
    if (i + 1 == in.size()) {
        unsigned v = (unsigned char)in[i] << 16;
        out += {t[v >> 18], t[(v >> 12) & 63], '=', '='};
    } else if (i + 2 == in.size()) {
        unsigned v = (unsigned char)in[i] << 16 | (unsigned char)in[i + 1] << 8;
        out += {t[v >> 18], t[(v >> 12) & 63], t[(v >> 6) & 63], '='};
    }
    return out;
}

// A minimal SMTP client: one line out, the (possibly multi-line) reply in.
class smtp_client {
public:
    bool connect(int port) {
        fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(static_cast<std::uint16_t>(port));
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        return fd_ >= 0 && ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    }
    ~smtp_client() {
        if (fd_ >= 0) {
            ::close(fd_);
        }
    }
    std::string reply() {
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (std::chrono::steady_clock::now() < until) {
            // A complete reply ends with a line "NNN text" (space after the code).
            std::size_t start = 0;
            while (true) {
                auto eol = buf_.find("\r\n", start);
                if (eol == std::string::npos) {
                    break;
                }
                if (eol - start >= 4 && buf_[start + 3] == ' ') {
                    std::string r = buf_.substr(0, eol + 2);
                    buf_.erase(0, eol + 2);
                    return r;
                }
                start = eol + 2;
            }
            pollfd p{fd_, POLLIN, 0};
            if (::poll(&p, 1, 200) <= 0) {
                continue;
            }
            char tmp[4096];
            auto n = ::recv(fd_, tmp, sizeof tmp, 0);
            if (n <= 0) {
                break;
            }
            buf_.append(tmp, static_cast<std::size_t>(n));
        }
        return {};
    }
    std::string command(const std::string& line) {
        const std::string out = line + "\r\n";
        ::send(fd_, out.data(), out.size(), MSG_NOSIGNAL);
        return reply();
    }

private:
    int fd_ = -1;
    std::string buf_;
};

class SecretCanaryTest : public ::testing::Test {
protected:
    void SetUp() override {
        std::ofstream out(dir_.file("wopbridge.yaml"));
        out << "server: {listen: \"127.0.0.1:0\"}\n"
               "auth:\n"
               "  apiKeys:\n"
               "    - {key: "
            << api_key
            << ", tenant: default, scopes: [webhooks:manage, runs:read, runs:create]}\n"
               "store: {sqlite: {path: bridge.db}}\n"
               "hostKeyFile: host.key\n"
               "logging: {level: trace}\n"
               "webhooks: {allowLoopbackHttp: true, durable: true}\n"
               "runs: {local: {workflows: [{id: conformance-noop}]}}\n"
               "connectors:\n"
               "  - {name: mail, module: \""
            << WOPBRIDGE_MODULE_DIR << "/email.so\", settings: {listen: \"127.0.0.1:0\", "
            << "auth: {username: canary-user, password: " << smtp_password
            << "}, webhookSigningKey: " << mail_key << "}}\n"
            << "subscriptions:\n"
               "  - {id: orders, source: webhook, workflowId: conformance-noop, signingSecret: \""
            << signing_secret
            << "\"}\n"
               "  - {id: inbox, source: email, connector: mail, workflowId: conformance-noop, "
               "settings: {addresses: [inbox@example.com]}}\n";
    }

    http_reply call(const std::string& method, const std::string& path, const std::string& body = "",
                    const std::string& key = api_key) {
        http_call c;
        c.method = method;
        c.url = serve_.url() + path;
        c.headers.emplace_back("authorization", std::string("Bearer ") + key);
        if (!body.empty()) {
            c.headers.emplace_back("content-type", "application/json");
        }
        c.body = body;
        auto r = perform(c);
        record(method + " " + path, r);
        return r;
    }

    http_reply ingest(const std::string& sub, const std::string& body, const std::string& secret) {
        http_call c;
        c.method = "POST";
        c.url = serve_.url() + "/v1/ingest/" + sub;
        c.headers = standard_webhook_headers(secret, fresh_webhook_id(), std::time(nullptr), body);
        c.headers.emplace_back("content-type", "application/json");
        c.body = body;
        auto r = perform(c);
        record("ingest " + sub, r);
        return r;
    }

    void record(const std::string& what, const http_reply& r) {
        std::string text = std::to_string(r.status) + "\n";
        for (const auto& [k, v] : r.headers) {
            text += k + ": " + v + "\n";
        }
        text += r.body;
        (r.status >= 400 ? errors_ : reads_).push_back({what, text});
    }

    struct output {
        std::string what;
        std::string text;
    };
    temp_dir dir_;
    serve_process serve_;
    std::vector<output> errors_; // every error answer, headers included
    std::vector<output> reads_;  // every other answer
};

TEST_F(SecretCanaryTest, SecretsAndBodiesAppearInNoOutput) {
    ASSERT_TRUE(serve_.start(dir_.file("wopbridge.yaml"), dir_.file("serve.log"))) << serve_.error;

    // --- inputs carrying canaries -------------------------------------------------------------
    const std::string body = std::string(R"({"note":")") + body_canary + R"(-accepted"})";
    auto ok = ingest("orders", body, signing_secret);
    ASSERT_EQ(ok.status, 202) << ok.body;
    const std::string run_id(json::parse(ok.body).at("runId").as_string());
    EXPECT_EQ(ingest("orders", std::string(R"({"note":")") + body_canary + R"(-forged"})",
                     "whsec_c2VjcmV0c2VjcmV0c2VjcmV0")
                  .status,
              401);
    EXPECT_EQ(call("POST", "/v1/trigger-subscriptions",
                   std::string(R"({"source":")") + body_canary + "-mgmt")
                  .status,
              400);
    EXPECT_EQ(call("GET", "/v1/trigger-subscriptions", "", "hk_CANARYWRONGKEY").status, 401);
    auto reg = call("POST", "/v1/trigger-subscriptions",
                    R"({"source":"webhook","workflowId":"conformance-noop"})");
    ASSERT_EQ(reg.status, 201) << reg.body;
    const auto reg_json = json::parse(reg.body);
    const std::string minted(reg_json.at("binding").at("signingSecret").as_string());
    const std::string minted_sub(reg_json.at("subscription").at("id").as_string());
    reads_.pop_back(); // the one answer that carries the minted secret, by contract
    EXPECT_EQ(ingest(minted_sub, std::string(R"({"n":")") + body_canary + "-minted\"}", minted).status,
              202);
    auto hook = call("POST", "/v1/webhooks",
                     std::string(R"({"url":"http://127.0.0.1:9/hook?token=CANARYURLTOKEN",)") +
                         R"("events":["run.completed"],"secret":")" + outbound_secret + "\"}");
    ASSERT_EQ(hook.status, 201) << hook.body;
    reads_.pop_back(); // echoes the outbound secret once, by contract
    const std::string webhook_id(json::parse(hook.body).at("webhookId").as_string());

    // Mail: AUTH with the canary password (and a wrong canary password first), a canary message,
    // and a forged inbound-parse webhook carrying a canary body.
    std::smatch m;
    const std::regex port_re("smtp\\.listening[^0-9]*([0-9]+)");
    std::string log_text;
    ASSERT_TRUE(eventually([&] {
        log_text = read_text_file(dir_.file("serve.log"));
        return std::regex_search(log_text, m, port_re);
    })) << log_text;
    const int smtp_port = std::stoi(m[1].str());
    const std::string good_auth = base64(std::string("\0canary-user\0", 13) + smtp_password);
    const std::string bad_auth = base64(std::string("\0canary-user\0", 13) + "CANARYWRONGPASS");
    {
        smtp_client smtp;
        ASSERT_TRUE(smtp.connect(smtp_port));
        ASSERT_EQ(smtp.reply().substr(0, 3), "220");
        ASSERT_EQ(smtp.command("EHLO canary.test").substr(0, 3), "250");
        EXPECT_EQ(smtp.command("AUTH PLAIN " + bad_auth).substr(0, 3), "535");
        ASSERT_EQ(smtp.command("AUTH PLAIN " + good_auth).substr(0, 3), "235");
        ASSERT_EQ(smtp.command("MAIL FROM:<ada@example.com>").substr(0, 3), "250");
        ASSERT_EQ(smtp.command("RCPT TO:<inbox@example.com>").substr(0, 3), "250");
        ASSERT_EQ(smtp.command("DATA").substr(0, 3), "354");
        auto done = smtp.command(std::string("From: ada@example.com\r\nTo: inbox@example.com\r\n"
                                             "Subject: ") +
                                 body_canary + "-subject\r\nMessage-ID: <canary@example.com>\r\n\r\n" +
                                 body_canary + "-mailtext\r\n.");
        EXPECT_EQ(done.substr(0, 3), "250") << done;
        smtp.command("QUIT");
    }
    {
        http_call c;
        c.method = "POST";
        c.url = serve_.url() + "/v1/ingest/inbox";
        c.headers = {{"content-type", "application/x-www-form-urlencoded"}};
        c.body = std::string("timestamp=1&token=t&signature=00&body-plain=") + body_canary + "-parse";
        auto r = perform(c);
        EXPECT_GE(r.status, 400) << r.body;
        record("mail webhook", r);
    }

    // --- every read ---------------------------------------------------------------------------
    ASSERT_TRUE(eventually([&] {
        auto r = call("GET", "/v1/runs/" + run_id);
        return r.body.find("\"completed\"") != std::string::npos;
    })) << "run did not complete";
    call("GET", "/v1/runs/" + run_id + "/events/poll?timeout=0");
    auto list = call("GET", "/v1/trigger-subscriptions");
    ASSERT_EQ(list.status, 200);
    for (const auto& s : json::parse(list.body).at("subscriptions").as_array()) {
        const std::string id(s.at("id").as_string());
        call("GET", "/v1/trigger-subscriptions/" + id);
        call("GET", "/v1/trigger-subscriptions/" + id + "/deliveries");
        call("GET", "/v1/trigger-subscriptions/" + id + "/dead-letters");
    }
    call("GET", "/v1/webhooks");
    call("GET", "/v1/webhooks/" + webhook_id + "/dead-letters");
    call("GET", "/.well-known/openwop");
    call("GET", "/v1/openapi.json");
    auto metrics = call("GET", "/metrics");
    ASSERT_EQ(metrics.status, 200);
    call("GET", "/v1/runs/run_missing");
    call("PATCH", "/v1/trigger-subscriptions/orders", R"({"state":"CANARYBODY-state"})");

    serve_.signal(SIGTERM);
    ASSERT_EQ(serve_.wait_exit(), 0);
    const std::string log = read_text_file(dir_.file("serve.log"));
    ASSERT_NE(log.find("wopbridge.started"), std::string::npos);
    std::string database;
    for (const auto& e : std::filesystem::directory_iterator(dir_.path())) {
        if (e.path().filename().string().rfind("bridge.db", 0) == 0) {
            database += read_text_file(e.path().string());
        }
    }
    ASSERT_FALSE(database.empty());

    // --- the search ---------------------------------------------------------------------------
    const std::vector<std::string> secrets = {
        "CANARYAPIKEY", "CANARYWRONGKEY", "CANARYSIGNINGSECRET", "Q0FOQVJZU0lHTklOR1NFQ1JF",
        smtp_password, "CANARYWRONGPASS", good_auth, bad_auth, mail_key, "CANARYOUTBOUNDSECRET",
        "Q0FOQVJZT1VUQk9VTkRTRUNSRV", "CANARYURLTOKEN", minted, minted.substr(6)};
    auto search = [](const std::string& where, const std::string& text,
                     const std::vector<std::string>& needles) {
        for (const auto& n : needles) {
            EXPECT_EQ(text.find(n), std::string::npos) << "'" << n << "' found in " << where;
        }
    };
    search("the serve log", log, secrets);
    search("the serve log", log, {body_canary});
    search("the database files", database, secrets);
    for (const auto& o : errors_) {
        search("error answer to " + o.what, o.text, secrets);
        search("error answer to " + o.what, o.text, {body_canary});
    }
    for (const auto& o : reads_) {
        search("answer to " + o.what, o.text, secrets);
        // Run reads legitimately carry the TriggerEvent; every other read is content-free.
        if (o.what.find("/v1/runs/") == std::string::npos) {
            search("answer to " + o.what, o.text, {body_canary});
        }
    }
    EXPECT_GE(errors_.size(), 6u);
    EXPECT_GE(reads_.size(), 15u);
}

} // namespace
} // namespace wopbridge::testing
