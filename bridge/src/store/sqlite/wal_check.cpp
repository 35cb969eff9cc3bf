#include "store/sqlite/wal_check.hpp"

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

namespace wopbridge::sqlite {
namespace {

constexpr std::uint32_t magic_little = 0x377f0682;
constexpr std::uint32_t magic_big = 0x377f0683;
constexpr std::size_t header_bytes = 32;
constexpr std::size_t frame_header_bytes = 24;

std::uint32_t read_be32(const unsigned char* p) {
    return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
           std::uint32_t{p[3]};
}

std::uint32_t read_le32(const unsigned char* p) {
    return (std::uint32_t{p[3]} << 24) | (std::uint32_t{p[2]} << 16) | (std::uint32_t{p[1]} << 8) |
           std::uint32_t{p[0]};
}

struct checksum {
    std::uint32_t s1 = 0;
    std::uint32_t s2 = 0;
    bool operator==(const checksum&) const = default;
};

// SQLite's walChecksumBytes: over pairs of 32-bit words, `n` a multiple of 8.
checksum add_bytes(checksum c, const unsigned char* data, std::size_t n, bool big_endian) {
    for (std::size_t i = 0; i + 8 <= n; i += 8) {
        const auto x0 = big_endian ? read_be32(data + i) : read_le32(data + i);
        const auto x1 = big_endian ? read_be32(data + i + 4) : read_le32(data + i + 4);
        c.s1 += x0 + c.s2;
        c.s2 += x1 + c.s1;
    }
    return c;
}

checksum stored(const unsigned char* p) {
    return {read_be32(p), read_be32(p + 4)};
}

} // namespace

result<std::optional<wal_damage>, error_info> find_wal_damage(const std::string& db_path) {
    const std::string path = db_path + "-wal";
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        if (errno == ENOENT) {
            return std::nullopt;
        }
        return error_info{errc::store_unavailable, path + ": " + std::strerror(errno)};
    }
    std::vector<unsigned char> file((std::istreambuf_iterator<char>(in)),
                                    std::istreambuf_iterator<char>());
    if (in.bad()) {
        return error_info{errc::store_unavailable, path + ": cannot be read"};
    }
    if (file.size() < header_bytes) {
        return std::nullopt; // empty or truncated: nothing recovery could replay
    }
    const unsigned char* h = file.data();
    const auto magic = read_be32(h);
    const auto page = read_be32(h + 8);
    if ((magic != magic_little && magic != magic_big) || page < 512 || page > 65536 ||
        (page & (page - 1)) != 0) {
        return std::nullopt;
    }
    const bool big_endian = magic == magic_big;
    const std::array<unsigned char, 8> salts{h[16], h[17], h[18], h[19], h[20], h[21], h[22], h[23]};
    const bool header_ok = add_bytes({}, h, 24, big_endian) == stored(h + 24);
    const std::size_t frame_bytes = frame_header_bytes + page;
    const auto frames = static_cast<std::uint32_t>((file.size() - header_bytes) / frame_bytes);

    // A frame verifies when its salts are the header's and its stored checksum is the one that
    // follows from the stored checksum before it (the header's for the first frame).
    auto intact = [&](std::uint32_t index, checksum before) {
        const unsigned char* f = h + header_bytes + std::size_t{index} * frame_bytes;
        if (std::memcmp(f + 8, salts.data(), salts.size()) != 0) {
            return false;
        }
        auto c = add_bytes(before, f, 8, big_endian);
        c = add_bytes(c, f + frame_header_bytes, page, big_endian);
        return c == stored(f + 16);
    };
    auto frame_at = [&](std::uint32_t index) {
        return h + header_bytes + std::size_t{index} * frame_bytes;
    };

    std::uint32_t first_bad = 0; // 0-based index of the first frame recovery would not replay
    if (header_ok) {
        checksum running = stored(h + 24);
        while (first_bad < frames && intact(first_bad, running)) {
            running = stored(frame_at(first_bad) + 16);
            ++first_bad;
        }
        if (first_bad == frames) {
            return std::nullopt; // every frame replays
        }
    }
    wal_damage out;
    out.first_bad_frame = header_ok ? first_bad + 1 : 0;
    out.frames = frames;
    for (std::uint32_t i = first_bad + (header_ok ? 1 : 0); i < frames; ++i) {
        const checksum before = i == 0 ? stored(h + 24) : stored(frame_at(i - 1) + 16);
        const bool commit = read_be32(frame_at(i) + 4) != 0;
        if (commit && intact(i, before)) {
            ++out.commits_after;
        }
    }
    if (out.commits_after == 0) {
        return std::nullopt; // a torn tail: nothing that was committed is lost
    }
    return std::optional<wal_damage>{out};
}

} // namespace wopbridge::sqlite
