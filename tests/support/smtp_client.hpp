#pragma once
// A minimal blocking SMTP client for process-level tests (plain TCP on 127.0.0.1): one message per
// session, EHLO / MAIL / RCPT / DATA / QUIT, reporting the reply to the end of DATA.

#include <cstdint>
#include <string>

namespace wopbridge::testing {

struct smtp_result {
    int connect_error = 0;  // errno of a failed connect, 0 when connected
    int final_code = 0;     // the reply code after the message's final ".", 0 when none arrived
    std::string last_reply; // the last reply line read (for failure messages)
};

// Sends one message with the given Message-ID from `from` to `to`.
smtp_result smtp_send(std::uint16_t port, const std::string& from, const std::string& to,
                      const std::string& message_id, const std::string& text,
                      int timeout_ms = 10000);

} // namespace wopbridge::testing
