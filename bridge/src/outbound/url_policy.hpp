#pragma once
// SSRF policy for outbound webhook URLs (CONTRACT.md (e) Register/unregister): https only, no
// private, loopback, link-local, unique-local or metadata destinations. Applied at registration to
// the URL as given and again at every delivery to each resolved address (the connection is then
// pinned to a validated address). `allow_loopback_http` (config webhooks.allowLoopbackHttp; tests
// and local development only) admits exactly http://127.0.0.1:<port>.

#include "core/error.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace wopbridge::outbound {

struct webhook_target {
    std::string scheme; // https, or http for the loopback exception
    std::string host;   // as in the URL (brackets stripped for IPv6)
    std::uint16_t port = 443;
    bool host_is_ip = false;
};

// Checks a subscriber URL. invalid_argument, with a content-free reason, when refused.
result<webhook_target, error_info> check_webhook_url(std::string_view url,
                                                     bool allow_loopback_http);

// True when a literal IPv4/IPv6 address is one the policy refuses (127/8 is refused here; the
// loopback exception is applied by the callers). Unparsable text counts as forbidden.
bool is_forbidden_address(std::string_view ip);

// Resolves the target's host and validates every address; returns the address to connect to.
// invalid_argument ("address-refused") when any address is refused, transient_failure
// ("dns-failure") when nothing resolves: the message is the attempt's recorded reason.
result<std::string, error_info> resolve_validated(const webhook_target& t,
                                                  bool allow_loopback_http);

} // namespace wopbridge::outbound
