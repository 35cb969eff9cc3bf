// The strict chunked-body check (`http::chunked_check`, run on every chunked request body beside
// Beast's parser). Input: byte 0 picks where the body is cut, the rest is the body. Checks the
// contract, not just "no crash": the verdict of a body fed in two pieces equals the verdict of it
// fed whole (the server feeds whatever each read returned), and a verdict, once given, stays.
#include "http/chunked_check.hpp"

#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    namespace http = wopbridge::http;
    if (size == 0) {
        return 0;
    }
    std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
    const std::size_t cut = body.empty() ? 0 : data[0] % (body.size() + 1);

    http::chunked_check whole;
    const auto once = whole.feed(body);
    http::chunked_check pieces;
    auto first = pieces.feed(body.substr(0, cut));
    auto twice = pieces.feed(body.substr(cut));
    const bool settled = twice != http::chunked_check::verdict::more;
    if (once != twice || (first != http::chunked_check::verdict::more && first != twice) ||
        (settled && pieces.feed("0\r\n\r\n") != twice)) {
        std::abort();
    }
    return 0;
}
