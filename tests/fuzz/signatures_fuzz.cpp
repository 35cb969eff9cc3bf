// Standard Webhooks, Slack v0, Twilio and openwop-v1 signature header parsing and verification.
// Input: "<id>\n<timestamp>\n<signature header>\n<body>"; the secrets are fixed, so the fuzzer
// explores the header parsers and the comparison paths, not the HMAC.
#include "fuzz_input.hpp"

#include <wopbridge/http_util.hpp>
#include <wopbridge/signatures.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace sig = wopbridge::sig;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    auto f = wopbridge::fuzz::split_fields(data, size, 4);
    const std::int64_t now = 1'700'000'000;
    static const std::vector<std::string> sw_secrets{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
                                                     "not-a-whsec-secret"};
    (void)sig::verify_standard_webhooks(sw_secrets, f[0], f[1], f[2], f[3], now);
    (void)sig::valid_webhook_id(f[0]);
    (void)sig::parse_unix_seconds(f[1]);
    static const std::vector<std::string> slack_secrets{"8f742231b10e8888abcd99yyyzzz85a5"};
    (void)sig::verify_slack_v0(slack_secrets, f[1], f[2], f[3], now);
    static const std::vector<std::string> twilio_tokens{"12345"};
    if (auto params = wopbridge::http::parse_form_urlencoded(f[3])) {
        (void)sig::verify_twilio(twilio_tokens, f[0], *params, f[2]);
    }
    (void)sig::verify_twilio_json(twilio_tokens, f[0], f[3], f[2]);
    (void)sig::verify_openwop_v1("secret", f[1], f[2], f[3], now);
    (void)sig::from_hex(f[2]);
    (void)sig::base64_decode(f[2]);
    return 0;
}
