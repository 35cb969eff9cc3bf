// Thousands of malformed, truncated, oversized and wrongly-encoded requests against the real
// `wopbridge serve`: every answer is a 4xx with the closed error envelope {error, message,
// details?} (or the connection is closed for unparseable HTTP), the server stays up, no
// subscription changes state and no run starts.
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
#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace wopbridge::testing::request_robustness_test {
namespace {

constexpr const char* secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
constexpr const char* key = "hk_rob";

struct raw_answer {
    bool answered = false; // a status line arrived
    int status = 0;
    std::string headers;
    std::string body;
};

// One request on its own connection. The write side is shut after sending, so the server sees the
// end of a truncated request at once instead of waiting for its header timeout.
raw_answer exchange(int port, const std::string& bytes) {
    raw_answer out;
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
        return out;
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        ::close(fd);
        return out;
    }
    std::size_t sent = 0;
    while (sent < bytes.size()) {
        auto n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) {
            break; // the server answered early (413/431) and closed: read what it said
        }
        sent += static_cast<std::size_t>(n);
    }
    ::shutdown(fd, SHUT_WR);
    std::string in;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    char buf[16384];
    while (std::chrono::steady_clock::now() < until) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 200) <= 0) {
            continue;
        }
        auto n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) {
            break;
        }
        in.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    if (in.rfind("HTTP/1.1 ", 0) == 0 && in.size() >= 12) {
        out.answered = true;
        out.status = std::stoi(in.substr(9, 3));
        auto end = in.find("\r\n\r\n");
        out.headers = in.substr(0, end);
        out.body = end == std::string::npos ? std::string() : in.substr(end + 4);
    } else if (!in.empty()) {
        out.headers = in; // not HTTP: reported as a failure below
        out.answered = true;
    }
    return out;
}

std::string request(const std::string& method, const std::string& target,
                    const std::vector<std::string>& headers, const std::string& body,
                    bool with_length = true) {
    std::string r = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    for (const auto& h : headers) {
        r += h + "\r\n";
    }
    if (with_length) {
        r += "Content-Length: " + std::to_string(body.size()) + "\r\n";
    }
    r += "Connection: close\r\n\r\n" + body;
    return r;
}

class RequestRobustnessTest : public ::testing::Test {
  protected:
    void SetUp() override {
        std::ofstream out(dir_.file("wopbridge.yaml"));
        out << "server: {listen: \"127.0.0.1:0\", maxBodyBytes: 65536}\n"
               "auth:\n"
               "  apiKeys:\n"
               "    - {key: "
            << key
            << ", tenant: default, scopes: [webhooks:manage, runs:read]}\n"
               "store: {sqlite: {path: bridge.db}}\n"
               "hostKeyFile: host.key\n"
               "runs: {local: {workflows: [{id: conformance-noop}]}}\n"
               "subscriptions:\n"
               "  - {id: orders, source: webhook, workflowId: conformance-noop, signingSecret: \""
            << secret << "\"}\n";
    }

    // Checks one answer; returns a description of what is wrong, or "" when it is acceptable.
    static std::string judge(const raw_answer& a, bool may_close) {
        if (!a.answered) {
            return may_close ? "" : "no answer";
        }
        if (a.status < 400 || a.status > 499) {
            return "status " + std::to_string(a.status) + ": " + a.headers + "\n" + a.body;
        }
        boost::system::error_code ec;
        auto v = boost::json::parse(a.body, ec);
        if (ec || !v.is_object()) {
            return "not a JSON envelope: " + a.body;
        }
        const auto& o = v.as_object();
        for (const auto& kv : o) {
            if (kv.key() != "error" && kv.key() != "message" && kv.key() != "details") {
                return "extra envelope key: " + a.body;
            }
        }
        if (!o.contains("error") || !o.at("error").is_string() || !o.contains("message") ||
            !o.at("message").is_string() ||
            (o.contains("details") && !o.at("details").is_object())) {
            return "bad envelope: " + a.body;
        }
        return "";
    }

    std::string get(const std::string& url, const std::string& path) {
        http_call c;
        c.url = url + path;
        c.headers = {{"authorization", std::string("Bearer ") + key}};
        auto r = perform(c);
        return std::to_string(r.status) + " " + r.body;
    }

    temp_dir dir_;
};

