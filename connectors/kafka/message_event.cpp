#include "kafka/message_event.hpp"

#include "wopbridge/json_bytes.hpp"
#include "wopbridge/json_util.hpp"
#include "wopbridge/stream_event.hpp"

namespace wopbridge::kafka {

std::string provider_event_id(std::string_view topic, std::int32_t partition, std::int64_t offset) {
    return std::string(topic) + "/" + std::to_string(partition) + "/" + std::to_string(offset);
}

std::string event_content(const record_view& r, std::size_t max_message_bytes,
                          bool without_payload) {
    std::string out = R"({"stream":{"topic":)" + json::quote(json::carried_text(r.topic)) +
                      R"(,"partition":)" + std::to_string(r.partition) + R"(,"offset":")" +
                      std::to_string(r.offset) + '"';
    if (r.key) {
        out += R"(,"key":)" + json::quote(json::carried_text(*r.key));
    }
    out += R"(,"message":)" + json::stream_message(r.data, max_message_bytes, without_payload);
    out += "}}";
    return out;
}

} // namespace wopbridge::kafka
