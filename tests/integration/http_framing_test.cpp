// Hostile framing against the real `wopbridge serve` (server.maxBodyBytes: 10 MiB), with exact bytes
// on raw sockets: `maxBodyBytes` is the one body limit (Content-Length and chunked bodies up to it
// are accepted, past it 413 with the envelope before the body is read, and the connection closed),
// and every framing a proxy could read differently (request smuggling) is answered 400, the
// connection closed, the smuggled request never answered, nothing stored and no run started.
#include "support/http_client.hpp"
#include "support/probed_serve_fixture.hpp"
#include "support/raw_socket.hpp"
#include "support/serve_probe.hpp"
#include "support/serve_process.hpp"
#include "support/temp_dir.hpp"
#include "support/webhook_signer.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <csignal>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace wopbridge::testing::http_framing_test {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

constexpr const char* secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
constexpr const char* sub = "orders";
constexpr std::size_t max_body = 10485760;

class HttpFramingTest : public probed_serve_fixture {
  protected:
    void SetUp() override {
        std::ostringstream config;
        config << probe_config_prelude(dir_.path().string(), "http://127.0.0.1:8080")
            << "runs: {local: {workflows: [{id: conformance-noop}]}}\n"
               "subscriptions:\n"
               "  - {id: orders, source: webhook, workflowId: conformance-noop, signingSecret: \""
            << secret << "\"}\n";
        start_serve(config.str());
    }

    // A signed ingest's request line and headers, without the framing header and the blank line.
    static std::string signed_head(const std::string& body, const std::string& id) {
        std::string r = "POST /v1/ingest/orders HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                        "Content-Type: application/json\r\n";
        for (const auto& [k, v] : standard_webhook_headers(secret, id, std::time(nullptr), body)) {
            r += k + ": " + v + "\r\n";
        }
        return r;
    }
    static std::string signed_ingest(const std::string& body, const std::string& id,
                                     const std::string& extra_headers = {}) {
        return signed_head(body, id) + extra_headers + "Content-Length: " +
               std::to_string(body.size()) + "\r\n\r\n" + body;
    }
    static std::string chunked(const std::string& body, std::size_t piece) {
        std::string out;
        char size[32];
        for (std::size_t at = 0; at < body.size(); at += piece) {
            auto n = std::min(piece, body.size() - at);
            std::snprintf(size, sizeof size, "%zx\r\n", n);
            out += size;
            out.append(body, at, n);
            out += "\r\n";
        }
        return out + "0\r\n\r\n";
    }
    // A JSON string body of exactly n bytes.
    static std::string json_body(std::size_t n) { return "\"" + std::string(n - 2, 'b') + "\""; }

    static int status_of(const std::string& reply) {
        return reply.rfind("HTTP/1.1 ", 0) == 0 && reply.size() >= 12
                   ? std::stoi(reply.substr(9, 3))
                   : 0;
    }
    static json::value envelope_of(const std::string& reply) {
        auto at = reply.find("\r\n\r\n");
        boost::system::error_code ec;
        auto v = json::parse(at == std::string::npos ? "" : reply.substr(at + 4), ec);
        return ec ? json::value{} : v;
    }

    std::string get(const std::string& path) {
        http_call c;
        c.url = serve_.url() + path;
        c.headers = {{"authorization", "Bearer hk_probe"}};
        return perform(c).body;
    }
};

