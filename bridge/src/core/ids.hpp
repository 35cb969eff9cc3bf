#pragma once
// Opaque identifiers: "<prefix>_<26 chars of base32 (Crockford, lowercase)>" from 128 bits, e.g.
// "run_01hx…". Prefixes: sub (subscription), dlv (delivery), run, evt (event), wh (webhook).
// With a clock the bits are laid out as a ULID: 48 bits of milliseconds, then 80 random bits. Ids
// minted close together then sort close together, so the store's primary-key B-trees take new rows
// at their right edge (a few pages per commit) instead of one random leaf page per row.

#include "core/clock.hpp"

#include <string>
#include <string_view>

namespace wopbridge {

class id_generator {
public:
    explicit id_generator(random_source& random, const clock_source* clock = nullptr)
        : random_(random), clock_(clock) {}
    std::string make(std::string_view prefix);

private:
    random_source& random_;
    const clock_source* clock_;
};

} // namespace wopbridge
