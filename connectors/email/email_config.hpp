#pragma once
// The email connector's settings: the module config (SMTP listener, inbound-parse webhook) and a
// subscription's addresses, parsed and range-checked. Bad settings throw config_error (one line).

#include <wopbridge/json_config.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace wopbridge::email {

using json_config::config_error;

extern const char* const config_schema_json;
extern const char* const subscription_schema_json;

struct email_config {
    bool listen = true;
    std::string listen_host = "127.0.0.1";
    std::uint16_t listen_port = 2525;
    std::string hostname = "localhost";
    std::size_t max_message_bytes = 25 * 1024 * 1024;
    std::size_t max_recipients = 100;
    std::size_t max_connections = 32;
    std::size_t max_attachments = 64;
    std::int64_t command_timeout_s = 300;
    std::int64_t data_timeout_s = 600;
    std::string tls_cert;
    std::string tls_key;
    std::string auth_user;
    std::string auth_password;
    std::string webhook_key;
    std::int64_t webhook_tolerance_s = 300;
    std::size_t replay_cache_size = 10000;
    std::size_t max_webhook_bytes = 25 * 1024 * 1024;
};

email_config parse_config(std::string_view json);
// The subscription's RCPT TO addresses, lower-cased.
std::vector<std::string> parse_addresses(std::string_view json);

} // namespace wopbridge::email
