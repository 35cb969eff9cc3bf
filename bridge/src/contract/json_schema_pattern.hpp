#pragma once
// The `pattern` / `patternProperties` regex engine of the JSON Schema validator: PCRE2 in UTF
// mode with ECMAScript-leaning options, bounded by match and heap limits so a hostile schema
// cannot make a match crash the host or run for long. Compiled patterns are cached per registry.

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace wopbridge::schema_detail {

// A compiled pattern; immutable and shareable across threads once built.
class compiled_pattern;

struct pattern_lookup {
    std::shared_ptr<const compiled_pattern> re; // null: `error` says why
    std::string error;
};

enum class match_result {
    match,
    no_match,
    too_large,       // refused before matching: the subject (or subject x pattern) is too big
    backtrack_limit, // the engine gave up at its match or heap limit
    failed,
};

// Unanchored search, as JSON Schema's `pattern` asks for.
match_result search_pattern(const compiled_pattern& re, std::string_view subject,
                            std::size_t max_subject);

// Compiles each distinct pattern once; safe to use from concurrent validate() calls.
class pattern_cache {
public:
    pattern_lookup get(const std::string& pattern, std::size_t max_pattern_length) const;

private:
    mutable std::mutex mutex_;
    mutable std::unordered_map<std::string, pattern_lookup> cache_;
};

} // namespace wopbridge::schema_detail
