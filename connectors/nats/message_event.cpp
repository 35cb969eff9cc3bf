#include "nats/message_event.hpp"

#include "wopbridge/json_bytes.hpp"
#include "wopbridge/json_util.hpp"
#include "wopbridge/stream_event.hpp"

namespace wopbridge::nats {

std::string provider_event_id(std::string_view stream, std::uint64_t stream_sequence) {
    return std::string(stream) + ":" + std::to_string(stream_sequence);
}

std::string event_content(const message_view& m, std::size_t max_message_bytes,
                          bool without_payload) {
    std::string out = R"({"stream":{"topic":)" + json::quote(json::carried_text(m.subject)) +
                      R"(,"offset":")" + std::to_string(m.stream_sequence) + '"';
    if (m.key) {
        out += R"(,"key":)" + json::quote(json::carried_text(*m.key));
    }
    out += R"(,"message":)" + json::stream_message(m.data, max_message_bytes, without_payload);
    out += "}}";
    return out;
}

} // namespace wopbridge::nats
