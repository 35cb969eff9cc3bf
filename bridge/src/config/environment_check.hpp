#pragma once
// What `serve` needs of the machine beyond the file's syntax (the host key file, the database's
// folder), checked by `check-config` and `serve` alike so both refuse the same configurations with
// the same message: file:line:col, the key, and the fix.

#include "config/config.hpp"

#include <vector>

namespace wopbridge {

std::vector<config_error> check_environment(const config& c);

} // namespace wopbridge
