// multipart/form-data (forms connector; also the email inbound-parse webhook). Input:
// "<Content-Type header value>\n<body>"; the body is parsed strictly and leniently with small
// limits so the limit paths are reachable.
#include "email/inbound_parse.hpp"
#include <wopbridge/multipart.hpp>
#include "fuzz_input.hpp"

#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    namespace http = wopbridge::http;
    auto f = wopbridge::fuzz::split_fields(data, size, 2);
    (void)http::parse_header_value(f[0]);
    auto boundary = http::boundary_of(f[0]);
    if (!boundary) {
        return 0;
    }
    http::multipart_limits limits;
    limits.max_parts = 16;
    limits.max_part_bytes = 4096;
    limits.max_total_bytes = 64 * 1024;
    limits.max_header_bytes = 1024;
    for (bool lenient : {false, true}) {
        auto r = http::parse_multipart(f[1], *boundary, limits, lenient);
        for (const auto& part : r.parts) {
            (void)http::form_part_info_of(part);
            (void)part.header("content-type");
        }
        if (r.error == http::multipart_error::none) {
            (void)wopbridge::email::inbound_mail_of(r.parts);
        }
    }
    (void)http::parse_header_block(f[1]);
    return 0;
}
