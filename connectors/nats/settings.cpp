#include "nats/settings.hpp"

#include "wopbridge/json_util.hpp"

#include <charconv>
#include <cstdio>
#include <unistd.h>

namespace wopbridge::nats {

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

// JetStream stream and durable names: no '.', '*', '>' (they are subject tokens), no path
// separators (the server stores them as directories).
bool valid_js_name(std::string_view s) {
    return printable(s, 200) && s.find_first_of(".*>/\\") == std::string_view::npos;
}

// A subject filter: dot-separated tokens, '*' and a final '>' wildcards.
bool valid_subject(std::string_view s) {
    if (!printable(s, 1000) || s.front() == '.' || s.back() == '.' ||
        s.find("..") != std::string_view::npos) {
        return false;
    }
    const auto gt = s.find('>');
    return gt == std::string_view::npos || gt == s.size() - 1;
}

bool valid_urls(std::string_view list) {
    if (list.empty() || list.size() > 4000) {
        return false;
    }
    std::size_t start = 0;
    for (;;) {
        auto end = list.find(',', start);
        auto item = list.substr(start, end == std::string_view::npos ? end : end - start);
        while (!item.empty() && item.front() == ' ') {
            item.remove_prefix(1);
        }
        while (!item.empty() && item.back() == ' ') {
            item.remove_suffix(1);
        }
        const bool scheme = item.starts_with("nats://") || item.starts_with("tls://");
        const auto rest = item.substr(item.find("://") + 3);
        if (!scheme || rest.empty()) {
            return false;
        }
        for (const char c : item) {
            if (c <= ' ' || c > '~') {
                return false;
            }
        }
        if (end == std::string_view::npos) {
            return true;
        }
        start = end + 1;
    }
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

std::optional<connector_settings> parse_connector_settings(std::string_view text,
                                                           std::string& error) {
    auto obj = json::parse_flat_object(text.empty() ? "{}" : text, &error);
    if (!obj) {
        error = "settings: " + error;
        return std::nullopt;
    }
    connector_settings s;
    for (const auto& [key, value] : *obj) {
        std::int64_t n = 0;
        const bool str = value.type == kind::string;
        // Secrets and paths are checked for shape only; their text never goes into an error.
        if (key == "url" && str) {
            if (!valid_urls(value.text)) {
                error = "settings: url must be nats://host:port or tls://host:port (a "
                        "comma-separated list for several servers)";
                return std::nullopt;
            }
            s.url = value.text;
        } else if (key == "name" && str && printable(value.text)) {
            s.name = value.text;
        } else if (key == "user" && str && !value.text.empty() && value.text.size() <= 1024) {
            s.user = value.text;
        } else if (key == "password" && str && !value.text.empty() && value.text.size() <= 4096) {
            s.password = value.text;
        } else if (key == "token" && str && !value.text.empty() && value.text.size() <= 4096) {
            s.token = value.text;
        } else if (key == "credsFile" && str && !value.text.empty()) {
            s.creds_file = value.text;
        } else if (key == "nkeySeedFile" && str && !value.text.empty()) {
            s.nkey_seed_file = value.text;
        } else if (key == "tls" && value.type == kind::boolean) {
            s.tls = value.text == "true";
        } else if (key == "tlsCa" && str && !value.text.empty()) {
            s.tls_ca = value.text;
        } else if (key == "tlsCert" && str && !value.text.empty()) {
            s.tls_cert = value.text;
        } else if (key == "tlsKey" && str && !value.text.empty()) {
            s.tls_key = value.text;
        } else if (key == "connectTimeoutMs" && as_integer(value, 10, 60000, n)) {
            s.connect_timeout_ms = n;
        } else if (key == "reconnectWaitMs" && as_integer(value, 10, 60000, n)) {
            s.reconnect_wait_ms = n;
        } else if (key == "fetchWaitMs" && as_integer(value, 10, 5000, n)) {
            s.fetch_wait_ms = n;
        } else if (key == "batchSize" && as_integer(value, 1, 1000, n)) {
            s.batch_size = static_cast<std::size_t>(n);
        } else if (key == "maxInFlight" && as_integer(value, 1, 10000, n)) {
            s.max_in_flight = static_cast<std::size_t>(n);
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
        error = "settings: url (nats://host:port) is required";
        return std::nullopt;
    }
    const int ways = (s.user.empty() ? 0 : 1) + (s.token.empty() ? 0 : 1) +
                     (s.creds_file.empty() ? 0 : 1) + (s.nkey_seed_file.empty() ? 0 : 1);
    if (ways > 1) {
        error = "settings: give one of user/password, token, credsFile or nkeySeedFile";
        return std::nullopt;
    }
    if (!s.password.empty() && s.user.empty()) {
        error = "settings: password needs user";
        return std::nullopt;
    }
    if (s.tls_cert.empty() != s.tls_key.empty()) {
        error = "settings: tlsCert and tlsKey go together";
        return std::nullopt;
    }
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
        std::int64_t n = 0;
        const bool str = value.type == kind::string;
        if (key == "stream" && str && valid_js_name(value.text)) {
            s.stream = value.text;
        } else if (key == "durable" && str && valid_js_name(value.text)) {
            s.durable = value.text;
        } else if (key == "filterSubject" && str && valid_subject(value.text)) {
            s.filter_subject = value.text;
        } else if (key == "startFrom" && str &&
                   (value.text == "new" || value.text == "beginning")) {
            s.from_beginning = value.text == "beginning";
        } else if (key == "ackWaitMs" && as_integer(value, 1000, 86'400'000, n)) {
            s.ack_wait_ms = n;
        } else if (key == "maxAckPending" && as_integer(value, 1, 1'000'000, n)) {
            s.max_ack_pending = n;
        } else if (key == "maxDeliver" && as_integer(value, -1, 1'000'000, n) && n != 0) {
            s.max_deliver = n;
        } else if (key == "createConsumer" && value.type == kind::boolean) {
            s.create_consumer = value.text == "true";
        } else if (key == "keyHeader" && str && printable(value.text)) {
            s.key_header = value.text;
        } else {
            error = "subscription settings: invalid or unknown key '" + key + "'";
            return std::nullopt;
        }
    }
    if (s.stream.empty()) {
        error = "subscription settings: stream is required";
        return std::nullopt;
    }
    return s;
}

const char* const connector_schema_json =
    R"({"type":"object","additionalProperties":false,"required":["url"],"properties":{)"
    R"("url":{"type":"string","pattern":"^(nats|tls)://","writeOnly":true,)"
    R"("description":"nats://host:port or tls://host:port; a comma-separated list for a cluster"},)"
    R"("name":{"type":"string","minLength":1,"maxLength":200},)"
    R"("user":{"type":"string","minLength":1,"maxLength":1024},)"
    R"("password":{"type":"string","minLength":1,"maxLength":4096,"writeOnly":true},)"
    R"("token":{"type":"string","minLength":1,"maxLength":4096,"writeOnly":true},)"
    R"("credsFile":{"type":"string","minLength":1},)"
    R"("nkeySeedFile":{"type":"string","minLength":1},)"
    R"("tls":{"type":"boolean","default":false},)"
    R"("tlsCa":{"type":"string","minLength":1},)"
    R"("tlsCert":{"type":"string","minLength":1},)"
    R"("tlsKey":{"type":"string","minLength":1},)"
    R"("connectTimeoutMs":{"type":"integer","minimum":10,"maximum":60000,"default":2000},)"
    R"("reconnectWaitMs":{"type":"integer","minimum":10,"maximum":60000,"default":1000},)"
    R"("fetchWaitMs":{"type":"integer","minimum":10,"maximum":5000,"default":500},)"
    R"("batchSize":{"type":"integer","minimum":1,"maximum":1000,"default":16},)"
    R"("maxInFlight":{"type":"integer","minimum":1,"maximum":10000,"default":64},)"
    R"("retryDelayMs":{"type":"integer","minimum":10,"maximum":3600000,"default":1000},)"
    R"("maxMessageBytes":{"type":"integer","minimum":1,"maximum":67108864,"default":1048576}}})";

const char* const subscription_schema_json =
    R"({"type":"object","additionalProperties":false,"required":["stream"],"properties":{)"
    R"("stream":{"type":"string","minLength":1,"maxLength":200},)"
    R"("durable":{"type":"string","minLength":1,"maxLength":200,"default":"wopbridge"},)"
    R"("filterSubject":{"type":"string","minLength":1,"maxLength":1000},)"
    R"("startFrom":{"enum":["new","beginning"],"default":"new"},)"
    R"("ackWaitMs":{"type":"integer","minimum":1000,"maximum":86400000,"default":30000},)"
    R"("maxAckPending":{"type":"integer","minimum":1,"maximum":1000000,"default":1000},)"
    R"("maxDeliver":{"type":"integer","minimum":-1,"maximum":1000000,"default":-1},)"
    R"("createConsumer":{"type":"boolean","default":true},)"
    R"("keyHeader":{"type":"string","minLength":1,"maxLength":200}}})";

} // namespace wopbridge::nats
