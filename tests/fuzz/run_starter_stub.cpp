// parse_config's translation unit also holds make_run_starter, which reaches the local and
// upstream run starters (processes, libcurl). The fuzz target never calls it: these stand-ins
// keep config_fuzz from linking the whole core library.
#include "runs/run_starter.hpp"

#include <cstdlib>

namespace wopbridge {

std::unique_ptr<run_starter> make_local_run_starter(std::vector<local_workflow>, std::string) {
    std::abort();
}
std::unique_ptr<run_starter> make_local_run_starter(std::vector<local_workflow>, std::string,
                                                    local_run_options) {
    std::abort();
}
std::unique_ptr<run_starter> make_upstream_run_starter(upstream_options) {
    std::abort();
}

} // namespace wopbridge
