#include "email_event.hpp"

#include <wopbridge/json_bytes.hpp>
#include <wopbridge/json_util.hpp>
#include <wopbridge/signatures.hpp>

#include <boost/json.hpp>

namespace wopbridge::email {

namespace {
boost::json::string text(std::string_view s) {
    return boost::json::string(json::lossy_utf8(s));
}
} // namespace

bool email_content_is_utf8(const email_content& c) {
    bool ok = json::valid_utf8(c.from) && json::valid_utf8(c.subject) && json::valid_utf8(c.text) &&
              (!c.html || json::valid_utf8(*c.html));
    for (const auto& t : c.to) {
        ok = ok && json::valid_utf8(t);
    }
    for (const auto& a : c.attachments) {
        ok = ok && json::valid_utf8(a.filename) && json::valid_utf8(a.media_type);
    }
    return ok;
}

std::string email_content_json(const email_content& c) {
    boost::json::array to;
    for (const auto& t : c.to) {
        to.emplace_back(text(t));
    }
    boost::json::array atts;
    for (const auto& a : c.attachments) {
        boost::json::object o{{"ref", a.ref}, {"bytes", a.bytes}};
        if (!a.filename.empty()) {
            o["filename"] = json::carried_text(a.filename); // AttachmentRef's string: lossless
        }
        if (!a.media_type.empty()) {
            o["mediaType"] = text(a.media_type);
        }
        atts.emplace_back(std::move(o));
    }
    boost::json::object email{{"from", text(c.from)},
                              {"to", std::move(to)},
                              {"subject", text(c.subject)},
                              {"text", text(c.text)},
                              {"attachments", std::move(atts)}};
    if (c.html) {
        email["html"] = text(*c.html);
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
