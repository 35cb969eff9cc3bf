// SMS (Twilio) connector: request body parsing (form or JSON), signed URL construction, port
// variants, X-Twilio-Signature verification, TwiML rendering.
// Input: "<content type>\n<url>\n<signature>\n<body>".
#include "fuzz_input.hpp"
#include "sms/protocol.hpp"
#include "sms/settings.hpp"

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    namespace sms = wopbridge::sms;
    auto f = wopbridge::fuzz::split_fields(data, size, 4);
    sms::settings s;
    s.auth_tokens = {"12345"};
    s.public_url = "https://example.test/sms";
    (void)sms::alternate_port_form(f[1]);
    auto url = sms::signed_url(s, f[1], f[1]);
    std::string error;
    if (auto r = sms::parse_request(f[0], f[3], error)) {
        (void)sms::verify_request(s, *r, url, f[3], f[2]);
        (void)sms::content_json(*r, f[0]);
    }
    (void)sms::twiml_response(std::string(f[2]));
    if (auto cs = sms::parse_connector_settings(f[3], error)) {
        (void)sms::apply_subscription_settings(*cs, f[3], error);
    }
    return 0;
}
