#include "kafka/settings.hpp"

#include "wopbridge/settings_reader.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <algorithm>

namespace wopbridge::kafka {

namespace {

namespace bj = boost::json;

bool as_integer(const bj::value& v, std::int64_t lo, std::int64_t hi, std::int64_t& out) {
    if (!v.is_int64() && !v.is_uint64()) {
        return false;
    }
    if (v.is_uint64() && v.as_uint64() > static_cast<std::uint64_t>(hi)) {
        return false;
    }
    const std::int64_t n = v.is_int64() ? v.as_int64() : static_cast<std::int64_t>(v.as_uint64());
    if (n < lo || n > hi) {
        return false;
    }
    out = n;
    return true;
}

// The bytes of Kafka's legal topic names (and of the default client id).
bool topic_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '.' || c == '_' || c == '-';
}

// Kafka's legal topic names: [a-zA-Z0-9._-], at most 249, not "." or "..".
bool valid_topic(std::string_view s) {
    if (s.empty() || s.size() > 249 || s == "." || s == "..") {
        return false;
    }
    for (const char c : s) {
        if (!topic_char(c)) {
            return false;
        }
    }
    return true;
}

// Client ids and group ids: printable, so they are safe in logs.
bool printable(std::string_view s) {
    return settings::printable_name(s, 255);
}

// host:port[,host:port...]; a host may be a name, IPv4 or [IPv6]; an optional scheme
// (PLAINTEXT://, SSL://...) as Kafka's listeners write it.
bool valid_server(std::string_view item) {
    if (const auto scheme = item.find("://"); scheme != std::string_view::npos) {
        item.remove_prefix(scheme + 3);
    }
    const auto colon = item.rfind(':');
    if (!settings::printable_name(item, 1000) || colon == std::string_view::npos || colon == 0 ||
        colon + 1 == item.size()) {
        return false;
    }
    for (const char c : item.substr(colon + 1)) {
        if (c < '0' || c > '9') {
            return false;
        }
    }
    return true;
}

bool valid_servers(std::string_view list) {
    return settings::every_listed(list, 4000, valid_server);
}

bool nonempty(const bj::value& v, std::size_t max = 4096) {
    return v.is_string() && !v.as_string().empty() && v.as_string().size() <= max;
}

std::string text(const bj::value& v) {
    return std::string(v.as_string());
}

// Parses `text` as a JSON object (empty text: {}).
const bj::object* parse_object(std::string_view in, bj::value& holder, const char* what,
                               std::string& error) {
    boost::system::error_code ec;
    holder = bj::parse(in.empty() ? std::string_view("{}") : in, ec);
    if (ec || !holder.is_object()) {
        error = std::string(what) + ": not a JSON object";
        return nullptr;
    }
    return &holder.as_object();
}

} // namespace

const char* refused_property(std::string_view name) {
    if (name == "enable.auto.commit" || name == "auto.commit.enable" ||
        name == "auto.commit.interval.ms" || name == "enable.auto.offset.store") {
        return "the connector commits offsets itself, only after the bridge committed the event";
    }
    if (name == "group.id" || name == "bootstrap.servers" || name == "metadata.broker.list" ||
        name == "client.id" || name == "auto.offset.reset" || name == "security.protocol" ||
        name == "session.timeout.ms") {
        return "set by a connector or subscription setting of its own";
    }
    if (name.starts_with("sasl.") || name.starts_with("ssl.") || name == "ssl_key") {
        return "credentials and TLS files go in their own settings (saslPassword is kept sealed)";
    }
    if (name == "plugin.library.paths" || name == "interceptors" ||
        name.starts_with("oauthbearer") || name == "enable.sasl.oauthbearer.unsecure.jwt") {
        return "loads code or credentials outside the connector's settings";
    }
    if (name == "enable.partition.eof" || name == "consume.callback.max.messages" ||
        name == "log.queue" || name == "debug" || name == "statistics.interval.ms") {
        return "changes what the connector's consumer loop receives";
    }
    if (name == "group.protocol.type" || name == "group.instance.id") {
        return "not supported by this connector";
    }
    return nullptr;
}

