#pragma once
// Opaque identifiers: "<prefix>_<26 chars of base32 (Crockford, lowercase)>" from 128 random bits,
// e.g. "run_01hx…". Prefixes: sub (subscription), dlv (delivery), run, evt (event), wh (webhook).

#include "core/clock.hpp"

#include <string>
#include <string_view>

namespace wopbridge {

class id_generator {
public:
    explicit id_generator(random_source& random) : random_(random) {}
    std::string make(std::string_view prefix);

private:
    random_source& random_;
};

} // namespace wopbridge