TEST_F(HttpFramingTest, BodiesUpToMaxBodyBytesAreAcceptedAndLargerOnes413BeforeTheBody) {
    // Content-Length bodies past Beast's own 1 MiB default, up to the configured limit.
    std::size_t accepted = 0;
    for (std::size_t n : {1100000u, 2000000u, 4000000u, static_cast<unsigned>(max_body)}) {
        raw_connection c(port_);
        ASSERT_TRUE(c.connected());
        ASSERT_TRUE(
            c.send(signed_ingest(json_body(n), fresh_webhook_id(), "Connection: close\r\n")))
            << n;
        c.read_until_closed(30s);
        EXPECT_EQ(status_of(c.received()), 202) << n << ": " << c.received().substr(0, 300);
        ++accepted;
    }
    // A chunked body of 2 MB is accepted alike.
    {
        const auto body = json_body(2000000);
        raw_connection c(port_);
        ASSERT_TRUE(c.connected());
        ASSERT_TRUE(c.send(signed_head(body, fresh_webhook_id()) +
                           "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n" +
                           chunked(body, 65536)));
        c.read_until_closed(30s);
        EXPECT_EQ(status_of(c.received()), 202) << c.received().substr(0, 300);
        ++accepted;
    }
    EXPECT_TRUE(probe_->runs_started(sub, accepted));

    // Declared past the limit: 413 with the envelope at once, no body sent, connection closed.
    for (std::uint64_t n : {std::uint64_t{max_body} + 1, std::uint64_t{20000000},
                            std::uint64_t{99999999999}}) {
        raw_connection c(port_);
        ASSERT_TRUE(c.connected());
        ASSERT_TRUE(c.send(signed_head("{}", fresh_webhook_id()) +
                           "Content-Length: " + std::to_string(n) + "\r\n\r\n"));
        EXPECT_TRUE(c.read_until_closed(10s)) << n << ": the connection stayed open";
        EXPECT_EQ(status_of(c.received()), 413) << n << ": " << c.received();
        auto v = envelope_of(c.received());
        ASSERT_TRUE(v.is_object()) << c.received();
        EXPECT_EQ(v.at("error"), "payload_too_large");
        EXPECT_EQ(v.at("details").at("maxBodyBytes").to_number<std::uint64_t>(), max_body);
    }
    // A chunked body that grows past the limit: 413 too.
    {
        const auto body = json_body(max_body + 100000);
        raw_connection c(port_);
        ASSERT_TRUE(c.connected());
        c.send(signed_head(body, fresh_webhook_id()) + "Transfer-Encoding: chunked\r\n\r\n" +
               chunked(body, 1 << 20));
        EXPECT_TRUE(c.read_until_closed(30s)) << "the connection stayed open";
        EXPECT_EQ(status_of(c.received()), 413) << c.received().substr(0, 300);
        EXPECT_EQ(envelope_of(c.received()).at("error"), "payload_too_large");
    }
    EXPECT_TRUE(probe_->nothing_started(sub, accepted));
}

