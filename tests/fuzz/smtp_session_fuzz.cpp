// SMTP session state machine (email connector). Input: one dialogue, lines separated by LF (a
// trailing CR is stripped like the I/O layer does). Bytes 0x01 / 0x02 at the start of a line stand
// for "the I/O layer saw an overlong line" / "TLS handshake finished". First byte: bit 1 = TLS,
// bit 2 = AUTH, bit 4 = a line without a trailing CR ended with a bare LF (else every line is
// taken as CRLF-terminated, so plain LF seeds still reach every state).
#include "email/smtp_session.hpp"

#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    namespace email = wopbridge::email;
    std::string_view in(reinterpret_cast<const char*>(data), size);
    email::smtp_config cfg;
    cfg.hostname = "mx.example.test";
    cfg.max_message_bytes = 4096;
    cfg.max_recipients = 4;
    cfg.max_errors = 20;
    cfg.tls_available = !in.empty() && (in[0] & 1);
    cfg.auth_required = !in.empty() && (in[0] & 2);
    const bool strict_endings = !in.empty() && (in[0] & 4);
    email::smtp_hooks hooks;
    hooks.recipient_known = [](std::string_view a) { return a.find("known") != a.npos; };
    hooks.has_capacity = [] { return true; };
    hooks.check_auth = [](std::string_view u, std::string_view p) { return u == "u" && p == "p"; };
    email::smtp_session s(cfg, hooks);
    (void)s.greeting();
    unsigned commits = 0;
    while (!in.empty()) {
        auto nl = in.find('\n');
        auto line = in.substr(0, nl);
        in = nl == in.npos ? std::string_view{} : in.substr(nl + 1);
        auto end = strict_endings ? email::line_end::bare_lf : email::line_end::crlf;
        if (!line.empty() && line.back() == '\r') {
            line.remove_suffix(1);
            end = email::line_end::crlf;
        }
        email::smtp_step step;
        if (!line.empty() && line[0] == '\x01') {
            step = s.on_overlong_line();
            s.overlong_line_ended(end);
        } else if (!line.empty() && line[0] == '\x02') {
            s.tls_started();
            continue;
        } else {
            step = s.on_line(line, end);
        }
        if (step.message_ready) {
            auto env = s.take_envelope();
            auto result = static_cast<email::smtp_session::commit_result>(commits++ % 3);
            step = s.finish_message(result);
        }
        if (step.start_tls) {
            s.tls_started();
        }
        if (step.close) {
            break;
        }
    }
    (void)s.shutdown_reply();
    (void)s.timeout_reply();
    return 0;
}
