// HTTP request framing (`http::framing_of`, the anti-smuggling check run on every request header).
// Input: header lines "name: value" separated by LF. Checks the contract, not just "no crash":
// an accepted framing names exactly one framing header of its kind and never both.
#include "http/request_framing.hpp"

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

namespace {

bool is(std::string_view name, std::string_view want) {
    if (name.size() != want.size()) {
        return false;
    }
    for (std::size_t i = 0; i < name.size(); ++i) {
        if (std::tolower(static_cast<unsigned char>(name[i])) != want[i]) {
            return false;
        }
    }
    return true;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    namespace http = wopbridge::http;
    std::string_view in(reinterpret_cast<const char*>(data), size);
    std::vector<http::header_view> fields;
    while (!in.empty() && fields.size() < 64) {
        auto nl = in.find('\n');
        auto line = in.substr(0, nl);
        in = nl == std::string_view::npos ? std::string_view{} : in.substr(nl + 1);
        auto colon = line.find(':');
        fields.emplace_back(line.substr(0, colon),
                            colon == std::string_view::npos ? std::string_view{}
                                                            : line.substr(colon + 1));
    }
    auto f = http::framing_of(fields);
    if (!f) {
        return 0;
    }
    int lengths = 0;
    int encodings = 0;
    for (const auto& [name, value] : fields) {
        lengths += is(name, "content-length") ? 1 : 0;
        encodings += is(name, "transfer-encoding") ? 1 : 0;
    }
    const bool ok = (f->kind == http::body_framing::none && lengths == 0 && encodings == 0) ||
                    (f->kind == http::body_framing::content_length && lengths == 1 &&
                     encodings == 0) ||
                    (f->kind == http::body_framing::chunked && lengths == 0 && encodings == 1);
    if (!ok) {
        std::abort();
    }
    return 0;
}
