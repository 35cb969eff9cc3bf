#pragma once
// Runs a program as a child process and captures its stdout, bounded by a deadline (then killed).
// Shared by the process-level tests (CLI commands, smtplib scripts, headless-browser scripts).

#include <string>
#include <utility>
#include <vector>

namespace wopbridge::testing {

struct program_run {
    int exit_code = -1;       // -1: killed by a signal, past the deadline, or could not start
    std::string stdout_text;  // everything the program printed
    std::string last_line;    // its last non-empty line (scripts print their JSON result there)
};

// argv[0] is a path. `env` entries are set in the child on top of the inherited environment.
// `with_stderr`: stderr goes into stdout_text too (error messages are what the test reads).
program_run run_program(const std::vector<std::string>& argv, int deadline_s = 30,
                        const std::vector<std::pair<std::string, std::string>>& env = {},
                        bool with_stderr = false);

} // namespace wopbridge::testing
