#pragma once
// The email TriggerEvent content and its dedup identity, shared by the SMTP and webhook paths.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wopbridge::email {

struct attachment_ref {
    std::string ref;
    std::string filename;
    std::string media_type;
    std::uint64_t bytes = 0;
};

struct email_content {
    std::string from;
    std::vector<std::string> to;
    std::string subject;
    std::string text;
    std::optional<std::string> html;
    std::vector<attachment_ref> attachments;
};

// {"email":{"from","to","subject","text","html"?,"attachments"}} (EmailEvent is closed).
std::string email_content_json(const email_content& c);

// "msgid:<Message-ID>" when the message has one, else "hash:" + hex SHA-256 of `fallback`.
std::string email_event_id(std::string_view message_id, std::string_view fallback);

} // namespace wopbridge::email
