#include "rabbitmq/message_event.hpp"

#include "wopbridge/json_bytes.hpp"
#include "wopbridge/json_util.hpp"
#include "wopbridge/signatures.hpp"
#include "wopbridge/stream_event.hpp"

namespace wopbridge::rabbitmq {

std::optional<std::string> provider_event_id(const message_view& m, bool content_hash) {
    if (m.message_id && !m.message_id->empty()) {
        return std::string(m.queue) + ":id:" + std::string(*m.message_id);
    }
    if (!content_hash) {
        return std::nullopt;
    }
    // Length-prefixed, so ("a", "bc") and ("ab", "c") differ.
    std::string material;
    for (const auto part : {m.exchange, m.routing_key, m.data}) {
        material += std::to_string(part.size());
        material += ':';
        material += part;
    }
    return std::string(m.queue) + ":sha256:" + sig::to_hex(sig::sha256(material));
}

std::string event_content(const message_view& m, std::size_t max_message_bytes,
                          bool without_payload) {
    std::string out = R"({"stream":{"topic":)" + json::quote(json::carried_text(m.queue));
    if (!m.routing_key.empty()) {
        out += R"(,"key":)" + json::quote(json::carried_text(m.routing_key));
    }
    out += R"(,"message":)" + json::stream_message(m.data, max_message_bytes, without_payload);
    out += "}}";
    return out;
}

} // namespace wopbridge::rabbitmq
