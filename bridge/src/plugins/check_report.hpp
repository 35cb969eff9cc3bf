#pragma once
// The connector-check report, both ends of it: a phase's reporter writes lines up the sandbox's
// pipe as it goes, so whatever a phase said before its module crashed still reaches the report,
// and the parent's report_reader turns them back into check lines.

#include "plugins/connector_check.hpp"

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

namespace wopbridge::check_kit {

// One line, printable, bounded: reasons may quote module output.
std::string one_line(std::string_view text, std::size_t max = 400);

// A wb_status as its WB_* name, for reasons.
std::string status_name(int st);

// A module's NUL-terminated error buffer as a reason.
std::string buf_text(const std::array<char, 512>& buf);

// The child's end (runs in the phase's process).
class reporter {
  public:
    explicit reporter(int fd) : fd_(fd) {}
    // Names the check about to call into the module, so a crash can be blamed on it.
    void begin(std::string_view name);
    void report(check_result r, std::string_view name, std::string_view reason);
    void pass(std::string_view n, std::string_view why) { report(check_result::pass, n, why); }
    void fail(std::string_view n, std::string_view why) { report(check_result::fail, n, why); }
    void skip(std::string_view n, std::string_view why) { report(check_result::skip, n, why); }

  private:
    void write(const std::string& line);
    int fd_;
};

// The parent's end: bytes read from the pipe, in any chunking.
class report_reader {
  public:
    explicit report_reader(connector_check_report& report) : report_(report) {}
    // Appends every complete line; a partial one waits for the rest.
    void feed(std::string_view bytes);
    // The check begun last: the one a crash or hang is blamed on ("kit" before any).
    const std::string& current() const noexcept { return current_; }

  private:
    connector_check_report& report_;
    std::string buffer_;
    std::string current_ = "kit";
};

} // namespace wopbridge::check_kit
