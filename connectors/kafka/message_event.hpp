#pragma once
// The TriggerEvent content of one Kafka record, kept apart from the client library so it is
// unit-tested without a broker.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace wopbridge::kafka {

struct record_view {
    std::string_view topic;
    std::int32_t partition = 0;
    std::int64_t offset = 0;
    std::optional<std::string_view> key; // the record key, when it has one
    std::string_view data;
};

// The host dedups by this: topic, partition and offset name a record for good, the same on every
// redelivery and for every member of every group.
std::string provider_event_id(std::string_view topic, std::int32_t partition, std::int64_t offset);

// {"stream":{"topic":..,"partition":..,"offset":"<offset>","key"?,"message":...}}. The payload is
// parsed JSON, else the text itself, else (not UTF-8) {"$base64": ...}; above `max_message_bytes`
// (or with `without_payload`) "message" is null.
std::string event_content(const record_view& r, std::size_t max_message_bytes,
                          bool without_payload);

} // namespace wopbridge::kafka
