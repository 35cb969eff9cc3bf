// The bridge's own signed-webhook intake: secret splitting, header lookup, Standard Webhooks
// verification in every mode, and the content JSON built from the request.
// Input: "<webhook-id>\n<webhook-timestamp>\n<webhook-signature>\n<content-type>\n<body>".
#include "fuzz_input.hpp"
#include "intake/webhook_intake.hpp"

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    auto f = wopbridge::fuzz::split_fields(data, size, 5);
    wopbridge::inbound_http_request req;
    req.target = "/hooks/sub_1?x=1";
    req.headers = {{"webhook-id", std::string(f[0])},
                   {"Webhook-Timestamp", std::string(f[1])},
                   {"webhook-signature", std::string(f[2])},
                   {"content-type", std::string(f[3])}};
    req.body = std::string(f[4]);
    auto secrets = wopbridge::intake::split_secrets(f[2]);
    secrets.push_back("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
    for (auto mode : {wopbridge::verification_mode::required,
                      wopbridge::verification_mode::best_effort, wopbridge::verification_mode::none}) {
        (void)wopbridge::intake::verify_webhook(mode, secrets, req, 1'614'265'330);
    }
    (void)wopbridge::intake::webhook_content_json(req);
    (void)wopbridge::intake::header_allowed(f[3]);
    return 0;
}
