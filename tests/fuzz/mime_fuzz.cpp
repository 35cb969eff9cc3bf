// MIME message parsing (email connector): headers, multipart trees, transfer encodings, RFC 2047
// encoded words, address lists.
#include "email/mime.hpp"

#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    namespace email = wopbridge::email;
    std::string_view in(reinterpret_cast<const char*>(data), size);
    email::mime_limits limits;
    limits.max_depth = 8;
    limits.max_parts = 32;
    limits.max_attachments = 8;
    if (auto m = email::parse_message(in, limits)) {
        (void)m->header("subject");
    }
    if (size < 4096) {
        (void)email::decode_quoted_printable(in);
        bool converted = false;
        (void)email::decode_encoded_words(in, &converted);
        for (const auto& a : email::split_address_list(in)) {
            (void)email::address_of(a);
        }
    }
    return 0;
}
