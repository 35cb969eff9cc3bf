#pragma once
// Settings of the kafka connector (one cluster: bootstrap servers, security, client tuning) and of
// its subscriptions (one consumer group over one or more topics). Names follow Kafka's own:
// bootstrapServers, securityProtocol (security.protocol), sasl*, ssl*, topics, groupId; a
// pass-through map of further librdkafka properties refuses the ones that would break the
// connector's contract (auto commit, offset store, group id, code loading).

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wopbridge::kafka {

struct connector_settings {
    std::string bootstrap_servers; // host:port[,host:port...]
    std::string client_id;         // default wopbridge-<hostname>-<pid>
    std::string security_protocol = "plaintext"; // plaintext|ssl|sasl_plaintext|sasl_ssl
    std::string sasl_mechanism;                  // PLAIN|SCRAM-SHA-256|SCRAM-SHA-512
    std::string sasl_username;
    std::string sasl_password;
    std::string ssl_ca_location;
    std::string ssl_certificate_location;
    std::string ssl_key_location;
    std::string ssl_key_password;
    std::int64_t session_timeout_ms = 45000;
    std::int64_t reconnect_backoff_ms = 100;
    std::int64_t reconnect_backoff_max_ms = 10000;
    std::int64_t poll_wait_ms = 200;      // one consumer poll; also bounds stop() latency
    std::int64_t commit_interval_ms = 100; // contiguous offsets are committed at most this often
    std::size_t max_in_flight = 256;      // polled, not yet committed, per subscription
    std::int64_t retry_delay_ms = 1000;
    std::int64_t revoke_grace_ms = 2000; // a rebalance waits this long for outstanding outcomes
    std::size_t max_message_bytes = 1024 * 1024;
    std::map<std::string, std::string> properties; // further librdkafka properties

    // librdkafka configuration pairs (without group.id / auto.offset.reset), in order.
    std::vector<std::pair<std::string, std::string>> client_properties() const;
    // Values that must never appear in a log line or an error (secrets and file paths).
    std::vector<std::string> sensitive_values() const;
};

struct subscription_settings {
    std::vector<std::string> topics;
    std::string group_id = "wopbridge";
    bool from_beginning = false; // startFrom: "beginning" (earliest) or "new" (latest)

    bool operator==(const subscription_settings&) const = default;
};

std::optional<connector_settings> parse_connector_settings(std::string_view text,
                                                           std::string& error);
std::optional<subscription_settings> parse_subscription_settings(std::string_view text,
                                                                 std::string& error);

// Properties the pass-through map may not set, with the reason; nullptr when allowed.
const char* refused_property(std::string_view name);

// "wopbridge-<hostname>-<pid>"
std::string default_client_id();

// `text` with every occurrence of each of `values` replaced by "<redacted>".
std::string redact(std::string text, const std::vector<std::string>& values);

extern const char* const connector_schema_json;
extern const char* const subscription_schema_json;

} // namespace wopbridge::kafka
