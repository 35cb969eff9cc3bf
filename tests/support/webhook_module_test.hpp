#pragma once
// What the webhook connectors' module tests (slack, sms) share on top of the connector harness:
// the descriptor of an HTTP-ingest module of source "webhook", and the JSON error envelope.
#include "support/connector_harness.hpp"

#include <string_view>

namespace wopbridge::testing {

// The descriptor is well formed: `name`, source "webhook", HTTP ingest only, and its config and
// subscription schemas name `config_key` and `subscription_key`.
void expect_webhook_ingest_descriptor(const connector_harness& harness, const char* name,
                                      std::string_view config_key,
                                      std::string_view subscription_key);

// `reply` is `status` with a JSON body whose "error" is `code`.
void expect_error_envelope(const module_reply& reply, int status, std::string_view code);

} // namespace wopbridge::testing
