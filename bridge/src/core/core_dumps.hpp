#pragma once
// A core dump of `serve` would carry every API key, signing secret and broker password it holds
// in clear. Unless an operator opts in (WOPBRIDGE_ALLOW_CORE_DUMPS=1), the process makes none:
// RLIMIT_CORE 0, and PR_SET_DUMPABLE 0, which also covers a core_pattern pipe (systemd-coredump,
// apport) that RLIMIT_CORE does not bind. Keys are kept out of dumps either way (secret_box's
// secure heap: MADV_DONTDUMP). docs/guarantees/security.md.

#include <string>

namespace wopbridge {

struct core_dump_policy {
    bool allowed = false;  // the operator opted in
    bool applied = false;  // the kernel took the setting
    std::string detail;    // what was done, for the start log line
};

// Reads WOPBRIDGE_ALLOW_CORE_DUMPS and applies the policy to this process (threads started later
// inherit it). Never fails the start: a refused prctl/setrlimit is reported in `detail`.
core_dump_policy apply_core_dump_policy();

} // namespace wopbridge