std::vector<std::pair<std::string, std::string>> connector_settings::client_properties() const {
    std::vector<std::pair<std::string, std::string>> out{
        {"bootstrap.servers", bootstrap_servers},
        {"client.id", client_id},
        {"security.protocol", security_protocol},
        {"enable.auto.commit", "false"},
        {"enable.auto.offset.store", "false"},
        {"enable.partition.eof", "false"},
        {"session.timeout.ms", std::to_string(session_timeout_ms)},
        {"heartbeat.interval.ms",
         std::to_string(std::max<std::int64_t>(100, std::min<std::int64_t>(
                                                        3000, session_timeout_ms / 3)))},
        {"reconnect.backoff.ms", std::to_string(reconnect_backoff_ms)},
        {"reconnect.backoff.max.ms", std::to_string(reconnect_backoff_max_ms)},
        // Bounded prefetch: what librdkafka holds locally per partition before we poll it.
        {"queued.max.messages.kbytes", "16384"},
        {"log.connection.close", "false"},
    };
    const auto add = [&](const char* k, const std::string& v) {
        if (!v.empty()) {
            out.emplace_back(k, v);
        }
    };
    add("sasl.mechanisms", sasl_mechanism);
    add("sasl.username", sasl_username);
    add("sasl.password", sasl_password);
    add("ssl.ca.location", ssl_ca_location);
    add("ssl.certificate.location", ssl_certificate_location);
    add("ssl.key.location", ssl_key_location);
    add("ssl.key.password", ssl_key_password);
    for (const auto& [k, v] : properties) {
        out.emplace_back(k, v);
    }
    return out;
}

std::vector<std::string> connector_settings::sensitive_values() const {
    std::vector<std::string> out;
    for (const auto* v : {&sasl_username, &sasl_password, &ssl_ca_location,
                          &ssl_certificate_location, &ssl_key_location, &ssl_key_password}) {
        if (!v->empty()) {
            out.push_back(*v);
        }
    }
    return out;
}

std::string redact(std::string text, const std::vector<std::string>& values) {
    for (const auto& v : values) {
        if (v.empty()) {
            continue;
        }
        for (auto at = text.find(v); at != std::string::npos; at = text.find(v, at)) {
            text.replace(at, v.size(), "<redacted>");
            at += 10;
        }
    }
    return text;
}

std::string default_client_id() {
    return settings::host_pid_name("wopbridge-", "host", topic_char);
}

