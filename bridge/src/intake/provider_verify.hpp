#pragma once
// A request checked against a catalogue entry (provider_catalogue.hpp): the signature in constant
// time under the subscription's verification mode, the timestamp window, the provider's delivery
// id (the dedup identity, so provider retries are duplicates) and the headers the entry names,
// which reach the run among the webhook's headers. No I/O.

#include "intake/provider_catalogue.hpp"
#include "intake/webhook_intake.hpp"

namespace wopbridge::intake {

webhook_verification verify_provider(const providers::provider& p, verification_mode mode,
                                     const std::vector<std::string>& secrets,
                                     const inbound_http_request& req, std::int64_t now_s);

// The headers the entry reads (delivery id, event type) that the run may see.
std::vector<std::string> provider_headers(const providers::provider& p);

// A provider's delivery id as the bridge keeps it: 1..128 visible ASCII characters.
bool valid_delivery_id(std::string_view id) noexcept;

} // namespace wopbridge::intake
