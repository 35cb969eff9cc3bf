// Slack connector: request body classification (Events API JSON, interactivity and slash-command
// forms), filters and content rendering, plus v0 verification with the connector's settings.
// Input: "<content type>\n<timestamp>\n<signature>\n<body>".
#include "fuzz_input.hpp"
#include "slack/protocol.hpp"
#include "slack/settings.hpp"

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    namespace slack = wopbridge::slack;
    auto f = wopbridge::fuzz::split_fields(data, size, 4);
    slack::settings s;
    s.signing_secrets = {"8f742231b10e8888abcd99yyyzzz85a5"};
    s.event_types = std::vector<std::string>{"message", "slash_command", "/deploy"};
    s.channels = std::vector<std::string>{"C123"};
    (void)slack::verify_request(s, f[1], f[2], f[3], 1'700'000'000);
    std::string error;
    if (auto r = slack::parse_request(f[0], f[3], error)) {
        (void)slack::passes_filters(s, *r);
        (void)slack::content_json(*r, {{"content-type", std::string(f[0])}});
    }
    // The settings parsers take operator-written JSON; cheap to cover here too.
    if (auto cs = slack::parse_connector_settings(f[3], error)) {
        (void)slack::apply_subscription_settings(*cs, f[3], error);
    }
    return 0;
}
