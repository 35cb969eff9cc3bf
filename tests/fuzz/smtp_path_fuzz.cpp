// MAIL FROM:/RCPT TO: path arguments (email connector).
#include "email/smtp_session.hpp"

#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view in(reinterpret_cast<const char*>(data), size);
    (void)wopbridge::email::parse_smtp_path(in);
    return 0;
}
