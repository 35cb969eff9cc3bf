#pragma once
// Redis replies as owned values, read with hiredis' RESP2 reader (libhiredis-dev).
//
// hiredis builds a redisReply tree; value_of() copies it into a resp_value so that callers never
// hold hiredis memory (and this header does not include hiredis). reply_reader is hiredis' reader
// on its own — fed raw bytes, handing out complete replies — for tests and anything not on a
// socket; redis_connection uses the reader inside its hiredis context.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

struct redisReply;
struct redisReader;

namespace wopbridge::queue {

struct resp_value {
    enum class kind { simple, error, integer, bulk, null, array };
    kind type = kind::null;
    std::string text;                 // simple, error and bulk strings
    std::int64_t integer = 0;         // integer replies
    std::vector<resp_value> elements; // arrays; a null array is kind::null

    bool is_error() const noexcept { return type == kind::error; }
    bool is_null() const noexcept { return type == kind::null; }
    bool is_array() const noexcept { return type == kind::array; }
    bool is_string() const noexcept { return type == kind::simple || type == kind::bulk; }
    // The error's code: its first word ("NOGROUP", "BUSYGROUP", "WRONGPASS"...).
    std::string_view error_code() const noexcept;
};

// A copy of hiredis' reply (binary-safe: string lengths come from the reply, not from NULs).
resp_value value_of(const ::redisReply& reply);

// Bounds on what the server may send, on top of hiredis' own (nesting depth 7). A reply over them
// is a protocol error (the connection is dropped), never a huge allocation or endless buffering.
struct reply_limits {
    static constexpr std::size_t max_bulk_bytes = 512u * 1024 * 1024; // Redis' proto-max-bulk-len
    static constexpr std::size_t max_array_elements = 1u << 24;
    static constexpr std::size_t max_line_bytes = 64 * 1024;
};

// Puts the limits on a hiredis reader (its own or a context's): array sizes are refused before
// hiredis allocates them. Call once, before feeding.
void bound_reader(::redisReader& reader) noexcept;
// After feeding and taking the complete replies out: the incomplete rest within the limits? A
// header line too long, or a declared bulk length too large, is refused before it is buffered.
bool pending_within_limits(const ::redisReader& reader, std::string& error);
// The reader's error as a line (an array refused by bound_reader() reads "Out of memory" in
// hiredis: this names the limit too).
std::string reader_error(const ::redisReader& reader);

class reply_reader {
  public:
    enum class state { value, incomplete, error };

    reply_reader();
    ~reply_reader();
    reply_reader(const reply_reader&) = delete;
    reply_reader& operator=(const reply_reader&) = delete;

    // False (and the reader unusable) when hiredis cannot take the bytes (out of memory).
    bool feed(std::string_view bytes);
    // A complete reply into `out` (state::value), or state::incomplete (feed more), or
    // state::error with a one-line reason (the stream is unusable after that).
    state next(resp_value& out, std::string& error);
    // Bytes fed but not yet consumed by a complete reply.
    std::size_t buffered() const noexcept;

  private:
    ::redisReader* reader_;
};

} // namespace wopbridge::queue
