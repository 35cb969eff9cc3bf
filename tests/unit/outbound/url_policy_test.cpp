#include "outbound/url_policy.hpp"

#include <gtest/gtest.h>

#include <string>

namespace wopbridge::outbound {
namespace {

class UrlPolicyTest : public ::testing::Test {
protected:
    bool accepted(const std::string& url, bool loopback = false) {
        auto r = check_webhook_url(url, loopback);
        if (!r) {
            EXPECT_EQ(r.error().code, errc::invalid_argument) << url;
            EXPECT_FALSE(r.error().message.empty()) << url;
            EXPECT_EQ(r.error().message.find(url), std::string::npos) << "reason echoes the URL";
        }
        return r.has_value();
    }
};

TEST_F(UrlPolicyTest, AcceptsPublicHttpsUrls) {
    EXPECT_TRUE(accepted("https://hooks.example.com/openwop"));
    EXPECT_TRUE(accepted("https://hooks.example.com:8443/x?y=1"));
    EXPECT_TRUE(accepted("https://93.184.216.34/hook"));
    EXPECT_TRUE(accepted("https://[2606:2800:220:1:248:1893:25c8:1946]/hook"));
}

TEST_F(UrlPolicyTest, RefusesTheContractList) {
    for (const char* url : {
             "http://hooks.example.com/x",          // non-https
             "ftp://hooks.example.com/x",
             "https://10.1.2.3/x",                  // 10/8
             "https://172.16.0.1/x",                // 172.16/12
             "https://172.31.255.255/x",
             "https://192.168.1.1/x",               // 192.168/16
             "https://127.0.0.1/x",                 // 127/8
             "https://127.9.9.9/x",
             "https://[::1]/x",                     // ::1
             "https://169.254.10.10/x",             // 169.254/16
             "https://169.254.169.254/latest/meta-data",
             "https://[fe80::1]/x",                 // fe80::/10
             "https://[fc00::1]/x",                 // fc00::/7
             "https://[fd12:3456::1]/x",
             "https://[::ffff:10.0.0.1]/x",         // IPv4-mapped private
             "https://metadata.google.internal/x",
             "https://METADATA.GOOGLE.INTERNAL./x",
             "https://localhost/x",
             "https://localhost:8443/x",
             "https://metadata/x",
             "https://user:pw@hooks.example.com/x", // credentials in the URL
             "not a url",
         }) {
        EXPECT_FALSE(accepted(url)) << url;
    }
}

// IPv6 spellings of the refused IPv4 ranges, and the other IPv6 local ranges: each used to pass the
// registration check and then fail only at delivery (or reach the destination through a relay).
TEST_F(UrlPolicyTest, RefusesIpv6FormsOfForbiddenDestinations) {
    for (const char* url : {
             "https://[::127.0.0.1]/x",         // IPv4-compatible loopback
             "https://[::7f00:1]/x",            // the same, in hex
             "https://[::10.0.0.1]/x",          // IPv4-compatible private
             "https://[::169.254.169.254]/x",   // IPv4-compatible link-local (metadata)
             "https://[::0.0.0.0]/x",           // IPv4-compatible unspecified
             "https://[::ffff:127.0.0.1]/x",    // IPv4-mapped loopback
             "https://[::FFFF:7F00:1]/x",
             "https://[::ffff:192.168.0.1]/x",  // IPv4-mapped private
             "https://[::ffff:169.254.1.1]/x",  // IPv4-mapped link-local
             "https://[::ffff:0.0.0.0]/x",      // IPv4-mapped unspecified
             "https://[::ffff:0:127.0.0.1]/x",  // IPv4-translated loopback
             "https://[64:ff9b::10.0.0.1]/x",   // NAT64 of a private address
             "https://[64:ff9b:1::1]/x",        // local-use NAT64
             "https://[2002:7f00:1::]/x",       // 6to4 of loopback
             "https://[2002:c0a8:101::1]/x",    // 6to4 of 192.168.1.1
             "https://[0:0:0:0:0:0:0:1]/x",     // ::1 spelled out
             "https://[::]/x",                  // unspecified
             "https://[fe80::1%25eth0]/x",      // link-local with a zone
             "https://[febf::1]/x",             // top of fe80::/10
             "https://[fec0::1]/x",             // site-local
             "https://[fdff:ffff::1]/x",        // unique-local
             "https://[100::1]/x",              // discard-only
         }) {
        EXPECT_FALSE(accepted(url)) << url;
    }
    // The embedded address decides: public IPv4 destinations in those forms stay allowed.
    EXPECT_TRUE(accepted("https://[::ffff:93.184.216.34]/hook"));
    EXPECT_TRUE(accepted("https://[64:ff9b::93.184.216.34]/hook"));
    EXPECT_TRUE(accepted("https://[2002:5db8:d822::1]/hook"));
    // And at delivery, for an address a name resolved to.
    EXPECT_TRUE(is_forbidden_address("::127.0.0.1"));
    EXPECT_TRUE(is_forbidden_address("::ffff:10.1.2.3"));
    EXPECT_FALSE(is_forbidden_address("::ffff:8.8.8.8"));
}

// Short and numeric IPv4 spellings resolve to the address they encode (inet_aton): each used to
// pass registration as a "name" and fail only at delivery.
TEST_F(UrlPolicyTest, RefusesNumericHostsNotWrittenAsADottedQuad) {
    for (const char* url : {
             "https://127.1/x",
             "https://127.0.1/x",
             "https://0x7f.0.0.1/x",
             "https://0X7F000001/x",
             "https://017700000001/x",
             "https://2130706433/x",
             "https://10.1/x",
             "https://93.184.216.34.1/x", // five parts
             "https://hooks.example.123/x",
             "https://hooks.example.0x1f/x",
         }) {
        EXPECT_FALSE(check_webhook_url(url, false)) << url;
    }
    auto refused = check_webhook_url("https://127.1/x", false);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().message, "url host is a numeric address not written as a.b.c.d");
    EXPECT_TRUE(accepted("https://93.184.216.34/hook"));
    EXPECT_TRUE(accepted("https://hooks.example.com/hook"));
    EXPECT_TRUE(accepted("https://123.example.com/hook")); // a number, but not the last label
    EXPECT_TRUE(accepted("https://hooks.example.0xyz/hook"));
}

// Boost.URL 1.81 reads "127.0.0.1.nip.io" as host 127.0.0.1 and path ".nip.io...": the name is
// read whole instead, and then meets the same checks as any other name (its addresses are checked
// when it is resolved, at delivery time).
TEST_F(UrlPolicyTest, NamesThatStartLikeAnAddressAreNames) {
    auto t = check_webhook_url("https://127.0.0.1.nip.io:8443/h", false);
    ASSERT_TRUE(t) << t.error().message;
    EXPECT_EQ(t->host, "127.0.0.1.nip.io");
    EXPECT_EQ(t->port, 8443);
    EXPECT_FALSE(t->host_is_ip);
    auto plain = check_webhook_url("https://10.0.0.1.example.com?x=1", false);
    ASSERT_TRUE(plain) << plain.error().message;
    EXPECT_EQ(plain->host, "10.0.0.1.example.com");
    EXPECT_EQ(plain->port, 443);
    EXPECT_FALSE(accepted("https://1.2.3.4.5/x"));      // ends in a number: not a name
    EXPECT_FALSE(accepted("https://1.2.3.4.nip.io:0/x")); // port 0
    EXPECT_FALSE(accepted("https://1.2.3.4.ni%70.io/x"));
    EXPECT_FALSE(accepted("https://1.2.3.4.nip.io:99999/x"));
    EXPECT_FALSE(accepted("http://127.0.0.1.nip.io:8080/x", true)); // loopback http: the literal only
}

TEST_F(UrlPolicyTest, LoopbackHttpOnlyWithTheSwitchAndOnlyForOneTwoSevenZeroZeroOne) {
    EXPECT_FALSE(accepted("http://127.0.0.1:8080/hook", false));
    EXPECT_TRUE(accepted("http://127.0.0.1:8080/hook", true));
    EXPECT_FALSE(accepted("http://localhost:8080/hook", true));
    EXPECT_FALSE(accepted("http://10.0.0.1:8080/hook", true));
    EXPECT_FALSE(accepted("https://127.0.0.1:8443/hook", true)); // the exception is http loopback only
}

TEST_F(UrlPolicyTest, DeliveryTimeValidationRefusesPrivateAddresses) {
    webhook_target t{"https", "10.0.0.7", 443, true};
    auto refused = resolve_validated(t, false);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().message, "address-refused");
    EXPECT_EQ(refused.error().code, errc::invalid_argument);
    webhook_target loop{"http", "127.0.0.1", 8080, true};
    EXPECT_FALSE(resolve_validated(loop, false));
    auto ok = resolve_validated(loop, true);
    ASSERT_TRUE(ok);
    EXPECT_EQ(*ok, "127.0.0.1");
    // A name resolving to loopback is refused even with the loopback switch on.
    webhook_target named{"http", "localhost", 8080, false};
    EXPECT_FALSE(resolve_validated(named, true));
}

TEST_F(UrlPolicyTest, ForbiddenAddressTable) {
    EXPECT_TRUE(is_forbidden_address("0.0.0.0"));
    EXPECT_TRUE(is_forbidden_address("172.20.1.1"));
    EXPECT_FALSE(is_forbidden_address("172.32.0.1"));
    EXPECT_FALSE(is_forbidden_address("8.8.8.8"));
    EXPECT_TRUE(is_forbidden_address("::"));
    EXPECT_FALSE(is_forbidden_address("2001:4860:4860::8888"));
    EXPECT_TRUE(is_forbidden_address("garbage"));
}

} // namespace
} // namespace wopbridge::outbound
