#include "smtp_session.hpp"

#include "mime.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace wopbridge::email {
namespace {

std::string upper(std::string_view s) {
    std::string out(s);
    for (auto& c : out) {
        c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    return out;
}

std::string lower(std::string_view s) {
    std::string out(s);
    for (auto& c : out) {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return out;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
        s.remove_prefix(1);
    }
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
        s.remove_suffix(1);
    }
    return s;
}

bool starts_with_ci(std::string_view s, std::string_view prefix) {
    return s.size() >= prefix.size() && upper(s.substr(0, prefix.size())) == prefix;
}

} // namespace

std::optional<smtp_path> parse_smtp_path(std::string_view arg) {
    arg = trim(arg);
    if (arg.empty() || arg.front() != '<') {
        return std::nullopt;
    }
    auto close = arg.find('>');
    if (close == std::string_view::npos) {
        return std::nullopt;
    }
    smtp_path p;
    auto addr = arg.substr(1, close - 1);
    // Source routes ("@a,@b:user@c") are obsolete: keep the mailbox (RFC 5321 §4.1.2).
    if (!addr.empty() && addr.front() == '@') {
        auto colon = addr.find(':');
        if (colon == std::string_view::npos) {
            return std::nullopt;
        }
        addr = addr.substr(colon + 1);
    }
    for (char c : addr) {
        if (static_cast<unsigned char>(c) < 33 || c == '<' || c == '>') {
            return std::nullopt;
        }
    }
    if (!addr.empty() && addr.find('@') == std::string_view::npos) {
        return std::nullopt;
    }
    p.address = std::string(addr);
    auto rest = trim(arg.substr(close + 1));
    while (!rest.empty()) {
        auto sp = rest.find(' ');
        auto tok = rest.substr(0, sp);
        auto eq = tok.find('=');
        p.params.emplace_back(upper(tok.substr(0, eq)),
                              eq == std::string_view::npos ? "" : std::string(tok.substr(eq + 1)));
        rest = sp == std::string_view::npos ? std::string_view{} : trim(rest.substr(sp + 1));
    }
    return p;
}

smtp_session::smtp_session(smtp_config config, smtp_hooks hooks)
    : config_(std::move(config)), hooks_(std::move(hooks)) {}

std::string smtp_session::greeting() const {
    return "220 " + config_.hostname + " ESMTP wopbridge\r\n";
}

std::string smtp_session::shutdown_reply() const {
    return "421 4.3.2 " + config_.hostname + " shutting down\r\n";
}

std::string smtp_session::timeout_reply() const {
    return "421 4.4.2 " + config_.hostname + " timeout, closing\r\n";
}

void smtp_session::reset_transaction() {
    envelope_ = {};
    data_bytes_ = 0;
    data_too_large_ = false;
    data_line_too_long_ = false;
    data_bare_newline_ = false;
    prev_crlf_ = true;
    if (state_ != state::fresh) {
        state_ = state::greeted;
    }
}

void smtp_session::tls_started() {
    tls_active_ = true;
    authenticated_ = false;
    envelope_ = {};
    state_ = state::fresh;
}

smtp_envelope smtp_session::take_envelope() {
    return std::move(envelope_);
}

smtp_step smtp_session::error(std::string reply) {
    smtp_step s;
    s.reply = std::move(reply);
    if (++errors_ >= config_.max_errors) {
        s.reply += "421 4.7.0 too many errors, closing\r\n";
        s.close = true;
    }
    return s;
}

smtp_step smtp_session::on_overlong_line() {
    if (state_ == state::data) {
        data_line_too_long_ = true;
        prev_crlf_ = false; // until overlong_line_ended() says how it ended
        return {};
    }
    return error("500 5.5.2 line too long\r\n");
}

void smtp_session::overlong_line_ended(line_end end) {
    if (state_ == state::data) {
        prev_crlf_ = end == line_end::crlf;
        data_bare_newline_ = data_bare_newline_ || !prev_crlf_;
    }
}

smtp_step smtp_session::on_line(std::string_view line, line_end end) {
    if (state_ == state::data) {
        return data_line(line, end);
    }
    if (end != line_end::crlf || line.find('\r') != std::string_view::npos) {
        // Another server may split these lines elsewhere: never act on such a command.
        if (state_ == state::auth_plain) {
            state_ = state::greeted;
        }
        return error("500 5.5.2 bare <CR> or <LF> received, lines must end with <CR><LF>\r\n");
    }
    if (state_ == state::auth_plain) {
        return auth_response(line);
    }
    return command(line);
}

