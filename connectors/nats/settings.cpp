#include "nats/settings.hpp"

#include "wopbridge/json_util.hpp"
#include "wopbridge/settings_reader.hpp"

namespace wopbridge::nats {

namespace {

// JetStream stream and durable names: no '.', '*', '>' (they are subject tokens), no path
// separators (the server stores them as directories).
bool valid_js_name(std::string_view s) {
    return settings::printable_name(s, 200) && s.find_first_of(".*>/\\") == std::string_view::npos;
}

// A subject filter: dot-separated tokens, '*' and a final '>' wildcards.
bool valid_subject(std::string_view s) {
    if (!settings::printable_name(s, 1000) || s.front() == '.' || s.back() == '.' ||
        s.find("..") != std::string_view::npos) {
        return false;
    }
    const auto gt = s.find('>');
    return gt == std::string_view::npos || gt == s.size() - 1;
}

bool valid_url(std::string_view item) {
    // The scheme is checked before it is cut off: "x" has no "://" to skip.
    if (!item.starts_with("nats://") && !item.starts_with("tls://")) {
        return false;
    }
    if (item.substr(item.find("://") + 3).empty()) {
        return false;
    }
    for (const char c : item) {
        if (!settings::printable_char(c)) {
            return false;
        }
    }
    return true;
}

bool valid_urls(std::string_view list) {
    return settings::every_listed(list, 4000, valid_url);
}

} // namespace

std::string default_client_name() {
    return settings::host_pid_name("wopbridge-", "host");
}

std::optional<connector_settings> parse_connector_settings(std::string_view text,
                                                           std::string& error) {
    connector_settings s;
    settings::reader in("settings");
    // Secrets and paths are checked for shape only; their text never goes into an error.
    in.text("url", s.url, valid_urls,
            "url must be nats://host:port or tls://host:port (a comma-separated list for "
            "several servers)")
        .text("name", s.name, [](std::string_view v) { return settings::printable_name(v); })
        .text("user", s.user, 1024)
        .text("password", s.password, 4096)
        .text("token", s.token, 4096)
        .text("credsFile", s.creds_file)
        .text("nkeySeedFile", s.nkey_seed_file)
        .boolean("tls", s.tls)
        .text("tlsCa", s.tls_ca)
        .text("tlsCert", s.tls_cert)
        .text("tlsKey", s.tls_key)
        .integer("connectTimeoutMs", 10, 60000, s.connect_timeout_ms)
        .integer("reconnectWaitMs", 10, 60000, s.reconnect_wait_ms)
        .integer("fetchWaitMs", 10, 5000, s.fetch_wait_ms)
        .integer("batchSize", 1, 1000, s.batch_size)
        .integer("maxInFlight", 1, 10000, s.max_in_flight)
        .integer("retryDelayMs", 10, 3'600'000, s.retry_delay_ms)
        .integer("maxMessageBytes", 1, 64 * 1024 * 1024, s.max_message_bytes);
    if (!in.read(text, error)) {
        return std::nullopt;
    }
    if (s.url.empty()) {
        error = in.message("url (nats://host:port) is required");
        return std::nullopt;
    }
    const int ways = (s.user.empty() ? 0 : 1) + (s.token.empty() ? 0 : 1) +
                     (s.creds_file.empty() ? 0 : 1) + (s.nkey_seed_file.empty() ? 0 : 1);
    if (ways > 1) {
        error = in.message("give one of user/password, token, credsFile or nkeySeedFile");
        return std::nullopt;
    }
    if (!s.password.empty() && s.user.empty()) {
        error = in.message("password needs user");
        return std::nullopt;
    }
    if (s.tls_cert.empty() != s.tls_key.empty()) {
        error = in.message("tlsCert and tlsKey go together");
        return std::nullopt;
    }
    if (s.name.empty()) {
        s.name = default_client_name();
    }
    return s;
}

std::optional<subscription_settings> parse_subscription_settings(std::string_view text,
                                                                 std::string& error) {
    subscription_settings s;
    settings::reader in("subscription settings");
    in.text("stream", s.stream, valid_js_name)
        .text("durable", s.durable, valid_js_name)
        .text("filterSubject", s.filter_subject, valid_subject)
        .choice("startFrom", s.from_beginning, {{"new", false}, {"beginning", true}})
        .integer("ackWaitMs", 1000, 86'400'000, s.ack_wait_ms)
        .integer("maxAckPending", 1, 1'000'000, s.max_ack_pending)
        .custom("maxDeliver",
                [&](const json::flat_value& value, std::string&) {
                    // 0 would mean "never deliver"; -1 is unlimited.
                    const auto n = settings::integer_in(value, -1, 1'000'000);
                    if (!n || *n == 0) {
                        return false;
                    }
                    s.max_deliver = *n;
                    return true;
                })
        .boolean("createConsumer", s.create_consumer)
        .text("keyHeader", s.key_header, [](std::string_view v) { return settings::printable_name(v); });
    if (!in.read(text, error)) {
        return std::nullopt;
    }
    if (s.stream.empty()) {
        error = in.message("stream is required");
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