TEST_F(RequestRobustnessTest, ThousandsOfBadRequestsGetA4xxEnvelopeAndChangeNothing) {
    serve_process serve;
    ASSERT_TRUE(serve.start(dir_.file("wopbridge.yaml"), dir_.file("serve.log"))) << serve.error;
    const int port = std::stoi(serve.url().substr(serve.url().rfind(':') + 1));
    const std::string sub_before = get(serve.url(), "/v1/trigger-subscriptions/orders");
    ASSERT_EQ(sub_before.substr(0, 3), "200") << sub_before;
    const std::string auth = std::string("Authorization: Bearer ") + key;

    struct probe {
        std::string bytes;
        bool may_close; // unparseable HTTP: closing the connection is an answer
        std::string what;
    };
    std::vector<probe> probes;
    std::mt19937 rng(20261130);
    auto random_bytes = [&](std::size_t n) {
        std::string s(n, '\0');
        for (auto& c : s) {
            c = static_cast<char>(rng() & 0xff);
        }
        return s;
    };

    // 1. Not HTTP at all, and HTTP cut off at every byte of a valid signed ingest.
    for (int i = 0; i < 1200; ++i) {
        probes.push_back({random_bytes(1 + rng() % 2048), true, "garbage"});
    }
    const std::string good_body = R"({"order":42})";
    std::string signed_ingest;
    {
        std::vector<std::string> h{"Content-Type: application/json"};
        for (const auto& [k, v] : standard_webhook_headers(secret, "msg_never_complete",
                                                           std::time(nullptr), good_body)) {
            h.push_back(k + ": " + v);
        }
        signed_ingest = request("POST", "/v1/ingest/orders", h, good_body);
    }
    for (std::size_t cut = 1; cut < signed_ingest.size(); cut += 1) {
        probes.push_back(
            {signed_ingest.substr(0, cut), true, "truncated at " + std::to_string(cut)});
    }
    // Garbage inside otherwise well-formed request lines and headers.
    for (const char* line :
         {"GET / HTTP/9.9", "GET /healthz HTTP/1.1 extra", "G\x01T / HTTP/1.1", "GET  HTTP/1.1",
          "POST /v1/ingest/orders HTTP/1.1\r\nContent-Length: -5",
          "POST /v1/ingest/orders HTTP/1.1\r\nContent-Length: 12abc",
          "POST /v1/ingest/orders HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz",
          "GET /healthz HTTP/1.1\r\nBad Header: x", "GET /healthz HTTP/1.1\r\n:x"}) {
        probes.push_back({std::string(line) + "\r\n\r\n", true, line});
    }

    // 2. Wrong methods on every kind of path.
    for (const char* m : {"PUT", "TRACE", "OPTIONS", "CONNECT", "PROPFIND", "BREW"}) {
        for (const char* path :
             {"/v1/trigger-subscriptions", "/v1/trigger-subscriptions/orders", "/v1/runs/run_x",
              "/healthz", "/.well-known/openwop", "/metrics"}) {
            probes.push_back({request(m, path, {auth}, ""), false, std::string(m) + " " + path});
        }
    }
    for (const char* path : {"/v1/ingest/orders", "/v1/ingest/orders/extra/path"}) {
        probes.push_back({request("DELETE", path, {}, ""), false, std::string("DELETE ") + path});
    }

    // 3. Bad JSON, wrong content types and invalid UTF-8 on every body-taking management route.
    const std::vector<std::string> bad_bodies = {
        "",
        "{",
        "}",
        "[]",
        "null",
        "42",
        "\"str\"",
        "{\"source\":",
        "{\"source\":\"webhook\"",
        "{\"source\":\"webhook\",\"workflowId\":\"\xff\xfe\"}",
        "{\"source\":\"\xc3\x28\"}",
        "{\"source\":\"nope\",\"workflowId\":\"conformance-noop\"}",
        "{\"source\":\"webhook\",\"workflowId\":\"not-declared\"}",
        "{\"source\":\"webhook\",\"workflowId\":42}",
        "{\"state\":\"exploded\"}",
        "{\"state\":null}",
        "{\"state\":\"paused\",\"state\":",
        std::string(60000, '['),
        "{\"a\":\"\\ud800\"}",
        "{\"source\":\"webhook\",\"workflowId\":\"conformance-noop\",\"bogus\":1,",
        std::string("{\"x\":\"") + std::string("\x00\x01\x02", 3) + "\"}",
    };
    const std::vector<std::string> content_types = {
        "Content-Type: application/json",
        "Content-Type: text/plain",
        "Content-Type: application/x-www-form-urlencoded",
        "Content-Type: multipart/form-data",
        "Content-Type: application/json; charset=latin1",
        "Content-Type: \xff\xfe"};
    for (const auto& body : bad_bodies) {
        for (const auto& ct : content_types) {
            probes.push_back({request("POST", "/v1/trigger-subscriptions", {auth, ct}, body), false,
                              "register " + ct});
            probes.push_back(
                {request("PATCH", "/v1/trigger-subscriptions/orders", {auth, ct}, body), false,
                 "patch " + ct});
            probes.push_back({request("POST", "/v1/webhooks", {auth, ct}, body), false, "webhook"});
            probes.push_back(
                {request("POST", "/v1/trigger-subscriptions/orders/dead-letters/replay", {auth, ct},
                         body),
                 false, "bulk replay " + ct});
        }
    }
    // A well-formed registration body under a non-JSON content type is refused too.
    for (const std::string ct :
         {"Content-Type: text/plain", "Content-Type: application/x-www-form-urlencoded",
          "Content-Type: multipart/form-data", "Content-Type: \xff\xfe"}) {
        probes.push_back({request("POST", "/v1/trigger-subscriptions", {auth, ct},
                                  R"({"source":"webhook","workflowId":"conformance-noop"})"),
                          false, "valid body as " + ct});
        probes.push_back({request("PATCH", "/v1/trigger-subscriptions/orders", {auth, ct},
                                  R"({"state":"paused"})"),
                          false, "pause as " + ct});
    }

    // 4. Huge headers, oversized bodies (declared and sent).
    for (std::size_t n : {17000u, 40000u, 100000u}) {
        probes.push_back({request("GET", "/healthz", {"X-Big: " + std::string(n, 'a')}, ""), false,
                          "huge header"});
        probes.push_back({request("GET", "/v1/trigger-subscriptions",
                                  {auth, "Cookie: " + std::string(n, 'c')}, ""),
                          false, "huge cookie"});
        std::vector<std::string> many;
        for (std::size_t i = 0; i < n / 5; ++i) {
            many.push_back("X-H" + std::to_string(i) + ": v");
        }
        probes.push_back({request("GET", "/healthz", many, ""), false, "many headers"});
    }
    probes.push_back({request("GET", "/" + std::string(20000, 'p'), {}, ""), false, "huge target"});
    for (std::size_t n : {65537u, 200000u, 1000000u}) {
        probes.push_back({request("POST", "/v1/ingest/orders", {"Content-Type: application/json"},
                                  std::string(n, 'b')),
                          false, "oversized ingest"});
        probes.push_back({request("POST", "/v1/trigger-subscriptions", {auth}, std::string(n, ' ')),
                          false, "oversized management"});
    }
    probes.push_back(
        {"POST /v1/ingest/orders HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\n", false,
         "declared oversized"});

    // 5. Bad signatures: missing, malformed, stale, for another body, wrong secret.
    const std::int64_t now = std::time(nullptr);
    for (int i = 0; i < 240; ++i) {
        const std::string body = R"({"order":)" + std::to_string(i) + "}";
        const std::string id = "msg_bad_" + std::to_string(i);
        std::vector<std::vector<std::string>> variants;
        variants.push_back({});
        variants.push_back({"webhook-id: " + id, "webhook-timestamp: " + std::to_string(now),
                            "webhook-signature: v1,AAAA"});
        variants.push_back(
            {"webhook-id: " + id, "webhook-timestamp: yesterday", "webhook-signature: v1,@@@"});
        variants.push_back(
            {"webhook-id: " + id, "webhook-timestamp: " + std::to_string(now - 86400),
             "webhook-signature: " + sign_standard_webhook(secret, id, now - 86400, body)});
        variants.push_back(
            {"webhook-id: " + id, "webhook-timestamp: " + std::to_string(now),
             "webhook-signature: " + sign_standard_webhook(secret, id, now, "other")});
        variants.push_back(
            {"webhook-id: " + id, "webhook-timestamp: " + std::to_string(now),
             "webhook-signature: " +
                 sign_standard_webhook("whsec_c2VjcmV0c2VjcmV0c2VjcmV0", id, now, body)});
        const auto& v = variants[static_cast<std::size_t>(i) % variants.size()];
        std::vector<std::string> h = v;
        h.push_back(i % 2 ? "Content-Type: application/json" : "Content-Type: text/xml");
        probes.push_back({request("POST", "/v1/ingest/orders", h, body), false, "bad signature"});
    }

    // 6. Bad ids, bad credentials and bad query parameters on every route shape.
    for (const char* id : {"does-not-exist", "%00", "%zz", "..%2F..%2Fetc", "%C3%28", "a%20b",
                           "\xff", "orders%2Fx"}) {
        const std::string i(id);
        for (const std::string& path :
             {"/v1/trigger-subscriptions/" + i, "/v1/trigger-subscriptions/" + i + "/deliveries",
              "/v1/trigger-subscriptions/" + i + "/dead-letters", "/v1/runs/" + i,
              "/v1/runs/" + i + "/events/poll?timeout=1", "/v1/replay-jobs/" + i}) {
            probes.push_back({request("GET", path, {auth}, ""), false, "bad id " + path});
        }
        probes.push_back({request("POST", "/v1/ingest/" + i, {}, "{}"), false, "ingest bad id"});
        probes.push_back(
            {request("DELETE", "/v1/webhooks/" + i, {auth}, ""), false, "del webhook"});
    }
    probes.push_back(
        {request("GET", "/v1/trigger-subscriptions/" + std::string(5000, 'i'), {auth}, ""), false,
         "long id"});
    for (const char* q : {"limit=-1", "limit=0", "limit=abc", "limit=99999999999999999999",
                          "cursor=%%%", "cursor=not-a-cursor", "limit=1&limit=2&cursor=\xff"}) {
        probes.push_back(
            {request("GET", std::string("/v1/trigger-subscriptions/orders/dead-letters?") + q,
                     {auth}, ""),
             false, std::string("query ") + q});
        probes.push_back(
            {request("GET", std::string("/v1/trigger-subscriptions/orders/deliveries?") + q, {auth},
                     ""),
             false, std::string("query ") + q});
    }
    for (const char* a : {"Authorization: Bearer", "Authorization: Bearer wrong",
                          "Authorization: Basic eDp5", "Authorization: bearer  hk_rob x",
                          "Authorization: \xff\xfe", "Authorization: Bearer hk_rob\x01"}) {
        probes.push_back({request("GET", "/v1/trigger-subscriptions", {a}, ""), false, a});
        probes.push_back(
            {request("PATCH", "/v1/trigger-subscriptions/orders", {a}, R"({"state":"paused"})"),
             false, a});
    }

    const auto started = std::chrono::steady_clock::now();
    std::map<int, int> by_status;
    int closed = 0;
    std::vector<std::string> failures;
    for (const auto& p : probes) {
        auto a = exchange(port, p.bytes);
        if (auto why = judge(a, p.may_close); !why.empty()) {
            failures.push_back(p.what + ": " + why);
        }
        if (a.answered) {
            ++by_status[a.status];
        } else {
            ++closed;
        }
    }
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    std::string summary;
    for (const auto& [s, n] : by_status) {
        summary += " " + std::to_string(s) + "=" + std::to_string(n);
    }
    std::printf("[ robustness ] %zu requests in %.2f s:%s closed=%d\n", probes.size(), took,
                summary.c_str(), closed);
    EXPECT_GE(probes.size(), 2000u);
    EXPECT_TRUE(failures.empty()) << failures.size() << " bad answers; first: "
                                  << (failures.empty() ? "" : failures.front());

    // Still up; nothing changed; nothing started.
    http_call health;
    health.url = serve.url() + "/healthz";
    EXPECT_EQ(perform(health).status, 200);
    // The subscription record itself (state, breaker) is unchanged.
    auto record_of = [](const std::string& reply) {
        return boost::json::serialize(boost::json::parse(reply.substr(4)).at("subscription"));
    };
    EXPECT_EQ(record_of(get(serve.url(), "/v1/trigger-subscriptions/orders")),
              record_of(sub_before));
    auto list = get(serve.url(), "/v1/trigger-subscriptions");
    auto subs = boost::json::parse(list.substr(4)).as_object();
    EXPECT_EQ(subs.at("subscriptions").as_array().size(), 1u) << list;
    auto deliveries = get(serve.url(), "/v1/trigger-subscriptions/orders/deliveries");
    EXPECT_EQ(deliveries.find("\"runId\""), std::string::npos) << deliveries;
    auto metrics = get(serve.url(), "/metrics");
    EXPECT_EQ(metrics.find("outcome=\"delivered\""), std::string::npos) << metrics;

    serve.signal(SIGTERM);
    EXPECT_EQ(serve.wait_exit(), 0) << read_text_file(dir_.file("serve.log"));
}

} // namespace
} // namespace wopbridge::testing::request_robustness_test
