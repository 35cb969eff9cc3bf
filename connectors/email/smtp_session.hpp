#pragma once
// The SMTP server side of one connection (RFC 5321 subset) as a pure state machine: the I/O layer
// feeds complete lines (the terminator stripped, and named: CRLF or a bare LF) and writes back the
// replies; the message itself is handed out when DATA ends so the module can commit it before the
// final reply.
//
// Line endings are strict (RFC 5321 §2.3.8): only CRLF ends a line and only CRLF.CRLF ends DATA.
// A bare LF or bare CR in a command refuses the command (500 5.5.2); in DATA it dooms the message,
// which is read to its real end and refused (550 5.6.11), so a "\n.\n" inside DATA can never end
// it early and smuggle a second message in (the way Postfix's smtpd_forbid_bare_newline closes it).

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wopbridge::email {

struct smtp_config {
    std::string hostname = "localhost";
    std::size_t max_message_bytes = 25 * 1024 * 1024;
    std::size_t max_recipients = 100;
    std::size_t max_errors = 10; // bad commands before the session is closed
    bool tls_available = false;  // STARTTLS advertised (until TLS is active)
    bool auth_required = false;  // AUTH PLAIN advertised and required before MAIL
};

struct smtp_hooks {
    // Is this RCPT TO address served by some subscription?
    std::function<bool(std::string_view address)> recipient_known;
    // Can the host take more work now (has_capacity)?
    std::function<bool()> has_capacity;
    // AUTH PLAIN credentials check (constant-time inside).
    std::function<bool(std::string_view user, std::string_view password)> check_auth;
};

struct smtp_envelope {
    std::string mail_from;
    std::vector<std::string> recipients; // lower-cased, accepted ones only
    std::string data;                    // dot-unstuffed, CRLF line endings
};

// What the I/O layer does after a line.
struct smtp_step {
    std::string reply;          // to write (may hold several lines), empty = nothing yet
    bool close = false;         // close after writing
    bool start_tls = false;     // after writing, run the TLS handshake, then call tls_started()
    bool message_ready = false; // DATA ended: take_envelope(), commit, then finish_message()
};

// How the I/O layer found a line's end.
enum class line_end { crlf, bare_lf };

class smtp_session {
  public:
    smtp_session(smtp_config config, smtp_hooks hooks);

    std::string greeting() const; // "220 ..."
    // `line` without its terminator; any CR left in it is a bare CR.
    smtp_step on_line(std::string_view line, line_end end = line_end::crlf);
    // Line longer than the I/O layer's cap: the reply to send (the session stays usable). The
    // I/O layer discards the rest and reports its terminator with overlong_line_ended().
    smtp_step on_overlong_line();
    void overlong_line_ended(line_end end);
    void tls_started();            // resets to the pre-EHLO state (RFC 3207 §4.2)
    smtp_envelope take_envelope(); // valid once after message_ready
    // The final reply to DATA given the commit result.
    enum class commit_result { committed, temporary_failure, rejected };
    smtp_step finish_message(commit_result result);
    std::string shutdown_reply() const; // "421 ..."
    std::string timeout_reply() const;  // "421 ..."

    bool in_data() const noexcept { return state_ == state::data; }
    bool tls_active() const noexcept { return tls_active_; }

  private:
    enum class state { fresh, greeted, mail, rcpt, data, auth_plain };

    smtp_step command(std::string_view line);
    smtp_step data_line(std::string_view line, line_end end);
    smtp_step error(std::string reply);
    smtp_step do_ehlo(std::string_view arg, bool extended);
    smtp_step do_mail(std::string_view arg);
    smtp_step do_rcpt(std::string_view arg);
    smtp_step do_auth(std::string_view arg);
    smtp_step auth_response(std::string_view b64);
    void reset_transaction();

    smtp_config config_;
    smtp_hooks hooks_;
    state state_ = state::fresh;
    bool tls_active_ = false;
    bool authenticated_ = false;
    std::size_t errors_ = 0;
    smtp_envelope envelope_;
    std::size_t data_bytes_ = 0;
    bool data_too_large_ = false;
    bool data_line_too_long_ = false;
    bool data_bare_newline_ = false; // a bare CR or LF in this message
    bool prev_crlf_ = true;          // the previous DATA line ended with CRLF
};

// "<addr>" or "<>" from a MAIL FROM:/RCPT TO: argument, parameters split off. nullopt on bad
// syntax.
struct smtp_path {
    std::string address; // as written, without angle brackets ("" = null reverse-path)
    std::vector<std::pair<std::string, std::string>> params; // upper-cased keys
};
std::optional<smtp_path> parse_smtp_path(std::string_view arg);

} // namespace wopbridge::email
