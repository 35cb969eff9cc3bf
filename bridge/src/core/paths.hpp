#pragma once
// Whether a file can be created under a folder that may not exist yet (serve makes the missing
// folders), judged at the nearest folder that does exist.

#include <filesystem>
#include <string>

namespace wopbridge {

// "" when it can; else "<nearest existing path> is not a folder" or "... is not writable by this
// user", for the caller to put in its refusal.
std::string why_not_creatable(const std::filesystem::path& dir);

} // namespace wopbridge
