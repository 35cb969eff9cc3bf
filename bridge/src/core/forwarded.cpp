#include "core/forwarded.hpp"

#include "wopbridge/http_util.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>

namespace wopbridge {

namespace {

using forwarded_headers = std::vector<std::pair<std::string, std::string>>;

std::optional<std::array<std::uint8_t, 16>> address_bytes16(std::string_view text, bool& v4) {
    if (text.empty() || text.size() >= INET6_ADDRSTRLEN) {
        return std::nullopt;
    }
    char buf[INET6_ADDRSTRLEN] = {};
    std::memcpy(buf, text.data(), text.size());
    std::array<std::uint8_t, 16> out{};
    in_addr a4{};
    if (::inet_pton(AF_INET, buf, &a4) == 1) {
        v4 = true;
        out[10] = 0xff;
        out[11] = 0xff;
        std::memcpy(out.data() + 12, &a4, 4);
        return out;
    }
    in6_addr a6{};
    if (::inet_pton(AF_INET6, buf, &a6) == 1) {
        v4 = false;
        std::memcpy(out.data(), &a6, 16);
        return out;
    }
    return std::nullopt;
}

bool block_contains(const std::array<std::uint8_t, 16>& a, const address_block& b) {
    int bits = b.prefix_bits;
    for (std::size_t i = 0; i < 16 && bits > 0; ++i, bits -= 8) {
        const std::uint8_t mask = bits >= 8 ? 0xff : static_cast<std::uint8_t>(0xff << (8 - bits));
        if ((a[i] & mask) != (b.bytes[i] & mask)) {
            return false;
        }
    }
    return true;
}

std::vector<std::string_view> split_unquoted(std::string_view s, char sep) {
    std::vector<std::string_view> out;
    std::size_t start = 0;
    bool quoted = false;
    for (std::size_t i = 0; i <= s.size(); ++i) {
        if (i < s.size() && s[i] == '"') {
            quoted = !quoted;
        }
        if (i == s.size() || (s[i] == sep && !quoted)) {
            out.push_back(http::trim_whitespace(s.substr(start, i - start)));
            start = i + 1;
        }
    }
    return out;
}

// "1.2.3.4", "1.2.3.4:80", "[v6]", "[v6]:80", "v6", with RFC 7239's quotes: the bare address.
std::optional<std::string> node_address(std::string_view node) {
    if (node.size() >= 2 && node.front() == '"' && node.back() == '"') {
        node = node.substr(1, node.size() - 2);
    }
    if (!node.empty() && node.front() == '[') {
        auto close = node.find(']');
        if (close == std::string_view::npos) {
            return std::nullopt;
        }
        node = node.substr(1, close - 1);
    } else if (std::count(node.begin(), node.end(), ':') == 1) {
        node = node.substr(0, node.find(':'));
    }
    bool v4 = false;
    if (!address_bytes16(node, v4)) {
        return std::nullopt;
    }
    return std::string(node);
}

// Every value of a repeatable list header, in order, as one comma list.
std::string joined_header(const forwarded_headers& headers, std::string_view name) {
    std::string out;
    for (const auto& [k, v] : headers) {
        if (k == name) {
            if (!out.empty()) {
                out += ',';
            }
            out += v;
        }
    }
    return out;
}

bool plausible_host(std::string_view h) {
    if (h.empty() || h.size() > 255) {
        return false;
    }
    return std::all_of(h.begin(), h.end(), [](unsigned char c) {
        return std::isalnum(c) || c == '.' || c == '-' || c == ':' || c == '[' || c == ']';
    });
}

std::string unquoted(std::string_view v) {
    if (v.size() >= 2 && v.front() == '"' && v.back() == '"') {
        v = v.substr(1, v.size() - 2);
    }
    return std::string(v);
}

struct forwarded_hop {
    std::string node;      // the for= value as sent
    std::string proto;     // what this hop's proxy was called with ("" = not said)
    std::string host;
};

} // namespace

std::optional<address_block> parse_address_block(std::string_view text) {
    address_block b;
    b.text = std::string(text);
    auto slash = text.find('/');
    bool v4 = false;
    auto bytes = address_bytes16(text.substr(0, slash), v4);
    if (!bytes) {
        return std::nullopt;
    }
    b.bytes = *bytes;
    const int width = v4 ? 32 : 128;
    int bits = width;
    if (slash != std::string_view::npos) {
        auto n = text.substr(slash + 1);
        auto [p, ec] = std::from_chars(n.data(), n.data() + n.size(), bits);
        if (n.empty() || ec != std::errc() || p != n.data() + n.size() || bits < 0 || bits > width) {
            return std::nullopt;
        }
    }
    b.prefix_bits = v4 ? bits + 96 : bits;
    return b;
}

bool address_in(std::string_view address, const std::vector<address_block>& blocks) {
    bool v4 = false;
    auto a = address_bytes16(address, v4);
    return a && std::any_of(blocks.begin(), blocks.end(),
                            [&](const address_block& b) { return block_contains(*a, b); });
}

namespace {

// RFC 7239: each element names a hop and what its proxy was called with.
std::vector<forwarded_hop> rfc7239_hops(const std::string& forwarded) {
    std::vector<forwarded_hop> hops;
    for (auto element : split_unquoted(forwarded, ',')) {
        forwarded_hop h;
        for (auto pair : split_unquoted(element, ';')) {
            auto eq = pair.find('=');
            if (eq == std::string_view::npos) {
                continue;
            }
            const auto key = http::to_lower(http::trim_whitespace(pair.substr(0, eq)));
            const auto value = http::trim_whitespace(pair.substr(eq + 1));
            if (key == "for") {
                h.node = std::string(value);
            } else if (key == "proto") {
                h.proto = http::to_lower(unquoted(value));
            } else if (key == "host") {
                h.host = unquoted(value);
            }
        }
        hops.push_back(std::move(h));
    }
    return hops;
}

// X-Forwarded-For lists the hops (or, absent, the peer is the only one); X-Forwarded-Proto and
// X-Forwarded-Host (else Host) describe the request the edge proxy received, whichever hop that is.
std::vector<forwarded_hop> x_forwarded_hops(const forwarded_headers& headers, std::string_view peer) {
    std::vector<forwarded_hop> hops;
    const std::string xff = joined_header(headers, "x-forwarded-for");
    for (auto node : split_unquoted(xff, ',')) {
        hops.push_back(forwarded_hop{std::string(node), {}, {}});
    }
    if (xff.empty()) {
        hops.push_back(forwarded_hop{std::string(peer), {}, {}});
    }
    auto first_of = [](std::optional<std::string_view> list) {
        return list ? std::string(http::trim_whitespace(split_unquoted(*list, ',').front())) : std::string();
    };
    auto host = http::find_header(headers, "x-forwarded-host");
    const std::string proto = http::to_lower(first_of(http::find_header(headers, "x-forwarded-proto")));
    const std::string edge_host = first_of(host ? host : http::find_header(headers, "host"));
    for (auto& h : hops) {
        h.proto = proto;
        h.host = edge_host;
    }
    return hops;
}

} // namespace

client_origin resolve_client(std::string_view peer, const forwarded_headers& headers,
                             const std::vector<address_block>& trusted) {
    client_origin out{std::string(peer), {}};
    if (trusted.empty() || !address_in(peer, trusted)) {
        return out;
    }
    const std::string forwarded = joined_header(headers, "forwarded");
    const auto hops = forwarded.empty() ? x_forwarded_hops(headers, peer) : rfc7239_hops(forwarded);
    // From the nearest hop outward: skip our own proxies; the first other address is the client.
    const forwarded_hop* edge = nullptr;
    for (auto it = hops.rbegin(); it != hops.rend(); ++it) {
        auto address = node_address(it->node);
        if (!address) {
            break;
        }
        out.address = *address;
        edge = &*it;
        if (!address_in(*address, trusted)) {
            break;
        }
    }
    if (edge != nullptr && (edge->proto == "http" || edge->proto == "https") &&
        plausible_host(edge->host)) {
        out.public_base = edge->proto + "://" + edge->host;
    }
    return out;
}

} // namespace wopbridge
