#pragma once
// Settings of the queue connector (one Redis server) and of its subscriptions (one stream + group).

#include "queue/redis_client.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace wopbridge::queue {

struct connector_settings {
    redis_url url;
    std::string consumer;               // default: <hostname>-<pid>
    std::int64_t block_ms = 2000;       // XREADGROUP BLOCK
    std::size_t batch_size = 16;        // XREADGROUP / XAUTOCLAIM COUNT
    std::int64_t claim_idle_ms = 60000; // XAUTOCLAIM min-idle-time; 0 = never claim
    std::size_t max_in_flight = 64;     // messages submitted but not yet acked
    std::int64_t connect_timeout_ms = 5000;
    std::int64_t command_timeout_ms = 5000;
    std::int64_t retry_delay_ms = 1000; // before a refused message is submitted again
    std::size_t max_message_bytes = 1024 * 1024;
};

struct subscription_settings {
    std::string stream;
    std::string group = "wopbridge";
    bool from_beginning = false; // startFrom: "beginning" (0) or "new" ($)
    std::string key_field;       // field copied into stream.key
    std::string message_field;   // when set: stream.message is this field's value, parsed as JSON

    bool operator==(const subscription_settings&) const = default;
};

std::optional<connector_settings> parse_connector_settings(std::string_view text,
                                                           std::string& error);
std::optional<subscription_settings> parse_subscription_settings(std::string_view text,
                                                                 std::string& error);

// "<hostname>-<pid>"
std::string default_consumer_name();

extern const char* const connector_schema_json;
extern const char* const subscription_schema_json;

} // namespace wopbridge::queue
