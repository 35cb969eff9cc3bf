#pragma once
// The TriggerEvent content of one JetStream message, kept apart from the client library so it is
// unit-tested without a broker.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace wopbridge::nats {

struct message_view {
    std::string_view stream;
    std::uint64_t stream_sequence = 0;
    std::string_view subject;
    std::optional<std::string_view> key; // the keyHeader's value, when present
    std::string_view data;
};

// The host dedups by this: the stream sequence is the message's stable identity in its stream,
// the same on every redelivery and for every consumer.
std::string provider_event_id(std::string_view stream, std::uint64_t stream_sequence);

// {"stream":{"topic":<subject>,"offset":"<stream sequence>","key"?,"message":...}}. The payload
// is parsed JSON, else the text itself, else (not UTF-8) {"$base64": ...}; above
// `max_message_bytes` (or with `without_payload`) "message" is null.
std::string event_content(const message_view& m, std::size_t max_message_bytes,
                          bool without_payload);

} // namespace wopbridge::nats
