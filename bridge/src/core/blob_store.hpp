#pragma once
// Content-addressed attachment storage: bytes are written to <dir>/<sha256 hex> through a temp file,
// fsynced, renamed, and the directory fsynced, before the reference is handed out. A reference is
// "att_" + the first 32 hex chars of the SHA-256; storing the same bytes twice writes nothing, but
// sets the file's mtime to now before the reference is handed out again.
//
// Retention: purge_older_than() removes files whose mtime is older than a cutoff, so a file lives
// at least that long after its last put. A purge racing a put never removes bytes that put hands
// out: puts hold a shared flock on <dir>/.lock while they refresh or write a file, and a purge
// holds it exclusively from its look at a file's mtime to the unlink. Several processes may share
// the directory.

#include "core/clock.hpp"
#include "core/error.hpp"

#include <string>
#include <string_view>
#include <utility>

namespace wopbridge {

class blob_store {
public:
    // `clock` (optional: the system clock) stamps each put's mtime, so tests can inject time.
    explicit blob_store(std::string directory, clock_source* clock = nullptr);

    result<std::string> put(std::string_view bytes);
    result<std::string> get(std::string_view ref) const;
    const std::string& directory() const noexcept { return dir_; }

    // Removes stored files (and leftovers of interrupted puts) whose mtime is before `cutoff`.
    // Returns how many; a directory that does not exist is empty.
    result<int> purge_older_than(millis cutoff);

private:
    class held_lock {
    public:
        explicit held_lock(int fd) : fd_(fd) {}
        held_lock(held_lock&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
        held_lock& operator=(held_lock&&) = delete;
        ~held_lock();

    private:
        int fd_;
    };
    // flock(LOCK_SH / LOCK_EX) on the directory's lock file; the directory exists.
    result<held_lock> lock_for(int operation) const;
    std::string path_for(std::string_view ref) const;
    millis now() const;
    std::string dir_;
    clock_source* clock_;
};

} // namespace wopbridge