std::optional<connector_settings> parse_connector_settings(std::string_view in,
                                                           std::string& error) {
    bj::value holder;
    const auto* obj = parse_object(in, holder, "settings", error);
    if (obj == nullptr) {
        return std::nullopt;
    }
    connector_settings s;
    for (const auto& [k, value] : *obj) {
        const std::string key(k);
        std::int64_t n = 0;
        // Secrets and paths are checked for shape only; their text never goes into an error.
        if (key == "bootstrapServers" && value.is_string()) {
            if (!valid_servers(value.as_string())) {
                error = "settings: bootstrapServers must be host:port (a comma-separated list for "
                        "several brokers)";
                return std::nullopt;
            }
            s.bootstrap_servers = text(value);
        } else if (key == "clientId" && value.is_string() && printable(value.as_string())) {
            s.client_id = text(value);
        } else if (key == "securityProtocol" && value.is_string() &&
                   (value.as_string() == "plaintext" || value.as_string() == "ssl" ||
                    value.as_string() == "sasl_plaintext" || value.as_string() == "sasl_ssl")) {
            s.security_protocol = text(value);
        } else if (key == "saslMechanism" && value.is_string() &&
                   (value.as_string() == "PLAIN" || value.as_string() == "SCRAM-SHA-256" ||
                    value.as_string() == "SCRAM-SHA-512")) {
            s.sasl_mechanism = text(value);
        } else if (key == "saslUsername" && nonempty(value, 1024)) {
            s.sasl_username = text(value);
        } else if (key == "saslPassword" && nonempty(value)) {
            s.sasl_password = text(value);
        } else if (key == "sslCaLocation" && nonempty(value)) {
            s.ssl_ca_location = text(value);
        } else if (key == "sslCertificateLocation" && nonempty(value)) {
            s.ssl_certificate_location = text(value);
        } else if (key == "sslKeyLocation" && nonempty(value)) {
            s.ssl_key_location = text(value);
        } else if (key == "sslKeyPassword" && nonempty(value)) {
            s.ssl_key_password = text(value);
        } else if (key == "sessionTimeoutMs" && as_integer(value, 1000, 3'600'000, n)) {
            s.session_timeout_ms = n;
        } else if (key == "reconnectBackoffMs" && as_integer(value, 10, 60000, n)) {
            s.reconnect_backoff_ms = n;
        } else if (key == "reconnectBackoffMaxMs" && as_integer(value, 10, 600000, n)) {
            s.reconnect_backoff_max_ms = n;
        } else if (key == "pollWaitMs" && as_integer(value, 10, 5000, n)) {
            s.poll_wait_ms = n;
        } else if (key == "commitIntervalMs" && as_integer(value, 0, 60000, n)) {
            s.commit_interval_ms = n;
        } else if (key == "maxInFlight" && as_integer(value, 1, 100000, n)) {
            s.max_in_flight = static_cast<std::size_t>(n);
        } else if (key == "retryDelayMs" && as_integer(value, 10, 3'600'000, n)) {
            s.retry_delay_ms = n;
        } else if (key == "revokeGraceMs" && as_integer(value, 0, 60000, n)) {
            s.revoke_grace_ms = n;
        } else if (key == "maxMessageBytes" && as_integer(value, 1, 64 * 1024 * 1024, n)) {
            s.max_message_bytes = static_cast<std::size_t>(n);
        } else if (key == "properties" && value.is_object()) {
            for (const auto& [pk, pv] : value.as_object()) {
                const std::string name(pk);
                if (!settings::printable_name(name, 200)) {
                    error = "settings: properties: a property name must be printable";
                    return std::nullopt;
                }
                if (const char* why = refused_property(name)) {
                    error = "settings: properties: '" + name + "' is not allowed (" + why + ")";
                    return std::nullopt;
                }
                if (pv.is_string()) {
                    s.properties[name] = text(pv);
                } else if (pv.is_int64() || pv.is_uint64() || pv.is_bool()) {
                    s.properties[name] = bj::serialize(pv);
                } else {
                    error = "settings: properties: '" + name +
                            "' must be a string, an integer or a boolean";
                    return std::nullopt;
                }
            }
        } else {
            error = "settings: invalid or unknown key '" + key + "'";
            return std::nullopt;
        }
    }
    if (s.bootstrap_servers.empty()) {
        error = "settings: bootstrapServers (host:port) is required";
        return std::nullopt;
    }
    const bool sasl = s.security_protocol.starts_with("sasl_");
    if (sasl && (s.sasl_mechanism.empty() || s.sasl_username.empty() || s.sasl_password.empty())) {
        error = "settings: securityProtocol " + s.security_protocol +
                " needs saslMechanism, saslUsername and saslPassword";
        return std::nullopt;
    }
    if (!sasl && (!s.sasl_mechanism.empty() || !s.sasl_username.empty() ||
                  !s.sasl_password.empty())) {
        error = "settings: sasl* settings need securityProtocol sasl_plaintext or sasl_ssl";
        return std::nullopt;
    }
    const bool tls = s.security_protocol == "ssl" || s.security_protocol == "sasl_ssl";
    if (!tls && (!s.ssl_ca_location.empty() || !s.ssl_certificate_location.empty() ||
                 !s.ssl_key_location.empty() || !s.ssl_key_password.empty())) {
        error = "settings: ssl* settings need securityProtocol ssl or sasl_ssl";
        return std::nullopt;
    }
    if (s.ssl_certificate_location.empty() != s.ssl_key_location.empty()) {
        error = "settings: sslCertificateLocation and sslKeyLocation go together";
        return std::nullopt;
    }
    if (s.reconnect_backoff_max_ms < s.reconnect_backoff_ms) {
        error = "settings: reconnectBackoffMaxMs must not be below reconnectBackoffMs";
        return std::nullopt;
    }
    if (s.client_id.empty()) {
        s.client_id = default_client_id();
    }
    return s;
}

