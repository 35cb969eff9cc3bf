#include "rabbitmq/settings.hpp"

#include "wopbridge/json_util.hpp"

#include <amqp.h>

#include <charconv>
#include <cstdio>
#include <unistd.h>
#include <vector>

namespace wopbridge::rabbitmq {

namespace {

using kind = json::flat_value::kind;

bool as_integer(const json::flat_value& v, std::int64_t lo, std::int64_t hi, std::int64_t& out) {
    if (v.type != kind::number) {
        return false;
    }
    std::int64_t n = 0;
    auto [p, ec] = std::from_chars(v.text.data(), v.text.data() + v.text.size(), n);
    if (ec != std::errc{} || p != v.text.data() + v.text.size() || n < lo || n > hi) {
        return false;
    }
    out = n;
    return true;
}

// Printable ASCII without spaces, so a name is safe in logs.
bool printable(std::string_view s, std::size_t max = 200) {
    if (s.empty() || s.size() > max) {
        return false;
    }
    for (const char c : s) {
        if (c <= ' ' || c > '~') {
            return false;
        }
    }
    return true;
}

// An AMQP queue name is a shortstr (at most 255 bytes); here also printable, for logs.
bool valid_queue(std::string_view s) {
    return printable(s, 255);
}

// amqp[s]://[user[:pass]@]host[:port][/vhost], parsed by rabbitmq-c itself (percent-decoding
// included); false on anything it refuses or on characters that do not belong in a URL.
bool parse_url(const std::string& url, connector_settings& s) {
    if (url.size() > 4000 || !(url.starts_with("amqp://") || url.starts_with("amqps://"))) {
        return false;
    }
    for (const char c : url) {
        if (c <= ' ' || c > '~') {
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
    char host[256] = {0};
    if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') {
        std::snprintf(host, sizeof host, "host");
    }
    std::string name = "wopbridge-" + std::string(host) + "-" + std::to_string(::getpid());
    for (auto& c : name) {
        if (c <= ' ' || c > '~') {
            c = '_';
        }
    }
    return name;
}

std::string redacted_url(const connector_settings& s) {
    std::string vhost = s.vhost == "/" ? "" : s.vhost;
    return std::string(s.tls ? "amqps://" : "amqp://") + s.host + ":" + std::to_string(s.port) +
           "/" + vhost;
}

std::optional<connector_settings> parse_connector_settings(std::string_view text,
                                                           std::string& error) {
    auto obj = json::parse_flat_object(text.empty() ? "{}" : text, &error);
    if (!obj) {
        error = "settings: " + error;
        return std::nullopt;
    }
    connector_settings s;
    std::optional<std::string> user;
    std::optional<std::string> password;
    bool tls_flag = false;
    for (const auto& [key, value] : *obj) {
        std::int64_t n = 0;
        const bool str = value.type == kind::string;
        // Secrets and paths are checked for shape only; their text never goes into an error.
        if (key == "url" && str) {
            if (!parse_url(value.text, s)) {
                error = "settings: url must be amqp://[user:password@]host[:port][/vhost] or "
                        "amqps://... (vhost percent-encoded, e.g. %2F for '/')";
                return std::nullopt;
            }
            s.url = value.text;
        } else if (key == "name" && str && printable(value.text)) {
            s.name = value.text;
        } else if (key == "user" && str && !value.text.empty() && value.text.size() <= 1024) {
            user = value.text;
        } else if (key == "password" && str && !value.text.empty() && value.text.size() <= 4096) {
            password = value.text;
        } else if (key == "tls" && value.type == kind::boolean) {
            tls_flag = value.text == "true";
        } else if (key == "tlsCa" && str && !value.text.empty()) {
            s.tls_ca = value.text;
        } else if (key == "tlsCert" && str && !value.text.empty()) {
            s.tls_cert = value.text;
        } else if (key == "tlsKey" && str && !value.text.empty()) {
            s.tls_key = value.text;
        } else if (key == "tlsVerifyPeer" && value.type == kind::boolean) {
            s.tls_verify_peer = value.text == "true";
        } else if (key == "tlsVerifyHostname" && value.type == kind::boolean) {
            s.tls_verify_hostname = value.text == "true";
        } else if (key == "connectTimeoutMs" && as_integer(value, 10, 60000, n)) {
            s.connect_timeout_ms = n;
        } else if (key == "reconnectWaitMs" && as_integer(value, 10, 60000, n)) {
            s.reconnect_wait_ms = n;
        } else if (key == "heartbeatSeconds" && as_integer(value, 0, 600, n)) {
            s.heartbeat_seconds = static_cast<int>(n);
        } else if (key == "prefetch" && as_integer(value, 1, 10000, n)) {
            s.prefetch = static_cast<std::size_t>(n);
        } else if (key == "retryDelayMs" && as_integer(value, 10, 3'600'000, n)) {
            s.retry_delay_ms = n;
        } else if (key == "maxMessageBytes" && as_integer(value, 1, 64 * 1024 * 1024, n)) {
            s.max_message_bytes = static_cast<std::size_t>(n);
        } else {
            error = "settings: invalid or unknown key '" + key + "'";
            return std::nullopt;
        }
    }
    if (s.url.empty()) {
        error = "settings: url (amqp://host:port/vhost) is required";
        return std::nullopt;
    }
    if (password && !user) {
        error = "settings: password needs user";
        return std::nullopt;
    }
    if (user) {
        s.user = *user;
        s.password = password.value_or("");
    }
    if (s.tls_cert.empty() != s.tls_key.empty()) {
        error = "settings: tlsCert and tlsKey go together";
        return std::nullopt;
    }
    const bool tls_files = !s.tls_ca.empty() || !s.tls_cert.empty();
    if (!s.tls && tls_files && !tls_flag) {
        error = "settings: tlsCa/tlsCert need an amqps:// url or tls: true";
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
    auto obj = json::parse_flat_object(text.empty() ? "{}" : text, &error);
    if (!obj) {
        error = "subscription settings: " + error;
        return std::nullopt;
    }
    subscription_settings s;
    for (const auto& [key, value] : *obj) {
        const bool str = value.type == kind::string;
        if (key == "queue" && str && valid_queue(value.text)) {
            s.queue = value.text;
        } else if (key == "consumerTag" && str && printable(value.text, 255)) {
            s.consumer_tag = value.text;
        } else if (key == "withoutMessageId" && str &&
                   (value.text == "reject" || value.text == "contentHash")) {
            s.without_message_id = value.text == "reject" ? missing_id_policy::reject
                                                          : missing_id_policy::content_hash;
        } else {
            error = "subscription settings: invalid or unknown key '" + key + "'";
            return std::nullopt;
        }
    }
    if (s.queue.empty()) {
        error = "subscription settings: queue is required";
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
