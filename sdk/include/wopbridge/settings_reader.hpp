#pragma once
// Declarative reading of a connector's flat settings object (wopbridge/json_util.hpp): bind each
// accepted key to a field and a check, then read(). A key that is unknown or fails its check is
// refused with "<context>: invalid or unknown key '<key>'" (the text never carries the value, so
// a secret cannot leak into an error). Keys are visited in sorted order, the first refusal wins.
// Errors are values: read() returns false and sets `error`; nothing throws.
// Implemented in sdk/src/settings_reader.cpp.

#include "wopbridge/json_util.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace wopbridge::settings {

// A byte that may appear in a log line unquoted: printable ASCII, not a space.
bool printable_char(char c) noexcept;

// 1..max bytes, each printable_char: a name that is safe in logs.
bool printable_name(std::string_view text, std::size_t max = 200) noexcept;

// `value` as an integer in [lo, hi]; nullopt for a non-number, a fraction or out of range.
std::optional<std::int64_t> integer_in(const json::flat_value& value, std::int64_t lo,
                                       std::int64_t hi) noexcept;

// "<prefix><hostname>-<pid>" (`fallback_host` when the host has no name), every byte that
// `allowed` refuses replaced by '_': a default client or consumer name unique per process.
std::string host_pid_name(std::string_view prefix, std::string_view fallback_host,
                          bool (*allowed)(char) = printable_char);

// True when `list` (1..max_bytes bytes) is a comma-separated list whose items, trimmed of
// spaces, each pass `valid`: server lists such as "host:1, host:2".
bool every_listed(std::string_view list, std::size_t max_bytes,
                  bool (*valid)(std::string_view item));

class reader {
public:
    // Refuses the key with the generic text (return false, leave `error` empty) or with a
    // reason of its own (return false, set `error` to the full message).
    using rule = std::function<bool(const json::flat_value& value, std::string& error)>;

    // `context` starts every message: "settings" or "subscription settings".
    explicit reader(std::string context) : context_(std::move(context)) {}

    // A string of 1..max_bytes bytes.
    reader& text(std::string key, std::string& out,
                 std::size_t max_bytes = std::numeric_limits<std::size_t>::max());
    reader& text(std::string key, std::optional<std::string>& out,
                 std::size_t max_bytes = std::numeric_limits<std::size_t>::max());
    // A string accepted by `valid` (which also bounds its length).
    reader& text(std::string key, std::string& out, std::function<bool(std::string_view)> valid);
    // As above, but a string that `valid` refuses gets "<context>: <refusal>" instead of the
    // generic text (for keys whose expected shape is worth spelling out).
    reader& text(std::string key, std::string& out, std::function<bool(std::string_view)> valid,
                 std::string refusal);

    reader& boolean(std::string key, bool& out);

    // One of `choices` (the JSON string), stored as its paired value.
    template <class T>
    reader& choice(std::string key, T& out,
                   std::initializer_list<std::pair<std::string_view, T>> choices) {
        std::vector<std::pair<std::string, T>> table;
        for (const auto& [name, v] : choices) {
            table.emplace_back(std::string(name), v);
        }
        return custom(std::move(key),
                      [&out, table = std::move(table)](const json::flat_value& value, std::string&) {
                          if (value.type != json::flat_value::kind::string) {
                              return false;
                          }
                          for (const auto& [name, v] : table) {
                              if (value.text == name) {
                                  out = v;
                                  return true;
                              }
                          }
                          return false;
                      });
    }

    // An integer in [lo, hi], stored into any integer field.
    template <class Int>
    reader& integer(std::string key, std::int64_t lo, std::int64_t hi, Int& out) {
        return custom(std::move(key), [&out, lo, hi](const json::flat_value& value, std::string&) {
            const auto n = integer_in(value, lo, hi);
            if (n) {
                out = static_cast<Int>(*n);
            }
            return n.has_value();
        });
    }

    reader& custom(std::string key, rule check);

    // Parses `text` (empty: the empty object) and applies every key's rule.
    bool read(std::string_view text, std::string& error) const;

    // "<context>: <reason>", for the checks a connector makes after read().
    std::string message(std::string_view reason) const;

private:
    std::string context_;
    std::map<std::string, rule, std::less<>> rules_;
};

} // namespace wopbridge::settings
