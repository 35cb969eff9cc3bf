// application/x-www-form-urlencoded bodies and query strings (sdk http_util + the forms
// connector's wrapper), plus the origin normalisation applied to Origin/Referer.
#include "forms/form_logic.hpp"

#include <wopbridge/http_util.hpp>

#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view in(reinterpret_cast<const char*>(data), size);
    namespace http = wopbridge::http;
    if (auto params = http::parse_form_urlencoded(in)) {
        // Round trip: what we format must parse back to the same list.
        auto again = http::parse_form_urlencoded(http::format_form_urlencoded(*params));
        if (!again || *again != *params) {
            __builtin_trap();
        }
    }
    (void)wopbridge::forms::parse_urlencoded(in);
    (void)http::parse_query(in);
    (void)http::path_of(in);
    (void)http::percent_decode(in, true);
    (void)http::media_type(in);
    (void)wopbridge::forms::normalize_origin(in);
    return 0;
}