smtp_step smtp_session::data_line(std::string_view line, line_end end) {
    const bool crlf = end == line_end::crlf;
    const bool after_crlf = prev_crlf_;
    prev_crlf_ = crlf;
    // Only <CRLF>.<CRLF> ends DATA (RFC 5321 §4.1.1.4): "\n.\n", "\r\n.\n" or "\n.\r\n" is
    // content of a doomed message, never its end.
    if (line == "." && crlf && after_crlf) {
        smtp_step s;
        state_ = state::greeted;
        if (data_bare_newline_) {
            s.reply = "550 5.6.11 bare <CR> or <LF> in message, message dropped\r\n";
            reset_transaction(); // the next message starts clean
            return s;
        }
        if (data_too_large_) {
            s.reply = "552 5.3.4 message exceeds fixed maximum message size\r\n";
            reset_transaction(); // the next message starts clean
            return s;
        }
        if (data_line_too_long_) {
            s.reply = "500 5.5.6 line too long in message\r\n";
            reset_transaction(); // the next message starts clean
            return s;
        }
        s.message_ready = true;
        return s;
    }
    if (!crlf || line.find('\r') != std::string_view::npos) {
        // Read on to the real end so the reply lands in sync, but keep nothing.
        data_bare_newline_ = true;
        envelope_.data.clear();
        envelope_.data.shrink_to_fit();
        return {};
    }
    if (!line.empty() && line.front() == '.') {
        line.remove_prefix(1); // dot-unstuffing (RFC 5321 §4.5.2)
    }
    data_bytes_ += line.size() + 2;
    if (data_bytes_ > config_.max_message_bytes) {
        // Keep reading to the final dot so the reply lands in sync, but keep nothing.
        data_too_large_ = true;
        envelope_.data.clear();
        envelope_.data.shrink_to_fit();
        return {};
    }
    if (!data_too_large_ && !data_bare_newline_) {
        envelope_.data.append(line);
        envelope_.data.append("\r\n");
    }
    return {};
}

smtp_step smtp_session::finish_message(commit_result result) {
    smtp_step s;
    switch (result) {
    case commit_result::committed:
        s.reply = "250 2.0.0 OK: queued\r\n";
        break;
    case commit_result::temporary_failure:
        s.reply = "451 4.3.0 temporary failure, try again later\r\n";
        break;
    case commit_result::rejected:
        s.reply = "554 5.6.0 message rejected\r\n";
        break;
    }
    reset_transaction();
    return s;
}

smtp_step smtp_session::command(std::string_view line) {
    auto sp = line.find(' ');
    auto verb = upper(line.substr(0, sp));
    auto arg = sp == std::string_view::npos ? std::string_view{} : trim(line.substr(sp + 1));
    if (verb == "EHLO" || verb == "HELO") {
        return do_ehlo(arg, verb == "EHLO");
    }
    if (verb == "QUIT") {
        return {"221 2.0.0 " + config_.hostname + " closing\r\n", true, false, false};
    }
    if (verb == "NOOP") {
        return {"250 2.0.0 OK\r\n"};
    }
    if (verb == "RSET") {
        reset_transaction();
        return {"250 2.0.0 OK\r\n"};
    }
    if (verb == "VRFY") {
        return {"252 2.5.2 cannot verify, send some mail\r\n"};
    }
    if (verb == "HELP") {
        return {"214 2.0.0 EHLO HELO MAIL RCPT DATA RSET NOOP QUIT\r\n"};
    }
    if (verb == "STARTTLS") {
        if (!config_.tls_available || tls_active_) {
            return error("502 5.5.1 STARTTLS not available\r\n");
        }
        if (!arg.empty()) {
            return error("501 5.5.4 STARTTLS takes no argument\r\n");
        }
        if (state_ == state::fresh) {
            return error("503 5.5.1 EHLO first\r\n");
        }
        smtp_step s{"220 2.0.0 ready to start TLS\r\n"};
        s.start_tls = true;
        return s;
    }
    if (verb == "AUTH") {
        return do_auth(arg);
    }
    if (verb == "MAIL") {
        return do_mail(arg);
    }
    if (verb == "RCPT") {
        return do_rcpt(arg);
    }
    if (verb == "DATA") {
        if (!arg.empty()) {
            return error("501 5.5.4 DATA takes no argument\r\n");
        }
        if (state_ == state::mail) {
            return error("554 5.5.1 no valid recipients\r\n");
        }
        if (state_ != state::rcpt) {
            return error("503 5.5.1 need MAIL and RCPT first\r\n");
        }
        state_ = state::data;
        data_bytes_ = 0;
        prev_crlf_ = true; // the DATA command's own CRLF
        return {"354 end data with <CR><LF>.<CR><LF>\r\n"};
    }
    return error("500 5.5.1 command not recognized\r\n");
}

smtp_step smtp_session::do_ehlo(std::string_view arg, bool extended) {
    if (arg.empty()) {
        return error("501 5.5.4 domain required\r\n");
    }
    reset_transaction();
    state_ = state::greeted;
    if (!extended) {
        return {"250 " + config_.hostname + "\r\n"};
    }
    std::vector<std::string> lines{config_.hostname, "PIPELINING",
                                   "SIZE " + std::to_string(config_.max_message_bytes), "8BITMIME",
                                   "ENHANCEDSTATUSCODES"};
    if (config_.tls_available && !tls_active_) {
        lines.emplace_back("STARTTLS");
    }
    // Credentials only over TLS when TLS is configured (RFC 4954 §4).
    if (config_.auth_required && (tls_active_ || !config_.tls_available)) {
        lines.emplace_back("AUTH PLAIN");
    }
    std::string reply;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        reply += (i + 1 == lines.size() ? "250 " : "250-") + lines[i] + "\r\n";
    }
    return {reply};
}

