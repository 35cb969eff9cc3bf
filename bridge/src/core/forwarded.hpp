#pragma once
// Requests that arrive through a reverse proxy. Only from a peer in `server.trustedProxies` are
// the proxy's headers believed: `Forwarded` (RFC 7239) or `X-Forwarded-For` give the client's
// address (for rate limits, logs and allow-lists), `X-Forwarded-Proto` and `X-Forwarded-Host` /
// `Host` the URL the provider called (for URL-signing providers such as Twilio). From any other
// peer those headers are the client's own text and change nothing.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace wopbridge {

// An address block: 10.0.0.0/8, 2001:db8::/32, or one address (a /32 or /128).
struct address_block {
    std::array<std::uint8_t, 16> bytes{}; // IPv4 as ::ffff:a.b.c.d
    int prefix_bits = 128;                // counted over the 16 bytes
    std::string text;                     // as configured
};

// Parses "a.b.c.d[/n]" or "v6[/n]"; nullopt when it is neither.
std::optional<address_block> parse_address_block(std::string_view text);
// Whether `address` (textual, as the server reports a peer) is inside any of `blocks`.
bool address_in(std::string_view address, const std::vector<address_block>& blocks);

struct client_origin {
    std::string address;     // the client's address: the peer's unless a trusted proxy said otherwise
    std::string public_base; // "https://host[:port]" the client called, or "" when not forwarded
};

// The client behind `peer`. The forwarded-for chain is walked from the nearest hop: every hop
// that is itself a trusted proxy is skipped, and the first that is not is the client (an
// entry that is not an address, such as RFC 7239's "unknown", ends the walk at the hop before it).
client_origin resolve_client(std::string_view peer,
                             const std::vector<std::pair<std::string, std::string>>& headers,
                             const std::vector<address_block>& trusted);

} // namespace wopbridge
