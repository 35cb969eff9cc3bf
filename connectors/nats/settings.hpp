#pragma once
// Settings of the nats connector (one NATS connection) and of its subscriptions (one JetStream
// stream + durable pull consumer). Names follow the NATS tools: url(s), user/password, token,
// creds file, nkey seed file, TLS CA/cert/key.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace wopbridge::nats {

struct connector_settings {
    std::string url;  // one URL or a comma-separated list (nats:// or tls://)
    std::string name; // client connection name; default wopbridge-<hostname>-<pid>
    // Credentials: at most one way (user+password, token, creds file, nkey seed file).
    std::string user;
    std::string password;
    std::string token;
    std::string creds_file;
    std::string nkey_seed_file;
    // TLS: any of these (or a tls:// URL) requires TLS.
    bool tls = false;
    std::string tls_ca;
    std::string tls_cert;
    std::string tls_key;
    std::int64_t connect_timeout_ms = 2000;
    std::int64_t reconnect_wait_ms = 1000;
    std::int64_t fetch_wait_ms = 500; // expiry of one pull request; also bounds stop() latency
    std::size_t batch_size = 16;
    std::size_t max_in_flight = 64; // fetched, not yet acked, per subscription
    std::int64_t retry_delay_ms = 1000;
    std::size_t max_message_bytes = 1024 * 1024;

    bool wants_tls() const noexcept {
        return tls || !tls_ca.empty() || !tls_cert.empty() ||
               url.find("tls://") != std::string::npos;
    }
};

struct subscription_settings {
    std::string stream;
    std::string durable = "wopbridge";
    std::string filter_subject;  // consumer filter, when creating it
    bool from_beginning = false; // startFrom: "beginning" (DeliverAll) or "new" (DeliverNew)
    std::int64_t ack_wait_ms = 30000;
    std::int64_t max_ack_pending = 1000;
    std::int64_t max_deliver = -1; // -1: unlimited (the bridge retries deliveries itself)
    bool create_consumer = true;   // false: bind to an existing consumer, never create/update it
    std::string key_header;        // message header copied into stream.key

    bool operator==(const subscription_settings&) const = default;
};

std::optional<connector_settings> parse_connector_settings(std::string_view text,
                                                           std::string& error);
std::optional<subscription_settings> parse_subscription_settings(std::string_view text,
                                                                 std::string& error);

// "wopbridge-<hostname>-<pid>"
std::string default_client_name();

extern const char* const connector_schema_json;
extern const char* const subscription_schema_json;

} // namespace wopbridge::nats
