#pragma once
// RFC 5322 + MIME (RFC 2045-2047, 2231) parsing for inbound mail: header unfolding, encoded-words,
// multipart nesting, base64/quoted-printable, charset conversion to UTF-8, body selection and
// attachment extraction. Pure functions: attachments come back as bytes; the module stores them.

#include <wopbridge/multipart.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wopbridge::email {

using http::param_list;

// Lenient base64 as found in mail: whitespace and line breaks ignored, decoding stops at '='.
std::string decode_base64_mime(std::string_view text);
// Quoted-printable (RFC 2045 §6.7): soft line breaks, =XX escapes; broken escapes kept literally.
std::string decode_quoted_printable(std::string_view text);

// Replaces invalid UTF-8 sequences with U+FFFD so the result is always valid JSON text.
std::string sanitize_utf8(std::string_view bytes);

// Converts `bytes` in `charset` to UTF-8. Known: utf-8, us-ascii, iso-8859-1 (decoded as
// windows-1252, as browsers and mail clients do: C1 controls never carry text), windows-1252.
// Unknown charsets return the bytes sanitized as UTF-8 with *converted = false.
std::string to_utf8(std::string_view bytes, std::string_view charset, bool* converted = nullptr);

// RFC 2047 encoded-words (B and Q) inside an unstructured header value; whitespace between two
// adjacent encoded-words is dropped. Non-encoded text is sanitized as UTF-8.
std::string decode_encoded_words(std::string_view value, bool* converted = nullptr);

// Splits an address-list header ("A <a@x>, \"B, Jr\" <b@y>") into mailboxes, commas inside quotes
// and angle brackets respected; each mailbox has its encoded-words decoded.
std::vector<std::string> split_address_list(std::string_view value);
// The addr-spec of a mailbox ("Name <a@x>" -> "a@x", "a@x" -> "a@x"), lower-cased domain kept as
// is.
std::string address_of(std::string_view mailbox);

struct mime_limits {
    std::size_t max_depth = 16;
    std::size_t max_parts = 256;
    std::size_t max_attachments = 64;
};

struct mime_attachment {
    std::string filename; // UTF-8, may be empty
    std::string media_type;
    std::string bytes; // transfer-decoded
};

struct parsed_message {
    param_list headers; // top-level, unfolded, raw (not decoded)
    std::string from;
    std::vector<std::string> to;
    std::string subject;
    std::string message_id; // trimmed, as written (usually "<...>"); empty when absent
    std::string text;
    std::optional<std::string> html;
    std::vector<mime_attachment> attachments;
    bool unconverted_charset = false; // some text kept as-is (unknown charset)
    bool truncated_structure = false; // depth/part/attachment limits cut the tree short
    std::optional<std::string> header(std::string_view name) const;
};

// Parses a whole message (headers, blank line, body). Never fails: a message without structure
// becomes a text body; nullopt only when the header block is not RFC 5322 at all.
std::optional<parsed_message> parse_message(std::string_view raw, const mime_limits& limits = {});

} // namespace wopbridge::email
