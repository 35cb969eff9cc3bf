// Cron expressions (schedule connector): parse with an optional time zone, then compute the next
// ticks. Input: "<expression>\n<time zone>".
#include "fuzz_input.hpp"
#include "schedule/cron.hpp"

#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    auto f = wopbridge::fuzz::split_fields(data, size, 2);
    if (f[1].size() > 64) {
        return 0;
    }
    auto r = wopbridge::cron_expr::parse(f[0], f[1]);
    if (!r) {
        return 0;
    }
    wopbridge::millis t{1'700'000'000'000};
    for (int i = 0; i < 3; ++i) {
        auto next = r->next_after(t);
        if (!next) {
            break;
        }
        if (*next <= t) {
            __builtin_trap(); // next_after must move strictly forward
        }
        t = *next;
    }
    wopbridge::millis out{};
    (void)wopbridge::parse_duration(f[0], out);
    return 0;
}
