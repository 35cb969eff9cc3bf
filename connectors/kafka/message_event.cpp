#include "kafka/message_event.hpp"

#include "wopbridge/json_bytes.hpp"
#include "wopbridge/json_util.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

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
    out += R"(,"message":)";
    if (without_payload || r.data.size() > max_message_bytes) {
        // Oversize or refused: still one event (topic, partition, offset name it).
        out += "null";
    } else {
        boost::system::error_code ec;
        // Boost.JSON refuses invalid UTF-8, so a parsed value is always valid JSON text.
        auto parsed = r.data.empty() ? boost::json::value{} : boost::json::parse(r.data, ec);
        if (!r.data.empty() && !ec) {
            out += boost::json::serialize(parsed);
        } else if (json::valid_utf8(r.data)) {
            out += json::quote(r.data);
        } else {
            out += boost::json::serialize(json::carried_bytes(r.data));
        }
    }
    out += "}}";
    return out;
}

} // namespace wopbridge::kafka
