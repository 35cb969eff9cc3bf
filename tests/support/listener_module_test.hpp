#pragma once
// What the listener connectors' module tests (kafka, nats, queue, rabbitmq) share on top of the
// connector harness: a source-queue subscription, settings JSON built from test defaults, submits
// counted per provider event id, and a search of the module's log lines.
#include "support/connector_harness.hpp"

#include <map>
#include <string>

namespace wopbridge::testing {

// A subscription of source "queue" with the given id and settings JSON.
subscription_spec queue_sub(std::string id, std::string settings_json);

// A JSON object of `defaults` (key -> JSON value), each overridden or extended by `extra`.
std::string settings_json(std::map<std::string, std::string> defaults,
                          const std::map<std::string, std::string>& extra);

// How many submits each provider event id had with `outcome`.
std::map<std::string, int> submits_by_event(const connector_harness& harness,
                                            wb_submit_status outcome);

// The descriptor is well formed and a listener of source "queue" without an HTTP handler; its
// name and status are checked too where given (not null).
void expect_queue_listener_descriptor(const connector_harness& harness, const char* name,
                                      const char* status);

// Whether any of the module's log lines contains `text`.
bool logged_line(const connector_harness& harness, const std::string& text);

} // namespace wopbridge::testing
