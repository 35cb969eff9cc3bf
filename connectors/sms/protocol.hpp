#pragma once
// The Twilio-compatible SMS webhook protocol without the ABI: the URL the provider signed, the
// X-Twilio-Signature check (form posts and JSON bodies with bodySHA256), classification (inbound
// message or delivery status callback), the TwiML answer and the submitted content.

#include "sms/settings.hpp"

#include <wopbridge/signatures.hpp>

#include <boost/json/value.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace wopbridge::sms {

// The URL to verify against: the request's public URL, or the configured publicUrl (its own query
// dropped) followed by the query string of `target` as received.
std::string signed_url(const settings& s, std::string_view request_public_url,
                       std::string_view target);

// The same URL with the scheme's default port added when absent, or removed when present
// (Twilio signs the URL as configured; proxies and clients differ on ":443").
std::optional<std::string> alternate_port_form(std::string_view url);

enum class body_format { form, json };

// The verified, parsed request.
struct sms_request {
    body_format format = body_format::form;
    std::vector<std::pair<std::string, std::string>> params; // form fields in arrival order
    boost::json::value body;       // form fields as an object, or the JSON body
    bool status_callback = false;  // MessageStatus present (and not "received")
    std::string provider_event_id; // "sms:<MessageSid>" / "status:<MessageSid>:<MessageStatus>"
};

// Parses the body (form or JSON by content type). nullopt with a one-line `error` if malformed.
// What the signature covers, and no more: the form's parameters (at most max_form_fields, counted
// before any is built; too_many_fields says that was the refusal), or nothing for JSON, which is
// signed as bytes. Then, once verified, complete_request builds the event's fields.
inline constexpr std::size_t max_form_fields = 512; // Twilio sends a few dozen
std::optional<sms_request> read_signed_part(std::string_view content_type, std::string_view body,
                                            std::string& error, bool& too_many_fields);
bool complete_request(sms_request& r, std::string_view body, std::string& error);

// Both steps at once (tests, the fuzz target).
std::optional<sms_request> parse_request(std::string_view content_type, std::string_view body,
                                         std::string& error);

// Verifies X-Twilio-Signature over `url` (and its port variant) with every token.
sig::verdict verify_request(const settings& s, const sms_request& r, std::string_view url,
                            std::string_view body, std::string_view signature);

// XML text escaping; characters XML 1.0 cannot carry (C0 controls but tab/CR/LF) are dropped.
std::string xml_escape(std::string_view text);

// The TwiML answer: <Response/> or <Response><Message>…</Message></Response>.
std::string twiml_response(const std::optional<std::string>& message);

// {"webhook":{"method":"POST","headers":{"content-type":…},"body":{…}}}
std::string content_json(const sms_request& r, std::string_view content_type);

} // namespace wopbridge::sms
