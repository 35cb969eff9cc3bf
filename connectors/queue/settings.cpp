#include "queue/settings.hpp"

#include "wopbridge/json_util.hpp"
#include "wopbridge/settings_reader.hpp"

namespace wopbridge::queue {

namespace {

// Stream, group and consumer names: printable ASCII without spaces, so they are safe in logs.
bool valid_name(std::string_view s) {
    return settings::printable_name(s, 200);
}

} // namespace

std::string default_consumer_name() {
    return settings::host_pid_name("", "wopbridge");
}

std::optional<connector_settings> parse_connector_settings(std::string_view text,
                                                           std::string& error) {
    connector_settings s;
    bool have_url = false;
    settings::reader in("settings");
    in.custom("url",
              [&](const json::flat_value& value, std::string& reason) {
                  if (value.type != json::flat_value::kind::string) {
                      return false;
                  }
                  auto url = parse_redis_url(value.text, reason);
                  if (!url) {
                      reason = in.message(reason);
                      return false;
                  }
                  s.url = std::move(*url);
                  have_url = true;
                  return true;
              })
        .text("consumer", s.consumer, valid_name)
        .integer("blockMs", 1, 60000, s.block_ms)
        .integer("batchSize", 1, 1000, s.batch_size)
        .integer("claimIdleMs", 0, 86'400'000, s.claim_idle_ms)
        .integer("maxInFlight", 1, 10000, s.max_in_flight)
        .integer("connectTimeoutMs", 10, 60000, s.connect_timeout_ms)
        .integer("commandTimeoutMs", 10, 60000, s.command_timeout_ms)
        .integer("retryDelayMs", 10, 3'600'000, s.retry_delay_ms)
        .integer("maxMessageBytes", 1, 64 * 1024 * 1024, s.max_message_bytes);
    if (!in.read(text, error)) {
        return std::nullopt;
    }
    if (!have_url) {
        error = in.message("url (redis://[user:password@]host:port/db) is required");
        return std::nullopt;
    }
    if (s.consumer.empty()) {
        s.consumer = default_consumer_name();
    }
    return s;
}

std::optional<subscription_settings> parse_subscription_settings(std::string_view text,
                                                                 std::string& error) {
    subscription_settings s;
    settings::reader in("subscription settings");
    in.text("stream", s.stream, valid_name)
        .text("group", s.group, valid_name)
        .choice("startFrom", s.from_beginning, {{"new", false}, {"beginning", true}})
        .text("keyField", s.key_field, 200)
        .text("messageField", s.message_field, 200);
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