TEST_F(HttpFramingTest, AmbiguousFramingAnswers400ClosesAndNeverAnswersTheSmuggledRequest) {
    // Control: two well-framed requests pipelined on one connection are both answered, so a
    // smuggled second request would be seen below.
    {
        raw_connection c(port_);
        ASSERT_TRUE(c.connected());
        ASSERT_TRUE(c.send("GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"
                           "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
        c.read_until_closed(10s);
        EXPECT_EQ(count_of(c.received(), "HTTP/1.1 200"), 2u) << c.received();
    }

    // The smuggled request is a valid signed ingest: answering it would start a run.
    const std::string body = R"({"order":1})";
    struct smuggle {
        std::string framing; // header lines, each ending in CRLF
        std::string what;
    };
    const std::vector<smuggle> cases = {
        {"Transfer-Encoding: chunked, identity\r\n", "chunked, identity"},
        {"Transfer-Encoding: xchunked\r\n", "xchunked"},
        {"Transfer-Encoding: gzip\r\n", "gzip"},
        {"Transfer-Encoding: gzip, chunked\r\n", "gzip, chunked"},
        {"Transfer-Encoding: identity\r\n", "identity"},
        {"Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n", "two TE fields"},
        {"Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n", "gzip then chunked fields"},
        {"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", "CL then TE"},
        {"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", "TE then CL"},
        {"Transfer-Encoding: gzip\r\nContent-Length: 5\r\n", "TE gzip with CL"},
        {"Content-Length: 5\r\nContent-Length: 5\r\n", "duplicate CL"},
        {"Content-Length: 5, 5\r\n", "CL list"},
        {"Content-Length: 5\r\nContent-Length: 6\r\n", "conflicting CL"},
    };
    for (const auto& s : cases) {
        raw_connection c(port_);
        ASSERT_TRUE(c.connected());
        // "0\r\n\r\n" is a complete chunked body and exactly 5 bytes: every reading of the
        // framing ends the first request there, so whatever follows is a second request.
        ASSERT_TRUE(c.send(signed_head("", "msg_outer_" + std::to_string(&s - cases.data())) +
                           s.framing + "\r\n0\r\n\r\n" +
                           signed_ingest(body, fresh_webhook_id())));
        EXPECT_TRUE(c.read_until_closed(10s)) << s.what << ": the connection stayed open";
        EXPECT_EQ(status_of(c.received()), 400) << s.what << ": " << c.received();
        EXPECT_EQ(count_of(c.received(), "HTTP/1.1 "), 1u) << s.what << ": " << c.received();
        auto v = envelope_of(c.received());
        ASSERT_TRUE(v.is_object()) << s.what << ": " << c.received();
        EXPECT_EQ(v.at("error"), "bad_request") << s.what;
    }

    // Nothing was stored: no delivery, no run, no dead-lettered refusal, still active.
    EXPECT_TRUE(probe_->nothing_started(sub, 0));
    auto dead = json::parse(get("/v1/trigger-subscriptions/orders/dead-letters"));
    EXPECT_TRUE(dead.at("deliveries").as_array().empty()) << dead;
    // And the server still serves well-framed ingest, chunked included.
    raw_connection c(port_);
    ASSERT_TRUE(c.connected());
    ASSERT_TRUE(c.send(signed_head(body, fresh_webhook_id()) +
                       "Transfer-Encoding: Chunked\r\nConnection: close\r\n\r\n" +
                       chunked(body, 4)));
    c.read_until_closed(10s);
    EXPECT_EQ(status_of(c.received()), 202) << c.received();
    EXPECT_TRUE(probe_->runs_started(sub, 1));
}

TEST_F(HttpFramingTest, MalformedChunkedBodiesAnswer400AndClose) {
    // A client must be able to tell a refusal from a crash: every broken chunked framing gets
    // the envelope, then the close (where the next request would start is unknown).
    struct broken {
        std::string body; // what follows the header's blank line
        std::string what;
    };
    const std::vector<broken> cases = {
        {"0x0\r\n\r\n", "size 0x0"},
        {" 0\r\n\r\n", "size with a leading space"},
        {"-1\r\n\r\n", "size -1"},
        {"10000000000000000\r\n{}\r\n0\r\n\r\n", "17 hex digits"},
        {"2\r\n{}\r\n0\n\r\n", "bare-LF last chunk"},
        {"2\r\n{}\r\n0\r\n\n", "bare-LF end of trailer"},
        {"2\r\n{}0\r\n\r\n", "chunk data without CRLF"},
        {"2\r\n{}\r\n0\r\nContent-Length: 5\r\n\r\n", "a trailer carrying Content-Length"},
        {"2\r\n{}\r\n0\r\nTransfer-Encoding: chunked\r\n\r\n",
         "a trailer carrying Transfer-Encoding"},
        {"2;a=\"\r\n\"\r\n{}\r\n0\r\n\r\n", "a quoted CRLF in an extension"},
    };
    for (const auto& b : cases) {
        raw_connection c(port_);
        ASSERT_TRUE(c.connected());
        ASSERT_TRUE(c.send(signed_head("{}", fresh_webhook_id()) +
                           "Transfer-Encoding: chunked\r\n\r\n" + b.body));
        EXPECT_TRUE(c.read_until_closed(10s)) << b.what << ": the connection stayed open";
        EXPECT_EQ(status_of(c.received()), 400) << b.what << ": " << c.received();
        EXPECT_EQ(count_of(c.received(), "HTTP/1.1 "), 1u) << b.what << ": " << c.received();
        auto v = envelope_of(c.received());
        ASSERT_TRUE(v.is_object()) << b.what << ": " << c.received();
        EXPECT_EQ(v.at("error"), "bad_request") << b.what;
    }
    EXPECT_TRUE(probe_->nothing_started(sub, 0));
    // The server still takes a well-formed chunked body, with an extension and a plain trailer.
    raw_connection c(port_);
    ASSERT_TRUE(c.connected());
    ASSERT_TRUE(c.send(signed_head("{}", fresh_webhook_id()) +
                       "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                       "2;note=\"ok\"\r\n{}\r\n0\r\nX-Checksum: 1\r\n\r\n"));
    c.read_until_closed(10s);
    EXPECT_EQ(status_of(c.received()), 202) << c.received();
    EXPECT_TRUE(probe_->runs_started(sub, 1));
}

TEST_F(HttpFramingTest, AMalformedWebhookHeaderIs400AndStillRecorded) {
    // Correctly signed, but a webhook-id shorter than the contract's 16: the sender's request is
    // malformed (400, naming the header), not forged (401); the refusal is recorded alike.
    auto send = [this](const std::string& request) {
        raw_connection c(port_);
        EXPECT_TRUE(c.connected());
        EXPECT_TRUE(c.send(request));
        c.read_until_closed(10s);
        return c.received();
    };
    const std::string body = R"({"order":2})";
    auto short_id = send(signed_ingest(body, "msg_short", "Connection: close\r\n"));
    EXPECT_EQ(status_of(short_id), 400) << short_id;
    EXPECT_EQ(envelope_of(short_id).at("error"), "validation_error") << short_id;
    EXPECT_NE(short_id.find("webhook-id"), std::string::npos) << short_id;
    EXPECT_NE(short_id.find("X-Content-Type-Options: nosniff"), std::string::npos) << short_id;

    std::string bad_ts = "POST /v1/ingest/orders HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                         "webhook-id: msg_0123456789abcdef0123\r\nwebhook-timestamp: 12ab\r\n"
                         "webhook-signature: v1,AAAA\r\nContent-Length: " +
                         std::to_string(body.size()) + "\r\n\r\n" + body;
    auto ts = send(bad_ts);
    EXPECT_EQ(status_of(ts), 400) << ts;
    EXPECT_NE(ts.find("webhook-timestamp"), std::string::npos) << ts;

    // A forged signature on well-formed headers is still 401.
    auto forged = send("POST /v1/ingest/orders HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                       "webhook-id: msg_0123456789abcdef0124\r\nwebhook-timestamp: " +
                       std::to_string(std::time(nullptr)) +
                       "\r\nwebhook-signature: v1,AAAA\r\nContent-Length: " +
                       std::to_string(body.size()) + "\r\n\r\n" + body);
    EXPECT_EQ(status_of(forged), 401) << forged;

    auto dead = json::parse(get("/v1/trigger-subscriptions/orders/dead-letters"));
    EXPECT_EQ(dead.at("deliveries").as_array().size(), 3u) << dead;
    auto subscription = json::parse(get("/v1/trigger-subscriptions/orders"));
    EXPECT_EQ(subscription.at("subscription").at("state"), "active") << subscription;
    EXPECT_TRUE(probe_->nothing_started(sub, 0));

    // No answer of ours is left to content sniffing: JSON, text and the API's errors alike.
    for (const std::string path : {"/healthz", "/metrics", "/v1/trigger-subscriptions/nope"}) {
        auto r = send("GET " + path + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer hk_probe\r\n"
                      "Connection: close\r\n\r\n");
        EXPECT_NE(r.find("X-Content-Type-Options: nosniff"), std::string::npos) << path << r;
    }
}

} // namespace
} // namespace wopbridge::testing::http_framing_test
