#pragma once
// Finding, opening and gate-checking connector modules (.so). Every refusal is one line that names
// the file and says why: not found, missing entry symbol, ABI major/minor, invalid descriptor,
// config rejected. Nothing here calls into a module beyond the entry function and validate().

#include "core/error.hpp"

#include <boost/system/result.hpp>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

struct wb_connector_descriptor;

namespace wopbridge {

// Which gate refused a module, in the order the loader passes them (connector-check reports the
// gate that failed and skips the later ones).
enum class module_gate {
    load,         // not found, or dlopen refused it
    entry_symbol, // no WOPBRIDGE_ENTRY_SYMBOL
    abi_version,  // ABI major differs, or the minor is newer than the host's
    descriptor,   // the descriptor is null, short or incomplete
    settings,     // validate() refused the settings
    other,        // not a loader gate (the host's own refusals)
};

// A refusal with its one-line, secret-free message.
struct module_error {
    errc code = errc::invalid_argument;
    std::string message;
    module_gate gate = module_gate::other;
};

[[noreturn]] inline void throw_exception_from_error(const module_error& e,
                                                    const boost::source_location&) {
    throw std::runtime_error(e.message);
}

template <class T> using module_result = boost::system::result<T, module_error>;

// A module that passed the gates. Copies share the dlopen handle; the module is unloaded when the
// last copy goes (so instances keep one).
struct loaded_module {
    std::string path;
    std::string name;
    std::string version;
    std::string status; // stable | alpha | wip
    std::string security_posture;
    std::string sdk_build_id;
    std::string source; // webhook | email | form | queue | ...
    std::string config_schema_json;
    std::string subscription_schema_json;
    std::uint64_t capabilities = 0;
    std::uint16_t abi_major = 0;
    std::uint16_t abi_minor = 0;
    const wb_connector_descriptor* descriptor = nullptr;
    std::shared_ptr<void> handle; // dlclose on release

    // Runs the module's validate(); the error reads "<path>: config rejected: <reason>".
    module_result<void> validate(std::string_view config_json) const;
};

// The gate checks on a descriptor, in order: "" when acceptable, else the reason
// ("ABI major 2, host supports 1", "invalid descriptor: ...").
std::string descriptor_problem(const wb_connector_descriptor* d);

// <dir of /proc/self/exe>/../lib/wopbridge/connectors
std::vector<std::string> default_module_dirs();

// A value containing '/' or ending in ".so" is a path; anything else is a name looked up as
// <dir>/<name>.so in `module_dirs` (in order; empty = default_module_dirs()).
module_result<loaded_module> load_module(const std::string& path_or_name,
                                         const std::vector<std::string>& module_dirs = {});

// One row of `wopbridge connectors`: every *.so in the dirs, broken ones with their reason.
struct module_listing {
    std::string name; // descriptor name, or the file stem when broken
    std::string version;
    std::string status;
    std::string security_posture;
    std::string source;
    std::string abi; // "1.0"
    std::string path;
    std::string error; // empty when the module loads
};
std::vector<module_listing> list_modules(const std::vector<std::string>& module_dirs = {});
// The listing as `wopbridge connectors` prints it: one line per module,
// "<name> <version> <status> abi <abi> <path>" then an indented "security: ..." line, or
// "<name> BROKEN <path>: <reason>" for a module that does not load.
std::string format_listing(const std::vector<module_listing>& rows);

} // namespace wopbridge
