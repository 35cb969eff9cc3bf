// `server.tls`: the real process serves HTTPS with a throwaway certificate, and a client that trusts
// that certificate (curl with --cacert) talks to it; plain HTTP to the TLS port gets no answer.
#include "support/serve_process.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace wopbridge::testing::serve_tls_test {
namespace {

std::string run_capture(const std::string& cmd) {
    std::string out;
    FILE* p = ::popen(cmd.c_str(), "r");
    if (p == nullptr) {
        return out;
    }
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) {
        out.append(buf, n);
    }
    ::pclose(p);
    return out;
}

class ServeTlsTest : public ::testing::Test {
protected:
    temp_dir dir_;
};

TEST_F(ServeTlsTest, ServesHttpsWithTheConfiguredCertificate) {
    if (std::system("command -v openssl >/dev/null 2>&1 && command -v curl >/dev/null 2>&1") != 0) {
        GTEST_SKIP() << "openssl and curl are needed (scripts/setup-debian.sh installs them)";
    }
    const std::string d = dir_.path().string();
    ASSERT_EQ(std::system(("openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 "
                           "-addext subjectAltName=IP:127.0.0.1 -keyout " +
                           d + "/key.pem -out " + d + "/cert.pem >/dev/null 2>&1")
                              .c_str()),
              0);
    std::ofstream(dir_.file("wopbridge.yaml"))
        << "server: {listen: \"127.0.0.1:0\", tls: {certFile: cert.pem, keyFile: key.pem}}\n"
           "auth: {apiKeys: [{key: hk_tls, tenant: default, scopes: [webhooks:manage]}]}\n"
           "store: {sqlite: {path: bridge.db}}\n"
           "hostKeyFile: host.key\n"
           "runs: {local: {workflows: [{id: conformance-noop}]}}\n";
    serve_process serve;
    ASSERT_TRUE(serve.start(dir_.file("wopbridge.yaml"), dir_.file("serve.log"))) << serve.error;
    const std::string https = "https" + serve.url().substr(4);

    std::string ok = run_capture("curl -s -o /dev/null -w '%{http_code}' --cacert " + d +
                                 "/cert.pem " + https + "/healthz");
    EXPECT_EQ(ok, "200");
    std::string discovery =
        run_capture("curl -s --cacert " + d + "/cert.pem " + https + "/.well-known/openwop");
    EXPECT_NE(discovery.find("\"protocolVersion\":\"1.0\""), std::string::npos) << discovery;
    // Without trusting the certificate the handshake is refused by the client...
    std::string untrusted =
        run_capture("curl -s -o /dev/null -w '%{http_code}' " + https + "/healthz");
    EXPECT_EQ(untrusted, "000");
    // ...and plain HTTP on the TLS port is not served as HTTP.
    std::string plain = run_capture("curl -s -m 5 -o /dev/null -w '%{http_code}' " + serve.url() +
                                    "/healthz");
    EXPECT_NE(plain, "200");

    serve.signal(SIGTERM);
    EXPECT_EQ(serve.wait_exit(), 0);
}

} // namespace
} // namespace wopbridge::testing::serve_tls_test
