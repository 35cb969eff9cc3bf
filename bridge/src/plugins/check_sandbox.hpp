#pragma once
// The fork sandbox: a phase runs in a child process so a module that crashes, hangs or exits
// becomes a FAIL line naming the check it was in, and the kit lives on to run the next phase.

#include "plugins/check_phases.hpp"
#include "plugins/connector_check.hpp"

namespace wopbridge::check_kit {

// Appends the phase's lines to `report`, then a FAIL for a crash, a non-zero exit or a child
// still running after opt.phase_timeout_ms (killed).
void run_phase(const connector_check_options& opt, phase_fn phase,
               connector_check_report& report);

} // namespace wopbridge::check_kit
