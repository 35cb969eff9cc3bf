#pragma once
// Content-addressed attachment storage: bytes are written to <dir>/<sha256 hex> through a temp file,
// fsynced, renamed, and the directory fsynced, before the reference is handed out. A reference is
// "att_" + the first 32 hex chars of the SHA-256; storing the same bytes twice is a no-op.

#include "core/error.hpp"

#include <string>
#include <string_view>

namespace wopbridge {

class blob_store {
public:
    explicit blob_store(std::string directory);
    result<std::string> put(std::string_view bytes);
    result<std::string> get(std::string_view ref) const;
    const std::string& directory() const noexcept { return dir_; }

private:
    std::string path_for(std::string_view ref) const;
    std::string dir_;
};

} // namespace wopbridge
