#pragma once
// Time and randomness are injected: production uses system_clock_source / system_random_source,
// tests use tests/support/fake_clock.hpp. All times are int64 milliseconds since the Unix epoch, UTC.

#include <cstdint>
#include <string>
#include <string_view>

namespace wopbridge {

using millis = std::int64_t;

class clock_source {
public:
    virtual ~clock_source() = default;
    virtual millis now_ms() const = 0;
};

class system_clock_source final : public clock_source {
public:
    millis now_ms() const override;
};

class random_source {
public:
    virtual ~random_source() = default;
    // Fills [out, out+n) with cryptographically strong random bytes.
    virtual void fill(unsigned char* out, std::size_t n) = 0;
};

class system_random_source final : public random_source {
public:
    void fill(unsigned char* out, std::size_t n) override; // OpenSSL RAND_bytes
};

// "2026-11-30T05:34:42.123Z"
std::string format_iso8601(millis t);
// Accepts RFC 3339 date-times with Z or an offset; returns false on anything else.
bool parse_iso8601(std::string_view text, millis& out);

} // namespace wopbridge
