#pragma once
// Reads a SQLite write-ahead log before SQLite opens the database, to find what SQLite's own WAL
// recovery would silently drop.
//
// Recovery replays frames from the start of the WAL while each frame's salts match the header and
// its cumulative checksum verifies, and stops at the first one that fails: everything after a
// damaged frame is discarded, including transactions that were committed, fsynced and acknowledged
// (a 202 was answered for them). A torn tail (frames of a last transaction that never finished
// its fsync) ends the log the same way, and is harmless. The two are told apart by what follows
// the first bad frame: each frame's header stores the cumulative checksum after it, so a later
// frame can be verified from its predecessor's stored value even when the chain before it is
// broken. An intact commit frame after the first bad one is a transaction recovery would lose.
//
// Format: https://www.sqlite.org/walformat.html (32-byte header, frames of a 24-byte header and
// one page; checksums over 32-bit words in the byte order the magic number names).

#include "core/error.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace wopbridge::sqlite {

struct wal_damage {
    std::uint32_t first_bad_frame = 0; // 1-based; 0 when the WAL header itself is damaged
    std::uint32_t frames = 0;          // whole frames in the file
    std::uint32_t commits_after = 0;   // intact commit frames after it: transactions recovery drops
};

// Looks at `db_path` + "-wal". nullopt when there is no WAL, when recovery would keep every
// committed transaction in it, or when the file is not a WAL this reader knows (SQLite decides
// then). An error (store_unavailable) only when the file exists but cannot be read.
result<std::optional<wal_damage>, error_info> find_wal_damage(const std::string& db_path);

} // namespace wopbridge::sqlite
