#include "core/blob_store.hpp"

#include <wopbridge/signatures.hpp>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <fcntl.h>
#include <chrono>
#include <filesystem>
#include <sys/file.h>
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

timespec as_timespec(millis ms) {
    timespec t{};
    t.tv_sec = static_cast<time_t>(ms / 1000);
    t.tv_nsec = static_cast<long>((ms % 1000) * 1000000);
    return t;
}

millis mtime_ms(const struct stat& st) {
    return static_cast<millis>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
}

constexpr std::size_t name_size = 32; // the hex after "att_"

// A stored file's name: 32 lower-case hex digits.
bool is_blob_name(std::string_view name) {
    if (name.size() != name_size) {
        return false;
    }
    for (char c : name) {
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
            return false;
        }
    }
    return true;
}

std::atomic<std::uint64_t> sequence{0}; // unique temp names within the process

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

blob_store::blob_store(std::string directory, clock_source* clock)
    : dir_(std::move(directory)), clock_(clock) {}

millis blob_store::now() const {
    if (clock_ != nullptr) {
        return clock_->now_ms();
    }
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

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
    // Shared with other puts, exclusive against a purge: the file a purge is looking at is never
    // refreshed or replaced under it.
    auto lock = lock_for(LOCK_SH);
    if (!lock) {
        return lock.error();
    }
    const timespec stamp[2] = {as_timespec(now()), as_timespec(now())};
    struct stat st{};
    if (::stat(final_path.c_str(), &st) == 0 && static_cast<std::size_t>(st.st_size) == bytes.size()) {
        // The same bytes are there: refresh the mtime (the retention clock) before the reference
        // goes out.
        if (::utimensat(AT_FDCWD, final_path.c_str(), stamp, 0) != 0) {
            return make_error_code(errc::store_unavailable);
        }
        return ref;
    }
    // One temp file per call: concurrent puts of the same bytes (two mails with one attachment)
    // must not truncate each other's file before its rename.
    std::string tmp = final_path + ".tmp." + std::to_string(::getpid()) + "." +
                      std::to_string(sequence.fetch_add(1));
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        return make_error_code(errc::store_unavailable);
    }
    bool ok = write_all(fd, bytes) && ::futimens(fd, stamp) == 0 && ::fsync(fd) == 0;
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

result<int> blob_store::purge_older_than(millis cutoff) {
    std::error_code ec;
    std::filesystem::directory_iterator it(dir_, ec);
    if (ec) {
        return ec == std::errc::no_such_file_or_directory ? 0
                                                          : result<int>(make_error_code(
                                                                errc::store_unavailable));
    }
    int removed = 0;
    for (const auto& entry : it) {
        const std::string name = entry.path().filename().string();
        const bool blob = is_blob_name(name);
        // A put interrupted between its temp file and the rename leaves "<name>.tmp.<pid>.<n>".
        const bool leftover = !blob && name.size() > name_size &&
                              is_blob_name(std::string_view(name).substr(0, name_size)) &&
                              name.compare(name_size, 5, ".tmp.") == 0;
        if (!blob && !leftover) {
            continue; // not ours (the lock file, anything an operator put there)
        }
        const std::string path = entry.path().string();
        // The look and the unlink under the exclusive lock: no put refreshes or replaces this
        // file in between, so what a put handed out is never the file removed.
        auto lock = lock_for(LOCK_EX);
        if (!lock) {
            return lock.error();
        }
        struct stat st{};
        if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || mtime_ms(st) >= cutoff) {
            continue;
        }
        if (::unlink(path.c_str()) == 0 && blob) {
            ++removed;
        }
    }
    if (removed > 0) {
        (void)fsync_dir(dir_);
    }
    return removed;
}

result<blob_store::held_lock> blob_store::lock_for(int operation) const {
    // A new open file description each time: flock is held per description, so threads (and
    // instances) of one process exclude each other like processes do.
    int fd = ::open((dir_ + "/.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        return make_error_code(errc::store_unavailable);
    }
    while (::flock(fd, operation) != 0) {
        if (errno != EINTR) {
            ::close(fd);
            return make_error_code(errc::store_unavailable);
        }
    }
    return held_lock(fd);
}

blob_store::held_lock::~held_lock() {
    if (fd_ >= 0) {
        ::close(fd_); // releases the flock
    }
}

} // namespace wopbridge
