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

// True when every string of `c` is valid UTF-8. EmailEvent's fields are typed strings, so when
// this is false email_content_json carries U+FFFD for the bad bytes and the caller attaches the
// original message (the exact bytes) as `original.eml` (SMTP) or `original-request` (webhook).
bool email_content_is_utf8(const email_content& c);

// Attachment name and media type of that original message.
inline constexpr const char* original_message_filename = "original.eml";
inline constexpr const char* original_message_media_type = "message/rfc822";
// The inbound-parse webhook has no message to keep: the provider's post is kept instead, with its
// own media type.
inline constexpr const char* original_request_filename = "original-request";

// "msgid:<Message-ID>" when the message has one, else "hash:" + hex SHA-256 of `fallback`.
std::string email_event_id(std::string_view message_id, std::string_view fallback);

} // namespace wopbridge::email
