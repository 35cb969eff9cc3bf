#pragma once
// RESP2, the Redis wire protocol: command encoding and an incremental reply parser.
//
// The parser is fed raw bytes as they arrive and hands out complete replies one at a time. It
// never trusts the peer: lengths are bounded, nesting is bounded, and anything malformed is a
// protocol error (the caller drops the connection), never an assert or an exception.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

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

// One command as a RESP array of bulk strings (binary-safe arguments).
std::string encode_command(const std::vector<std::string>& args);
void append_command(std::string& out, const std::vector<std::string>& args);

struct resp_limits {
    std::size_t max_bulk_bytes = 512u * 1024 * 1024; // Redis' own proto-max-bulk-len default
    std::size_t max_array_elements = 1u << 24;
    int max_depth = 16;
};

class resp_parser {
  public:
    enum class state { value, incomplete, error };

    explicit resp_parser(resp_limits limits = {}) : limits_(limits) {}

    void feed(std::string_view bytes);
    // A complete reply into `out` (state::value), or state::incomplete (feed more), or
    // state::error with a one-line reason (the stream is unusable after that).
    state next(resp_value& out, std::string& error);
    // Bytes fed but not yet consumed.
    std::size_t buffered() const noexcept { return buf_.size() - pos_; }
    void reset();

  private:
    enum class step { done, more, bad };
    step parse(std::size_t& pos, int depth, resp_value& out, std::string& error);
    step read_line(std::size_t& pos, std::string_view& line);

    resp_limits limits_;
    std::string buf_;
    std::size_t pos_ = 0;
    std::size_t wanted_ = 0; // total buffer size known to be needed before a retry can succeed
};

} // namespace wopbridge::queue
