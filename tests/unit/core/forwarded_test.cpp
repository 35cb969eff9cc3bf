// Which client a request through a reverse proxy came from, and which URL it called: believed
// only from a trusted peer, walked from the nearest hop (RFC 7239 §5.2, §7.4).
#include "core/forwarded.hpp"

#include <gtest/gtest.h>

namespace wopbridge::forwarded_test {
namespace {

std::vector<address_block> blocks(std::initializer_list<const char*> texts) {
    std::vector<address_block> out;
    for (const char* t : texts) {
        auto b = parse_address_block(t);
        EXPECT_TRUE(b.has_value()) << t;
        if (b) {
            out.push_back(*b);
        }
    }
    return out;
}

using headers = std::vector<std::pair<std::string, std::string>>;

TEST(ForwardedTest, AddressBlocksMatchTheirOwnAddressesOnly) {
    auto b = blocks({"10.0.0.0/8", "192.0.2.7", "fd00::/8", "::1"});
    EXPECT_TRUE(address_in("10.200.3.4", b));
    EXPECT_FALSE(address_in("11.0.0.1", b));
    EXPECT_TRUE(address_in("192.0.2.7", b));
    EXPECT_FALSE(address_in("192.0.2.8", b));
    EXPECT_TRUE(address_in("fd12:3456::1", b));
    EXPECT_FALSE(address_in("fe80::1", b));
    EXPECT_TRUE(address_in("::1", b));
    EXPECT_TRUE(address_in("::ffff:10.1.2.3", b)); // an IPv4 peer on a dual-stack socket
    EXPECT_FALSE(address_in("not an address", b));
    for (const char* bad : {"", "10.0.0.0/33", "10.0.0.0/", "10.0.0/8", "fd00::/129", "host.example",
                            "10.0.0.0/8x"}) {
        EXPECT_FALSE(parse_address_block(bad).has_value()) << bad;
    }
}

TEST(ForwardedTest, AnUntrustedPeersHeadersChangeNothing) {
    auto o = resolve_client("203.0.113.9",
                            headers{{"x-forwarded-for", "198.51.100.1"}, {"x-forwarded-proto", "https"},
                                    {"host", "hooks.example.com"}},
                            blocks({"127.0.0.1"}));
    EXPECT_EQ(o.address, "203.0.113.9");
    EXPECT_EQ(o.public_base, "");
    EXPECT_EQ(resolve_client("127.0.0.1", headers{{"x-forwarded-for", "198.51.100.1"}}, {}).address,
              "127.0.0.1");
}

TEST(ForwardedTest, XForwardedForIsWalkedFromTheNearestHopPastOurOwnProxies) {
    auto trusted = blocks({"127.0.0.1", "10.0.0.0/8"});
    // A client may send its own X-Forwarded-For; the proxies append, so what they saw is on the right.
    auto o = resolve_client("127.0.0.1",
                            headers{{"x-forwarded-for", "6.6.6.6, 198.51.100.1, 10.1.1.1"},
                                    {"x-forwarded-proto", "https"},
                                    {"host", "hooks.example.com"}},
                            trusted);
    EXPECT_EQ(o.address, "198.51.100.1");
    EXPECT_EQ(o.public_base, "https://hooks.example.com");
    // Two headers are one list; X-Forwarded-Host wins over Host; ports are not addresses.
    o = resolve_client("127.0.0.1",
                       headers{{"x-forwarded-for", "198.51.100.2:5555"}, {"x-forwarded-for", "10.0.0.2"},
                               {"x-forwarded-proto", "HTTPS"}, {"x-forwarded-host", "public.example:8443"},
                               {"host", "backend:8080"}},
                       trusted);
    EXPECT_EQ(o.address, "198.51.100.2");
    EXPECT_EQ(o.public_base, "https://public.example:8443");
    // A garbled hop ends the walk at the last hop we could read; a proto we do not know is ignored.
    o = resolve_client("127.0.0.1",
                       headers{{"x-forwarded-for", "198.51.100.3, garbage"}, {"x-forwarded-proto", "gopher"}},
                       trusted);
    EXPECT_EQ(o.address, "127.0.0.1");
    EXPECT_EQ(o.public_base, "");
}

TEST(ForwardedTest, Rfc7239ForwardedNamesTheClientAndTheEdgesOwnProtoAndHost) {
    auto trusted = blocks({"127.0.0.1", "10.0.0.0/8"});
    auto o = resolve_client(
        "127.0.0.1",
        headers{{"forwarded", R"(for="[2001:db8:cafe::17]:4711";proto=https;host=hooks.example.com, )"
                              R"(for=10.0.0.3;proto=http;host=internal)"},
                {"x-forwarded-for", "6.6.6.6"}}, // Forwarded wins when both are sent
        trusted);
    EXPECT_EQ(o.address, "2001:db8:cafe::17");
    EXPECT_EQ(o.public_base, "https://hooks.example.com");
    o = resolve_client("127.0.0.1", headers{{"forwarded", "for=unknown"}}, trusted);
    EXPECT_EQ(o.address, "127.0.0.1");
    o = resolve_client("127.0.0.1", headers{{"forwarded", R"(for=192.0.2.60;host="a b")"}}, trusted);
    EXPECT_EQ(o.address, "192.0.2.60");
    EXPECT_EQ(o.public_base, ""); // no proto, and not a host
}

TEST(ForwardedTest, AProxyThatOnlySaysHowItWasCalledStillGivesThePublicUrl) {
    auto o = resolve_client("127.0.0.1", headers{{"x-forwarded-proto", "https"}, {"host", "hooks.example.com"}},
                            blocks({"127.0.0.1"}));
    EXPECT_EQ(o.address, "127.0.0.1");
    EXPECT_EQ(o.public_base, "https://hooks.example.com");
}

} // namespace
} // namespace wopbridge::forwarded_test
