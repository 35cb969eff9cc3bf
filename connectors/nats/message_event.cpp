#include "nats/message_event.hpp"

#include "wopbridge/json_bytes.hpp"
#include "wopbridge/json_util.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

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
    out += R"(,"message":)";
    if (without_payload || m.data.size() > max_message_bytes) {
        // Oversize or refused: still one event (topic + offset name it), never a stuck consumer.
        out += "null";
    } else {
        boost::system::error_code ec;
        // Boost.JSON refuses invalid UTF-8, so a parsed value is always valid JSON text.
        auto parsed = m.data.empty() ? boost::json::value{} : boost::json::parse(m.data, ec);
        if (!m.data.empty() && !ec) {
            out += boost::json::serialize(parsed);
        } else if (json::valid_utf8(m.data)) {
            out += json::quote(m.data);
        } else {
            out += boost::json::serialize(json::carried_bytes(m.data));
        }
    }
    out += "}}";
    return out;
}

} // namespace wopbridge::nats
