#pragma once
// The connector-check phases: each loads the module afresh and runs its probes in a child process
// of its own (check_sandbox), reporting one line per check.

#include "plugins/check_report.hpp"
#include "plugins/connector_check.hpp"

namespace wopbridge::check_kit {

struct phase_context {
    const connector_check_options& opt;
    reporter& out;
};

using phase_fn = void (*)(phase_context&);

// check_phases_module.cpp: the module as loaded, before any instance exists.
void phase_describe(phase_context& c); // abi.*, describe.*
void phase_validate(phase_context& c); // validate.*

// check_phases_instance.cpp: each drives one instance against a checking_host.
void phase_lifecycle(phase_context& c); // lifecycle.*
void phase_http(phase_context& c);      // http.*, submit.*
void phase_contain(phase_context& c);   // contain.*

} // namespace wopbridge::check_kit
