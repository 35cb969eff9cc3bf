#include "outbound/url_policy.hpp"

#include <boost/url/parse.hpp>

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstddef>
#include <cctype>
#include <cstdint>
#include <optional>
#include <string>

namespace wopbridge::outbound {
namespace {

std::string lower(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

bool forbidden_v4(const unsigned char* a) {
    return a[0] == 0 || a[0] == 10 || a[0] == 127 || (a[0] == 172 && (a[1] & 0xF0) == 16) ||
           (a[0] == 192 && a[1] == 168) || (a[0] == 169 && a[1] == 254) ||
           (a[0] == 100 && (a[1] & 0xC0) == 64) || a[0] >= 224;
}

bool all_zero(const unsigned char* a, std::size_t n) {
    return std::all_of(a, a + n, [](unsigned char c) { return c == 0; });
}

bool forbidden_v6(const unsigned char* a) {
    if (a[0] == 0xFE && (a[1] & 0xC0) == 0x80) {
        return true; // fe80::/10 link-local
    }
    if (a[0] == 0xFE && (a[1] & 0xC0) == 0xC0) {
        return true; // fec0::/10 site-local (deprecated, still routed inside some networks)
    }
    if ((a[0] & 0xFE) == 0xFC) {
        return true; // fc00::/7 unique-local
    }
    if (a[0] == 0xFF) {
        return true; // multicast
    }
    if (a[0] == 0x01 && a[1] == 0x00 && all_zero(a + 2, 6)) {
        return true; // 100::/64 discard-only
    }
    // The forms that carry an IPv4 destination are judged by that destination, so
    // [::127.0.0.1] or [::ffff:10.0.0.1] is refused exactly like 127.0.0.1 or 10.0.0.1.
    if (all_zero(a, 12)) {
        return forbidden_v4(a + 12); // ::/96 IPv4-compatible, which also covers :: and ::1
    }
    if (all_zero(a, 10) && a[10] == 0xFF && a[11] == 0xFF) {
        return forbidden_v4(a + 12); // ::ffff:0:0/96 IPv4-mapped
    }
    if (all_zero(a, 8) && a[8] == 0xFF && a[9] == 0xFF && a[10] == 0 && a[11] == 0) {
        return forbidden_v4(a + 12); // ::ffff:0:0:0/96 IPv4-translated (RFC 2765)
    }
    if (a[0] == 0x00 && a[1] == 0x64 && a[2] == 0xFF && a[3] == 0x9B) {
        if (all_zero(a + 4, 8)) {
            return forbidden_v4(a + 12); // 64:ff9b::/96 NAT64 well-known prefix
        }
        if (a[4] == 0x00 && a[5] == 0x01) {
            return true; // 64:ff9b:1::/48 local-use NAT64 (RFC 8215)
        }
    }
    if (a[0] == 0x20 && a[1] == 0x02) {
        return forbidden_v4(a + 2); // 2002::/16 6to4 relays to the embedded IPv4 address
    }
    return false;
}

bool is_loopback_literal(std::string_view host) { return host == "127.0.0.1"; }

// A host whose last label is a number is an IPv4 address to URL parsers and resolvers (127.1,
// 0x7f.0.0.1, 017700000001, 2130706433 all mean 127.0.0.1 to inet_aton): anything but the
// dotted-quad spelling is refused, so the policy never judges an address it did not parse.
bool ends_in_a_number(std::string_view host) {
    const auto dot = host.rfind('.');
    std::string_view last = dot == std::string_view::npos ? host : host.substr(dot + 1);
    if (last.empty()) {
        return false;
    }
    if (last.size() >= 2 && last[0] == '0' && (last[1] == 'x' || last[1] == 'X')) {
        last.remove_prefix(2);
        return std::all_of(last.begin(), last.end(),
                           [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; });
    }
    return std::all_of(last.begin(), last.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The authority's host and port as written: from after "scheme://" to the first "/", "?" or "#",
// after any userinfo. Boost.URL 1.81 takes the IPv4-looking start of a name ("127.0.0.1" of
// "127.0.0.1.nip.io", "1.2.3.4" of "1.2.3.4.5") as the host and the rest as a path; this reads
// the name whole, so the checks below see what a resolver would.
struct written_authority {
    std::string host;
    std::optional<std::uint16_t> port;
    bool valid = false;
};

written_authority authority_as_written(std::string_view url) {
    written_authority out;
    const auto scheme_end = url.find("://");
    if (scheme_end == std::string_view::npos) {
        return out;
    }
    auto auth = url.substr(scheme_end + 3);
    auth = auth.substr(0, auth.find_first_of("/?#"));
    if (auth.find('@') != std::string_view::npos || auth.empty() || auth.front() == '[') {
        return out; // credentials and IPv6 literals are Boost.URL's to read
    }
    std::string_view port_text;
    if (const auto colon = auth.rfind(':'); colon != std::string_view::npos) {
        port_text = auth.substr(colon + 1);
        auth = auth.substr(0, colon);
        if (port_text.empty() || port_text.size() > 5 ||
            !std::all_of(port_text.begin(), port_text.end(),
                         [](char c) { return c >= '0' && c <= '9'; })) {
            return out;
        }
        const auto n = std::stoul(std::string(port_text));
        if (n > 65535) {
            return out;
        }
        out.port = static_cast<std::uint16_t>(n);
    }
    // A DNS name: letters, digits, '-', '.', '_' (no percent-encoding, no sub-delims).
    const bool name_chars = !auth.empty() && std::all_of(auth.begin(), auth.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '.' ||
               c == '_';
    });
    if (!name_chars) {
        return out;
    }
    out.host = lower(auth);
    out.valid = true;
    return out;
}

} // namespace

bool is_forbidden_address(std::string_view ip) {
    std::string text(ip);
    unsigned char buf[16];
    if (inet_pton(AF_INET, text.c_str(), buf) == 1) {
        return forbidden_v4(buf);
    }
    if (inet_pton(AF_INET6, text.c_str(), buf) == 1) {
        return forbidden_v6(buf);
    }
    return true;
}

result<webhook_target, error_info> check_webhook_url(std::string_view url,
                                                     bool allow_loopback_http) {
    auto refuse = [](const char* reason) -> result<webhook_target, error_info> {
        return error_info{errc::invalid_argument, reason};
    };
    auto parsed = boost::urls::parse_absolute_uri(url);
    if (!parsed) {
        return refuse("url is not an absolute URI");
    }
    const auto path = parsed->encoded_path();
    // After an authority the path starts with "/" (RFC 3986 path-abempty). When Boost.URL says
    // otherwise it split a name that starts like an IPv4 address (authority_as_written).
    std::optional<written_authority> rewritten;
    if (!path.empty() && path.front() != '/') {
        auto written = authority_as_written(url);
        if (!written.valid) {
            return refuse("url is not an absolute URI");
        }
        rewritten = std::move(written);
    }
    webhook_target t;
    t.scheme = lower(parsed->scheme());
    if (parsed->has_userinfo()) {
        return refuse("url must not carry credentials");
    }
    std::string host = rewritten ? rewritten->host : lower(parsed->host_address());
    if (!host.empty() && host.front() == '[' && host.back() == ']') {
        host = host.substr(1, host.size() - 2);
    }
    while (!host.empty() && host.back() == '.') {
        host.pop_back(); // "localhost." is localhost
    }
    if (host.empty()) {
        return refuse("url has no host");
    }
    t.host = host;
    unsigned char buf[16];
    t.host_is_ip = inet_pton(AF_INET, host.c_str(), buf) == 1 ||
                   inet_pton(AF_INET6, host.c_str(), buf) == 1;
    if (rewritten) {
        if (rewritten->port && *rewritten->port == 0) {
            return refuse("url port is invalid");
        }
        t.port = rewritten->port.value_or(t.scheme == "http" ? 80 : 443);
    } else if (parsed->has_port()) {
        auto p = parsed->port_number();
        if (p == 0) {
            return refuse("url port is invalid");
        }
        t.port = p;
    } else {
        t.port = t.scheme == "http" ? 80 : 443;
    }
    const bool has_port = rewritten ? rewritten->port.has_value() : parsed->has_port();
    bool loopback_exception =
        allow_loopback_http && t.scheme == "http" && is_loopback_literal(host) && has_port;
    if (t.scheme != "https" && !loopback_exception) {
        return refuse("url must be https");
    }
    if (loopback_exception) {
        return t;
    }
    if (host == "localhost" || host.ends_with(".localhost") || host == "metadata" ||
        host == "metadata.google.internal") {
        return refuse("url host is not allowed");
    }
    if (!t.host_is_ip && ends_in_a_number(host)) {
        return refuse("url host is a numeric address not written as a.b.c.d");
    }
    if (t.host_is_ip && is_forbidden_address(host)) {
        return refuse("url address is not allowed");
    }
    if (!t.host_is_ip && host.find('.') == std::string::npos) {
        return refuse("url host must be a fully qualified name");
    }
    return t;
}

result<std::string, error_info> resolve_validated(const webhook_target& t,
                                                  bool allow_loopback_http) {
    auto allowed = [&](const std::string& ip) {
        if (allow_loopback_http && t.scheme == "http" && t.host_is_ip && ip == "127.0.0.1") {
            return true;
        }
        return !is_forbidden_address(ip);
    };
    if (t.host_is_ip) {
        if (!allowed(t.host)) {
            return error_info{errc::invalid_argument, "address-refused"};
        }
        return t.host;
    }
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    if (getaddrinfo(t.host.c_str(), nullptr, &hints, &res) != 0 || res == nullptr) {
        return error_info{errc::transient_failure, "dns-failure"};
    }
    std::vector<std::string> addresses;
    for (auto* p = res; p != nullptr; p = p->ai_next) {
        char text[INET6_ADDRSTRLEN] = {};
        if (p->ai_family == AF_INET) {
            inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(p->ai_addr)->sin_addr, text,
                      sizeof text);
        } else if (p->ai_family == AF_INET6) {
            inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(p->ai_addr)->sin6_addr, text,
                      sizeof text);
        } else {
            continue;
        }
        addresses.emplace_back(text);
    }
    freeaddrinfo(res);
    if (addresses.empty()) {
        return error_info{errc::transient_failure, "dns-failure"};
    }
    // Every address must pass: a name that resolves to one public and one private address is
    // refused, so a rebinding answer cannot slip a private one in.
    for (const auto& a : addresses) {
        if (!allowed(a)) {
            return error_info{errc::invalid_argument, "address-refused"};
        }
    }
    return addresses.front();
}

} // namespace wopbridge::outbound
