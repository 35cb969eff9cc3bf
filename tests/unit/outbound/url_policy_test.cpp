#include "outbound/url_policy.hpp"

#include <gtest/gtest.h>

#include <string>

namespace wopbridge::outbound {
namespace {

class UrlPolicyTest : public ::testing::Test {
protected:
    bool accepted(const std::string& url, bool loopback = false) {
        std::string why;
        auto r = check_webhook_url(url, loopback, why);
        if (!r) {
            EXPECT_FALSE(why.empty()) << url;
            EXPECT_EQ(why.find(url), std::string::npos) << "reason echoes the URL";
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

TEST_F(UrlPolicyTest, LoopbackHttpOnlyWithTheSwitchAndOnlyForOneTwoSevenZeroZeroOne) {
    EXPECT_FALSE(accepted("http://127.0.0.1:8080/hook", false));
    EXPECT_TRUE(accepted("http://127.0.0.1:8080/hook", true));
    EXPECT_FALSE(accepted("http://localhost:8080/hook", true));
    EXPECT_FALSE(accepted("http://10.0.0.1:8080/hook", true));
    EXPECT_FALSE(accepted("https://127.0.0.1:8443/hook", true)); // the exception is http loopback only
}

TEST_F(UrlPolicyTest, DeliveryTimeValidationRefusesPrivateAddresses) {
    std::string why;
    webhook_target t{"https", "10.0.0.7", 443, true};
    EXPECT_FALSE(resolve_validated(t, false, why));
    EXPECT_EQ(why, "address-refused");
    webhook_target loop{"http", "127.0.0.1", 8080, true};
    EXPECT_FALSE(resolve_validated(loop, false, why));
    auto ok = resolve_validated(loop, true, why);
    ASSERT_TRUE(ok);
    EXPECT_EQ(*ok, "127.0.0.1");
    // A name resolving to loopback is refused even with the loopback switch on.
    webhook_target named{"http", "localhost", 8080, false};
    EXPECT_FALSE(resolve_validated(named, true, why));
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
