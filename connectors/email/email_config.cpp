#include "email_config.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace wopbridge::email {

using json_config::check_keys;
using json_config::get_int;
using json_config::get_string;

const char* const config_schema_json = R"json({
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "listen": {"type": "string", "default": "127.0.0.1:2525",
               "description": "SMTP host:port; port 0 = ephemeral; empty = no listener"},
    "hostname": {"type": "string", "default": "localhost"},
    "maxMessageBytes": {"type": "integer", "minimum": 1024, "default": 26214400},
    "maxRecipients": {"type": "integer", "minimum": 1, "maximum": 10000, "default": 100},
    "maxConnections": {"type": "integer", "minimum": 1, "maximum": 10000, "default": 32},
    "maxAttachments": {"type": "integer", "minimum": 0, "maximum": 10000, "default": 64},
    "commandTimeout": {"type": "integer", "minimum": 1, "default": 300},
    "dataTimeout": {"type": "integer", "minimum": 1, "default": 600},
    "tls": {"type": "object", "additionalProperties": false, "required": ["certFile", "keyFile"],
            "properties": {"certFile": {"type": "string"}, "keyFile": {"type": "string"}}},
    "auth": {"type": "object", "additionalProperties": false, "required": ["username", "password"],
             "properties": {"username": {"type": "string"},
                            "password": {"type": "string", "writeOnly": true}}},
    "webhookSigningKey": {"type": "string", "writeOnly": true},
    "webhookTolerance": {"type": "integer", "minimum": 1, "maximum": 86400, "default": 300},
    "replayCacheSize": {"type": "integer", "minimum": 16, "default": 10000},
    "maxWebhookBytes": {"type": "integer", "minimum": 1024, "default": 26214400}
  }
})json";

const char* const subscription_schema_json = R"json({
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "addresses": {"type": "array", "items": {"type": "string"},
                  "description": "RCPT TO addresses routed to this subscription (SMTP)"}
  }
})json";

email_config parse_config(std::string_view json) {
    const auto o =
        json_config::parse_object(json, "config", json_config::syntax_wording::must_be_object);
    check_keys(o,
               {"listen", "hostname", "maxMessageBytes", "maxRecipients", "maxConnections",
                "maxAttachments", "commandTimeout", "dataTimeout", "tls", "auth",
                "webhookSigningKey", "webhookTolerance", "replayCacheSize", "maxWebhookBytes"},
               "config");
    email_config c;
    auto listen = get_string(o, "listen", "127.0.0.1:2525", true);
    if (listen.empty()) {
        c.listen = false;
    } else {
        auto colon = listen.rfind(':');
        if (colon == std::string::npos) {
            throw config_error("listen must be host:port");
        }
        auto host = listen.substr(0, colon);
        if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
            host = host.substr(1, host.size() - 2);
        }
        unsigned port = 0;
        auto ps = std::string_view(listen).substr(colon + 1);
        auto [p, ec] = std::from_chars(ps.data(), ps.data() + ps.size(), port);
        if (ec != std::errc{} || p != ps.data() + ps.size() || port > 65535) {
            throw config_error("listen port must be 0..65535");
        }
        c.listen_host = host;
        c.listen_port = static_cast<std::uint16_t>(port);
    }
    c.hostname = get_string(o, "hostname", "localhost");
    if (c.hostname.find_first_of(" \r\n\t") != std::string::npos) {
        throw config_error("hostname must not contain whitespace");
    }
    c.max_message_bytes = static_cast<std::size_t>(
        get_int(o, "maxMessageBytes", 25 * 1024 * 1024, 1024, std::int64_t{1} << 34));
    c.max_recipients = static_cast<std::size_t>(get_int(o, "maxRecipients", 100, 1, 10000));
    c.max_connections = static_cast<std::size_t>(get_int(o, "maxConnections", 32, 1, 10000));
    c.max_attachments = static_cast<std::size_t>(get_int(o, "maxAttachments", 64, 0, 10000));
    c.command_timeout_s = get_int(o, "commandTimeout", 300, 1, 86400);
    c.data_timeout_s = get_int(o, "dataTimeout", 600, 1, 86400);
    if (auto it = o.find("tls"); it != o.end()) {
        if (!it->value().is_object()) {
            throw config_error("tls must be an object");
        }
        const auto& t = it->value().as_object();
        check_keys(t, {"certFile", "keyFile"}, "tls");
        c.tls_cert = get_string(t, "certFile", "");
        c.tls_key = get_string(t, "keyFile", "");
        if (c.tls_cert.empty() || c.tls_key.empty()) {
            throw config_error("tls needs certFile and keyFile");
        }
    }
    if (auto it = o.find("auth"); it != o.end()) {
        if (!it->value().is_object()) {
            throw config_error("auth must be an object");
        }
        const auto& a = it->value().as_object();
        check_keys(a, {"username", "password"}, "auth");
        c.auth_user = get_string(a, "username", "");
        c.auth_password = get_string(a, "password", "");
        if (c.auth_user.empty() || c.auth_password.empty()) {
            throw config_error("auth needs username and password");
        }
    }
    c.webhook_key = get_string(o, "webhookSigningKey", "");
    c.webhook_tolerance_s = get_int(o, "webhookTolerance", 300, 1, 86400);
    c.replay_cache_size =
        static_cast<std::size_t>(get_int(o, "replayCacheSize", 10000, 16, 10'000'000));
    c.max_webhook_bytes = static_cast<std::size_t>(
        get_int(o, "maxWebhookBytes", 25 * 1024 * 1024, 1024, std::int64_t{1} << 34));
    return c;
}

std::vector<std::string> parse_addresses(std::string_view json) {
    const auto o =
        json_config::parse_object(json, "settings", json_config::syntax_wording::must_be_object);
    check_keys(o, {"addresses"}, "settings");
    std::vector<std::string> out;
    auto it = o.find("addresses");
    if (it == o.end()) {
        return out;
    }
    if (!it->value().is_array()) {
        throw config_error("addresses must be an array of strings");
    }
    for (const auto& a : it->value().as_array()) {
        if (!a.is_string() || a.as_string().empty() ||
            a.as_string().find('@') == boost::json::string::npos) {
            throw config_error("addresses entries must be mail addresses");
        }
        std::string addr(a.as_string());
        std::transform(addr.begin(), addr.end(), addr.begin(),
                       [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
        out.push_back(std::move(addr));
    }
    return out;
}

} // namespace wopbridge::email
