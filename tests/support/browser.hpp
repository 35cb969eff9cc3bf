#pragma once
// Runs a headless-Chromium script from tests/browser/ (Node.js + playwright-core, Debian's chromium) as a
// child process. The script receives one JSON argument and prints one JSON object on its last stdout
// line; the test asserts on that object. Browser tests skip (not pass) when chromium or node is absent.

#include "support/child_process.hpp"

#include <string>

namespace wopbridge::testing {

using browser_run = program_run; // last_line is the script's JSON result

// Empty when the browser tooling is usable; otherwise why not (for GTEST_SKIP).
std::string browser_unavailable_reason();

// Runs `node tests/browser/<script>` with the JSON argument; bounded by deadline_s (then killed).
// The environment carries CHROMIUM_PATH and NODE_PATH so scripts need no configuration.
browser_run run_browser_script(const std::string& script, const std::string& json_argument,
                               int deadline_s = 90);

} // namespace wopbridge::testing
