#pragma once
// Settings of the rabbitmq connector (one broker: URL, credentials, TLS, consumer tuning) and of
// its subscriptions (one queue each). TLS names follow rabbitmq-c's SSL socket: CA file, client
// certificate + key, verify peer, verify hostname.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace wopbridge::rabbitmq {

struct connector_settings {
    std::string url; // amqp://user:pass@host:port/vhost or amqps://...
    // Parsed from url (user/password settings override the URL's):
    std::string host;
    int port = 5672;
    std::string vhost = "/";
    std::string user = "guest";
    std::string password = "guest";
    std::string name; // connection_name client property; default wopbridge-<hostname>-<pid>
    bool tls = false; // amqps:// or tls: true
    std::string tls_ca;
    std::string tls_cert;
    std::string tls_key;
    bool tls_verify_peer = true;
    bool tls_verify_hostname = true;
    std::int64_t connect_timeout_ms = 2000;
    std::int64_t reconnect_wait_ms = 1000; // cap of the reconnect backoff (from 100 ms, doubling)
    int heartbeat_seconds = 30;            // 0: no heartbeats
    std::size_t prefetch = 32;             // basic.qos prefetch_count per subscription
    std::int64_t retry_delay_ms = 1000;
    std::size_t max_message_bytes = 1024 * 1024;
};

enum class missing_id_policy {
    reject,       // basic.reject requeue=false (to the queue's dead-letter exchange, if any)
    content_hash, // dedup by SHA-256 of exchange, routing key and body
};

struct subscription_settings {
    std::string queue;
    std::string consumer_tag; // empty: the broker names the consumer
    missing_id_policy without_message_id = missing_id_policy::reject;

    bool operator==(const subscription_settings&) const = default;
};

std::optional<connector_settings> parse_connector_settings(std::string_view text,
                                                           std::string& error);
std::optional<subscription_settings> parse_subscription_settings(std::string_view text,
                                                                 std::string& error);

// "wopbridge-<hostname>-<pid>"
std::string default_client_name();

// "amqp://host:port/vhost" without user info, for logs.
std::string redacted_url(const connector_settings& s);

extern const char* const connector_schema_json;
extern const char* const subscription_schema_json;

} // namespace wopbridge::rabbitmq
