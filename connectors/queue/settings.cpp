#include "queue/settings.hpp"

#include "wopbridge/json_util.hpp"

#include <charconv>
#include <unistd.h>

namespace wopbridge::queue {

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

// Stream, group and consumer names: printable ASCII without spaces, so they are safe in logs.
bool valid_name(std::string_view s, std::size_t max = 200) {
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

} // namespace

std::string default_consumer_name() {
    char host[256] = {0};
    if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') {
        std::snprintf(host, sizeof host, "wopbridge");
    }
    std::string name = std::string(host) + "-" + std::to_string(::getpid());
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
    bool have_url = false;
    for (const auto& [key, value] : *obj) {
        std::int64_t n = 0;
        if (key == "url" && value.type == kind::string) {
            auto url = parse_redis_url(value.text, error);
            if (!url) {
                error = "settings: " + error;
                return std::nullopt;
            }
            s.url = std::move(*url);
            have_url = true;
        } else if (key == "consumer" && value.type == kind::string && valid_name(value.text)) {
            s.consumer = value.text;
        } else if (key == "blockMs" && as_integer(value, 1, 60000, n)) {
            s.block_ms = n;
        } else if (key == "batchSize" && as_integer(value, 1, 1000, n)) {
            s.batch_size = static_cast<std::size_t>(n);
        } else if (key == "claimIdleMs" && as_integer(value, 0, 86'400'000, n)) {
            s.claim_idle_ms = n;
        } else if (key == "maxInFlight" && as_integer(value, 1, 10000, n)) {
            s.max_in_flight = static_cast<std::size_t>(n);
        } else if (key == "connectTimeoutMs" && as_integer(value, 10, 60000, n)) {
            s.connect_timeout_ms = n;
        } else if (key == "commandTimeoutMs" && as_integer(value, 10, 60000, n)) {
            s.command_timeout_ms = n;
        } else if (key == "retryDelayMs" && as_integer(value, 10, 3'600'000, n)) {
            s.retry_delay_ms = n;
        } else if (key == "maxMessageBytes" && as_integer(value, 1, 64 * 1024 * 1024, n)) {
            s.max_message_bytes = static_cast<std::size_t>(n);
        } else {
            error = "settings: invalid or unknown key '" + key + "'";
            return std::nullopt;
        }
    }
    if (!have_url) {
        error = "settings: url (redis://[user:password@]host:port/db) is required";
        return std::nullopt;
    }
    if (s.consumer.empty()) {
        s.consumer = default_consumer_name();
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
        if (key == "stream" && value.type == kind::string && valid_name(value.text)) {
            s.stream = value.text;
        } else if (key == "group" && value.type == kind::string && valid_name(value.text)) {
            s.group = value.text;
        } else if (key == "startFrom" && value.type == kind::string &&
                   (value.text == "new" || value.text == "beginning")) {
            s.from_beginning = value.text == "beginning";
        } else if (key == "keyField" && value.type == kind::string && !value.text.empty() &&
                   value.text.size() <= 200) {
            s.key_field = value.text;
        } else if (key == "messageField" && value.type == kind::string && !value.text.empty() &&
                   value.text.size() <= 200) {
            s.message_field = value.text;
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
    R"("url":{"type":"string","pattern":"^redis://","writeOnly":true,)"
    R"("description":"redis://[user:password@]host:port/db"},)"
    R"("consumer":{"type":"string","minLength":1,"maxLength":200},)"
    R"("blockMs":{"type":"integer","minimum":1,"maximum":60000,"default":2000},)"
    R"("batchSize":{"type":"integer","minimum":1,"maximum":1000,"default":16},)"
    R"("claimIdleMs":{"type":"integer","minimum":0,"maximum":86400000,"default":60000},)"
    R"("maxInFlight":{"type":"integer","minimum":1,"maximum":10000,"default":64},)"
    R"("connectTimeoutMs":{"type":"integer","minimum":10,"maximum":60000,"default":5000},)"
    R"("commandTimeoutMs":{"type":"integer","minimum":10,"maximum":60000,"default":5000},)"
    R"("retryDelayMs":{"type":"integer","minimum":10,"maximum":3600000,"default":1000},)"
    R"("maxMessageBytes":{"type":"integer","minimum":1,"maximum":67108864,"default":1048576}}})";

const char* const subscription_schema_json =
    R"({"type":"object","additionalProperties":false,"required":["stream"],"properties":{)"
    R"("stream":{"type":"string","minLength":1,"maxLength":200},)"
    R"("group":{"type":"string","minLength":1,"maxLength":200,"default":"wopbridge"},)"
    R"("startFrom":{"enum":["new","beginning"],"default":"new"},)"
    R"("keyField":{"type":"string","minLength":1,"maxLength":200},)"
    R"("messageField":{"type":"string","minLength":1,"maxLength":200}}})";

} // namespace wopbridge::queue
