#include "core/blob_store.hpp"

#include <wopbridge/signatures.hpp>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

namespace wopbridge {
namespace {

bool write_all(int fd, std::string_view bytes) {
    const char* p = bytes.data();
    std::size_t left = bytes.size();
    while (left > 0) {
        ssize_t n = ::write(fd, p, left);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return false;
        }
        p += n;
        left -= static_cast<std::size_t>(n);
    }
    return true;
}

bool fsync_dir(const std::string& dir) {
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        return false;
    }
    bool ok = ::fsync(fd) == 0;
    ::close(fd);
    return ok;
}

bool valid_ref(std::string_view ref) {
    if (ref.size() != 36 || ref.substr(0, 4) != "att_") {
        return false;
    }
    for (char c : ref.substr(4)) {
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
            return false;
        }
    }
    return true;
}

} // namespace

blob_store::blob_store(std::string directory) : dir_(std::move(directory)) {}

std::string blob_store::path_for(std::string_view ref) const {
    return dir_ + "/" + std::string(ref.substr(4));
}

result<std::string> blob_store::put(std::string_view bytes) {
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    if (ec) {
        return make_error_code(errc::store_unavailable);
    }
    std::string ref = "att_" + sig::to_hex(sig::sha256(bytes)).substr(0, 32);
    std::string final_path = path_for(ref);
    struct stat st{};
    if (::stat(final_path.c_str(), &st) == 0 && static_cast<std::size_t>(st.st_size) == bytes.size()) {
        return ref;
    }
    // One temp file per call: concurrent puts of the same bytes (two mails with one attachment)
    // must not truncate each other's file before its rename.
    static std::atomic<std::uint64_t> sequence{0};
    std::string tmp = final_path + ".tmp." + std::to_string(::getpid()) + "." +
                      std::to_string(sequence.fetch_add(1));
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        return make_error_code(errc::store_unavailable);
    }
    bool ok = write_all(fd, bytes) && ::fsync(fd) == 0;
    ok = (::close(fd) == 0) && ok;
    if (!ok || ::rename(tmp.c_str(), final_path.c_str()) != 0 || !fsync_dir(dir_)) {
        ::unlink(tmp.c_str());
        return make_error_code(errc::store_unavailable);
    }
    return ref;
}

result<std::string> blob_store::get(std::string_view ref) const {
    if (!valid_ref(ref)) {
        return make_error_code(errc::invalid_argument);
    }
    int fd = ::open(path_for(ref).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return make_error_code(errno == ENOENT ? errc::not_found : errc::store_unavailable);
    }
    std::string out;
    char buf[65536];
    for (;;) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            ::close(fd);
            if (n < 0) {
                return make_error_code(errc::store_unavailable);
            }
            break;
        }
        out.append(buf, static_cast<std::size_t>(n));
    }
    return out;
}

} // namespace wopbridge