smtp_step smtp_session::do_auth(std::string_view arg) {
    if (!config_.auth_required) {
        return error("502 5.5.1 AUTH not available\r\n");
    }
    if (state_ == state::fresh) {
        return error("503 5.5.1 EHLO first\r\n");
    }
    if (authenticated_) {
        return error("503 5.5.1 already authenticated\r\n");
    }
    if (state_ == state::mail || state_ == state::rcpt) {
        return error("503 5.5.1 AUTH not permitted during a transaction\r\n");
    }
    if (config_.tls_available && !tls_active_) {
        return error("538 5.7.11 encryption required for AUTH\r\n");
    }
    auto sp = arg.find(' ');
    auto mech = upper(arg.substr(0, sp));
    if (mech != "PLAIN") {
        return error("504 5.5.4 only AUTH PLAIN is supported\r\n");
    }
    if (sp == std::string_view::npos) {
        state_ = state::auth_plain;
        return {"334 \r\n"};
    }
    return auth_response(trim(arg.substr(sp + 1)));
}

smtp_step smtp_session::auth_response(std::string_view b64) {
    state_ = state::greeted;
    if (b64 == "*") {
        return error("501 5.0.0 authentication cancelled\r\n");
    }
    auto decoded = decode_base64_mime(b64);
    // authzid NUL authcid NUL passwd
    auto n1 = decoded.find('\0');
    auto n2 = n1 == std::string::npos ? n1 : decoded.find('\0', n1 + 1);
    if (n2 == std::string::npos) {
        return error("501 5.5.2 malformed AUTH PLAIN response\r\n");
    }
    std::string_view d(decoded);
    auto authzid = d.substr(0, n1);
    auto user = d.substr(n1 + 1, n2 - n1 - 1);
    auto pass = d.substr(n2 + 1);
    // No proxy authorization (RFC 4616 §2): acting as another identity is refused before the
    // password is looked at, with the same reply, so the answer tells nothing about the password.
    if (!authzid.empty() && authzid != user) {
        return error("535 5.7.8 authentication credentials invalid\r\n");
    }
    if (hooks_.check_auth && hooks_.check_auth(user, pass)) {
        authenticated_ = true;
        return {"235 2.7.0 authentication succeeded\r\n"};
    }
    return error("535 5.7.8 authentication credentials invalid\r\n");
}

smtp_step smtp_session::do_mail(std::string_view arg) {
    if (state_ == state::fresh) {
        return error("503 5.5.1 EHLO/HELO first\r\n");
    }
    if (state_ != state::greeted) {
        return error("503 5.5.1 nested MAIL command\r\n");
    }
    if (config_.auth_required && !authenticated_) {
        return error("530 5.7.0 authentication required\r\n");
    }
    if (!starts_with_ci(arg, "FROM:")) {
        return error("501 5.5.4 syntax: MAIL FROM:<address>\r\n");
    }
    auto path = parse_smtp_path(arg.substr(5));
    if (!path) {
        return error("501 5.1.7 bad sender address syntax\r\n");
    }
    for (const auto& [key, value] : path->params) {
        if (key == "SIZE") {
            std::size_t size = 0;
            auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), size);
            if (ec != std::errc{} || p != value.data() + value.size()) {
                return error("501 5.5.4 bad SIZE parameter\r\n");
            }
            if (size > config_.max_message_bytes) {
                return {"552 5.3.4 message size exceeds fixed maximum message size\r\n"};
            }
        } else if (key != "BODY" && key != "AUTH") {
            return error("555 5.5.4 unsupported MAIL parameter\r\n");
        }
    }
    if (hooks_.has_capacity && !hooks_.has_capacity()) {
        return {"452 4.3.1 insufficient system resources, try again later\r\n"};
    }
    envelope_ = {};
    envelope_.mail_from = path->address;
    state_ = state::mail;
    return {"250 2.1.0 OK\r\n"};
}

smtp_step smtp_session::do_rcpt(std::string_view arg) {
    if (state_ != state::mail && state_ != state::rcpt) {
        return error("503 5.5.1 need MAIL before RCPT\r\n");
    }
    if (!starts_with_ci(arg, "TO:")) {
        return error("501 5.5.4 syntax: RCPT TO:<address>\r\n");
    }
    auto path = parse_smtp_path(arg.substr(3));
    if (!path || path->address.empty()) {
        return error("501 5.1.3 bad recipient address syntax\r\n");
    }
    if (envelope_.recipients.size() >= config_.max_recipients) {
        return {"452 4.5.3 too many recipients\r\n"};
    }
    auto address = lower(path->address);
    if (!hooks_.recipient_known || !hooks_.recipient_known(address)) {
        return {"550 5.1.1 mailbox unavailable\r\n"};
    }
    if (std::find(envelope_.recipients.begin(), envelope_.recipients.end(), address) ==
        envelope_.recipients.end()) {
        envelope_.recipients.push_back(address);
    }
    state_ = state::rcpt;
    return {"250 2.1.5 OK\r\n"};
}

} // namespace wopbridge::email
