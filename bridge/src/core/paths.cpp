#include "core/paths.hpp"

#include <unistd.h>

namespace wopbridge {

std::string why_not_creatable(const std::filesystem::path& dir) {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::path existing = fs::absolute(dir, ec);
    if (ec) {
        existing = dir;
    }
    while (existing.has_relative_path() && !fs::exists(existing, ec)) {
        existing = existing.parent_path();
    }
    if (!fs::is_directory(existing, ec)) {
        return existing.string() + " is not a folder";
    }
    if (::access(existing.c_str(), W_OK | X_OK) != 0) {
        return existing.string() + " is not writable by this user";
    }
    return "";
}

} // namespace wopbridge
