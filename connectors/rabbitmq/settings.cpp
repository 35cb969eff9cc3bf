#include "rabbitmq/settings.hpp"

#include "wopbridge/json_util.hpp"
#include "wopbridge/settings_reader.hpp"

#include <amqp.h>

#include <vector>

namespace wopbridge::rabbitmq {

namespace {

// An AMQP queue name (and a consumer tag) is a shortstr (at most 255 bytes); here also
// printable, for logs.
bool valid_queue(std::string_view s) {
    return settings::printable_name(s, 255);
}

// amqp[s]://[user[:pass]@]host[:port][/vhost], parsed by rabbitmq-c itself (percent-decoding
// included); false on anything it refuses or on characters that do not belong in a URL.
bool parse_url(const std::string& url, connector_settings& s) {
    if (url.size() > 4000 || !(url.starts_with("amqp://") || url.starts_with("amqps://"))) {
        return false;
    }
    for (const char c : url) {
        if (!settings::printable_char(c)) {
            return false;
        }
    }
    std::vector<char> buf(url.begin(), url.end());
    buf.push_back('\0');
    amqp_connection_info info;
    amqp_default_connection_info(&info);
    if (amqp_parse_url(buf.data(), &info) != AMQP_STATUS_OK || info.host == nullptr ||
        info.host[0] == '\0' || info.port <= 0 || info.port > 65535) {
        return false;
    }
    s.host = info.host;
    s.port = info.port;
    // amqp://host/ reads as the empty vhost, which RabbitMQ never has: both mean the default.
    s.vhost = info.vhost != nullptr && info.vhost[0] != '\0' ? info.vhost : "/";
    s.user = info.user != nullptr ? info.user : "guest";
    s.password = info.password != nullptr ? info.password : "guest";
    s.tls = info.ssl != 0;
    return true;
}

} // namespace

std::string default_client_name() {
    return settings::host_pid_name("wopbridge-", "host");
}

std::string redacted_url(const connector_settings& s) {
    std::string vhost = s.vhost == "/" ? "" : s.vhost;
    return std::string(s.tls ? "amqps://" : "amqp://") + s.host + ":" + std::to_string(s.port) +
           "/" + vhost;
}

std::optional<connector_settings> parse_connector_settings(std::string_view text,
                                                           std::string& error) {
    connector_settings s;
    std::optional<std::string> user;
    std::optional<std::string> password;
    bool tls_flag = false;
    settings::reader in("settings");
    // Secrets and paths are checked for shape only; their text never goes into an error.
    in.text("url", s.url, [&s](std::string_view url) { return parse_url(std::string(url), s); },
            "url must be amqp://[user:password@]host[:port][/vhost] or amqps://... (vhost "
            "percent-encoded, e.g. %2F for '/')")
        .text("name", s.name, [](std::string_view v) { return settings::printable_name(v); })
        .text("user", user, 1024)
        .text("password", password, 4096)
        .boolean("tls", tls_flag)
        .text("tlsCa", s.tls_ca)
        .text("tlsCert", s.tls_cert)
        .text("tlsKey", s.tls_key)
        .boolean("tlsVerifyPeer", s.tls_verify_peer)
        .boolean("tlsVerifyHostname", s.tls_verify_hostname)
        .integer("connectTimeoutMs", 10, 60000, s.connect_timeout_ms)
        .integer("reconnectWaitMs", 10, 60000, s.reconnect_wait_ms)
        .integer("heartbeatSeconds", 0, 600, s.heartbeat_seconds)
        .integer("prefetch", 1, 10000, s.prefetch)
        .integer("retryDelayMs", 10, 3'600'000, s.retry_delay_ms)
        .integer("maxMessageBytes", 1, 64 * 1024 * 1024, s.max_message_bytes);
    if (!in.read(text, error)) {
        return std::nullopt;
    }
    if (s.url.empty()) {
        error = in.message("url (amqp://host:port/vhost) is required");
        return std::nullopt;
    }
    if (password && !user) {
        error = in.message("password needs user");
        return std::nullopt;
    }
    if (user) {
        s.user = *user;
        s.password = password.value_or("");
    }
    if (s.tls_cert.empty() != s.tls_key.empty()) {
        error = in.message("tlsCert and tlsKey go together");
        return std::nullopt;
    }
    const bool tls_files = !s.tls_ca.empty() || !s.tls_cert.empty();
    if (!s.tls && tls_files && !tls_flag) {
        error = in.message("tlsCa/tlsCert need an amqps:// url or tls: true");
        return std::nullopt;
    }
    // tls: true with an amqp:// url speaks TLS on the url's port (amqps:// defaults to 5671).
    s.tls = s.tls || tls_flag;
    if (s.name.empty()) {
        s.name = default_client_name();
    }
    return s;
}

std::optional<subscription_settings> parse_subscription_settings(std::string_view text,
                                                                 std::string& error) {
    subscription_settings s;
    settings::reader in("subscription settings");
    in.text("queue", s.queue, valid_queue)
        .text("consumerTag", s.consumer_tag, valid_queue)
        .choice("withoutMessageId", s.without_message_id,
                {{"reject", missing_id_policy::reject},
                 {"contentHash", missing_id_policy::content_hash}});
    if (!in.read(text, error)) {
        return std::nullopt;
    }
    if (s.queue.empty()) {
        error = in.message("queue is required");
        return std::nullopt;
    }
    return s;
}

const char* const connector_schema_json =
    R"({"type":"object","additionalProperties":false,"required":["url"],"properties":{)"
    R"("url":{"type":"string","pattern":"^amqps?://","writeOnly":true,"x-secret":true,)"
    R"("description":"amqp://user:password@host:port/vhost or amqps://..., vhost percent-encoded"},)"
    R"("name":{"type":"string","minLength":1,"maxLength":200},)"
    R"("user":{"type":"string","minLength":1,"maxLength":1024},)"
    R"("password":{"type":"string","minLength":1,"maxLength":4096,"writeOnly":true,"x-secret":true},)"
    R"("tls":{"type":"boolean","default":false},)"
    R"("tlsCa":{"type":"string","minLength":1},)"
    R"("tlsCert":{"type":"string","minLength":1},)"
    R"("tlsKey":{"type":"string","minLength":1},)"
    R"("tlsVerifyPeer":{"type":"boolean","default":true},)"
    R"("tlsVerifyHostname":{"type":"boolean","default":true},)"
    R"("connectTimeoutMs":{"type":"integer","minimum":10,"maximum":60000,"default":2000},)"
    R"("reconnectWaitMs":{"type":"integer","minimum":10,"maximum":60000,"default":1000},)"
    R"("heartbeatSeconds":{"type":"integer","minimum":0,"maximum":600,"default":30},)"
    R"("prefetch":{"type":"integer","minimum":1,"maximum":10000,"default":32},)"
    R"("retryDelayMs":{"type":"integer","minimum":10,"maximum":3600000,"default":1000},)"
    R"("maxMessageBytes":{"type":"integer","minimum":1,"maximum":67108864,"default":1048576}}})";

const char* const subscription_schema_json =
    R"({"type":"object","additionalProperties":false,"required":["queue"],"properties":{)"
    R"("queue":{"type":"string","minLength":1,"maxLength":255},)"
    R"("consumerTag":{"type":"string","minLength":1,"maxLength":255},)"
    R"("withoutMessageId":{"enum":["reject","contentHash"],"default":"reject"}}})";

} // namespace wopbridge::rabbitmq
