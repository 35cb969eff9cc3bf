#include "config/environment_check.hpp"

#include "core/secret_box.hpp"
#include "store/store_backend.hpp"

#include <string>

namespace wopbridge {
namespace {

void check_host_key(const config& c, std::vector<config_error>& out) {
    bool exists = false;
    const std::string why = secret_box::inspect_key_file(c.host_key_file, exists);
    if (why.empty()) {
        return;
    }
    const bool set_in_file = c.host_key_file_line > 0;
    const std::string key = set_in_file ? "hostKeyFile" : "hostKeyFile (not set: the default)";
    out.push_back({c.file, c.host_key_file_line, c.host_key_file_column,
                   key + ": " + c.host_key_file + " " + why});
}

} // namespace

std::vector<config_error> check_environment(const config& c) {
    std::vector<config_error> out;
    check_host_key(c, out);
    c.store.backend->check_environment(c, out);
    return out;
}

} // namespace wopbridge
