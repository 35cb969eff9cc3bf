#include "email_event.hpp"

#include <wopbridge/signatures.hpp>

#include <boost/json.hpp>

namespace wopbridge::email {

std::string email_content_json(const email_content& c) {
    boost::json::array to;
    for (const auto& t : c.to) {
        to.emplace_back(boost::json::string(t));
    }
    boost::json::array atts;
    for (const auto& a : c.attachments) {
        boost::json::object o{{"ref", a.ref}, {"bytes", a.bytes}};
        if (!a.filename.empty()) {
            o["filename"] = a.filename;
        }
        if (!a.media_type.empty()) {
            o["mediaType"] = a.media_type;
        }
        atts.emplace_back(std::move(o));
    }
    boost::json::object email{{"from", c.from},
                              {"to", std::move(to)},
                              {"subject", c.subject},
                              {"text", c.text},
                              {"attachments", std::move(atts)}};
    if (c.html) {
        email["html"] = *c.html;
    }
    return boost::json::serialize(boost::json::object{{"email", std::move(email)}});
}

std::string email_event_id(std::string_view message_id, std::string_view fallback) {
    if (!message_id.empty()) {
        return "msgid:" + std::string(message_id);
    }
    return "hash:" + sig::to_hex(sig::sha256(fallback));
}

} // namespace wopbridge::email
