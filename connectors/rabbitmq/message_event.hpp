#pragma once
// The TriggerEvent content and the dedup identity of one AMQP message, kept apart from the client
// library so they are unit-tested without a broker.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace wopbridge::rabbitmq {

struct message_view {
    std::string_view queue;
    std::string_view exchange;
    std::string_view routing_key;
    std::optional<std::string_view> message_id; // the message_id property, when set
    std::string_view data;
};

// The host dedups by this. With a message_id: "<queue>:id:<message_id>" (the publisher's
// identity of the message, the same on every redelivery and for every consumer). Without one and
// `content_hash`: "<queue>:sha256:<hex of exchange, routing key, body>" (identical messages are
// one). nullopt without a message_id otherwise (the caller rejects the message). Delivery tags are
// never used: they count deliveries on one channel and change with every redelivery.
std::optional<std::string> provider_event_id(const message_view& m, bool content_hash);

// {"stream":{"topic":<queue>,"key"?:<routing key>,"message":...}}. The payload is parsed JSON,
// else the text itself, else (not UTF-8) {"$base64": ...}; above `max_message_bytes` (or with
// `without_payload`) "message" is null.
std::string event_content(const message_view& m, std::size_t max_message_bytes,
                          bool without_payload);

} // namespace wopbridge::rabbitmq