std::optional<subscription_settings> parse_subscription_settings(std::string_view in,
                                                                 std::string& error) {
    bj::value holder;
    const auto* obj = parse_object(in, holder, "subscription settings", error);
    if (obj == nullptr) {
        return std::nullopt;
    }
    subscription_settings s;
    for (const auto& [k, value] : *obj) {
        const std::string key(k);
        if (key == "topics" && value.is_array() && !value.as_array().empty() &&
            value.as_array().size() <= 100) {
            for (const auto& t : value.as_array()) {
                if (!t.is_string() || !valid_topic(t.as_string())) {
                    error = "subscription settings: topics: a topic name is 1..249 characters "
                            "of [a-zA-Z0-9._-]";
                    return std::nullopt;
                }
                s.topics.push_back(text(t));
            }
        } else if (key == "groupId" && value.is_string() && printable(value.as_string())) {
            s.group_id = text(value);
        } else if (key == "startFrom" && value.is_string() &&
                   (value.as_string() == "new" || value.as_string() == "beginning")) {
            s.from_beginning = value.as_string() == "beginning";
        } else {
            error = "subscription settings: invalid or unknown key '" + key + "'";
            return std::nullopt;
        }
    }
    if (s.topics.empty()) {
        error = "subscription settings: topics (a list of topic names) is required";
        return std::nullopt;
    }
    return s;
}

const char* const connector_schema_json =
    R"({"type":"object","additionalProperties":false,"required":["bootstrapServers"],"properties":{)"
    R"("bootstrapServers":{"type":"string","minLength":1,"maxLength":4000,)"
    R"("description":"host:port of one or more brokers, comma-separated"},)"
    R"("clientId":{"type":"string","minLength":1,"maxLength":255},)"
    R"("securityProtocol":{"enum":["plaintext","ssl","sasl_plaintext","sasl_ssl"],"default":"plaintext"},)"
    R"("saslMechanism":{"enum":["PLAIN","SCRAM-SHA-256","SCRAM-SHA-512"]},)"
    R"("saslUsername":{"type":"string","minLength":1,"maxLength":1024},)"
    R"("saslPassword":{"type":"string","minLength":1,"maxLength":4096,"writeOnly":true,"x-secret":true},)"
    R"("sslCaLocation":{"type":"string","minLength":1},)"
    R"("sslCertificateLocation":{"type":"string","minLength":1},)"
    R"("sslKeyLocation":{"type":"string","minLength":1},)"
    R"("sslKeyPassword":{"type":"string","minLength":1,"maxLength":4096,"writeOnly":true,"x-secret":true},)"
    R"("sessionTimeoutMs":{"type":"integer","minimum":1000,"maximum":3600000,"default":45000},)"
    R"("reconnectBackoffMs":{"type":"integer","minimum":10,"maximum":60000,"default":100},)"
    R"("reconnectBackoffMaxMs":{"type":"integer","minimum":10,"maximum":600000,"default":10000},)"
    R"("pollWaitMs":{"type":"integer","minimum":10,"maximum":5000,"default":200},)"
    R"("commitIntervalMs":{"type":"integer","minimum":0,"maximum":60000,"default":100},)"
    R"("maxInFlight":{"type":"integer","minimum":1,"maximum":100000,"default":256},)"
    R"("retryDelayMs":{"type":"integer","minimum":10,"maximum":3600000,"default":1000},)"
    R"("revokeGraceMs":{"type":"integer","minimum":0,"maximum":60000,"default":2000},)"
    R"("maxMessageBytes":{"type":"integer","minimum":1,"maximum":67108864,"default":1048576},)"
    R"("properties":{"type":"object","additionalProperties":{"type":["string","integer","boolean"]},)"
    R"("description":"further librdkafka properties; not auto commit, offset store, group or security ones"}}})";

const char* const subscription_schema_json =
    R"({"type":"object","additionalProperties":false,"required":["topics"],"properties":{)"
    R"("topics":{"type":"array","minItems":1,"maxItems":100,"items":{"type":"string",)"
    R"("pattern":"^[a-zA-Z0-9._-]{1,249}$"}},)"
    R"("groupId":{"type":"string","minLength":1,"maxLength":255,"default":"wopbridge"},)"
    R"("startFrom":{"enum":["new","beginning"],"default":"new"}}})";

} // namespace wopbridge::kafka
