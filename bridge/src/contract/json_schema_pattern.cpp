#include "contract/json_schema_pattern.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <cstdint>

namespace wopbridge::schema_detail {

namespace {

// Backtracking steps per match: `^(a+)+$` against a few thousand characters stops here within
// about 0.1 s instead of running for ages. Ordinary schema patterns use a tiny fraction of it.
constexpr std::uint32_t match_limit = 1'000'000;
// Backtracking frames live on the heap (PCRE2 >= 10.30), so deep nesting costs memory, not stack.
constexpr std::uint32_t heap_limit_kib = 64 * 1024;
// Kept from the std::regex engine (whose stack grew with subject x pattern) so the documented
// `limit` outcome for very large combinations stays what it was.
constexpr std::size_t max_match_units = 1 << 20;
constexpr std::size_t max_cached_patterns = 4096;

// UTF: JSON strings are Unicode, so `.` and classes work on code points; invalid UTF-8 in a
// subject simply does not match. ALT_BSUX: ECMAScript's \uXXXX and \xXX escapes.
// DOLLAR_ENDONLY: ECMAScript's `$` does not match before a trailing newline.
constexpr std::uint32_t compile_options =
    PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_ALT_BSUX | PCRE2_DOLLAR_ENDONLY;

struct match_context_deleter {
    void operator()(pcre2_match_context* c) const noexcept { pcre2_match_context_free(c); }
};
struct match_data_deleter {
    void operator()(pcre2_match_data* d) const noexcept { pcre2_match_data_free(d); }
};

// One context for every match: PCRE2 only reads it while matching.
pcre2_match_context* limited_match_context() {
    static const std::unique_ptr<pcre2_match_context, match_context_deleter> context = [] {
        std::unique_ptr<pcre2_match_context, match_context_deleter> c(
            pcre2_match_context_create(nullptr));
        if (c) {
            pcre2_set_match_limit(c.get(), match_limit);
            pcre2_set_heap_limit(c.get(), heap_limit_kib);
        }
        return c;
    }();
    return context.get();
}

} // namespace

class compiled_pattern {
public:
    compiled_pattern(pcre2_code* code, std::size_t pattern_size)
        : code_(code), pattern_size_(pattern_size) {}
    ~compiled_pattern() { pcre2_code_free(code_); }
    compiled_pattern(const compiled_pattern&) = delete;
    compiled_pattern& operator=(const compiled_pattern&) = delete;

    pcre2_code* code() const noexcept { return code_; }
    std::size_t pattern_size() const noexcept { return pattern_size_; }

private:
    pcre2_code* code_;
    std::size_t pattern_size_;
};

match_result search_pattern(const compiled_pattern& re, std::string_view subject,
                            std::size_t max_subject) {
    if (subject.size() > max_subject ||
        (subject.size() + 1) * (re.pattern_size() + 1) > max_match_units) {
        return match_result::too_large;
    }
    pcre2_match_context* context = limited_match_context();
    std::unique_ptr<pcre2_match_data, match_data_deleter> data(
        pcre2_match_data_create(1, nullptr));
    if (context == nullptr || !data) {
        return match_result::failed;
    }
    int rc = pcre2_match(re.code(), reinterpret_cast<PCRE2_SPTR>(subject.data()), subject.size(),
                         0, 0, data.get(), context);
    if (rc >= 0) {
        return match_result::match; // 0: matched, with more groups than the data records
    }
    switch (rc) {
    case PCRE2_ERROR_NOMATCH:
        return match_result::no_match;
    case PCRE2_ERROR_MATCHLIMIT:
    case PCRE2_ERROR_DEPTHLIMIT:
    case PCRE2_ERROR_HEAPLIMIT:
        return match_result::backtrack_limit;
    default:
        return match_result::failed;
    }
}

pattern_lookup pattern_cache::get(const std::string& pattern,
                                  std::size_t max_pattern_length) const {
    std::lock_guard lock(mutex_);
    auto it = cache_.find(pattern);
    if (it != cache_.end()) {
        return it->second;
    }
    pattern_lookup c;
    if (pattern.size() > max_pattern_length) {
        c.error = "pattern longer than " + std::to_string(max_pattern_length) + " characters";
    } else {
        int error_code = 0;
        PCRE2_SIZE error_offset = 0;
        pcre2_code* code =
            pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                          compile_options, &error_code, &error_offset, nullptr);
        if (code == nullptr) {
            PCRE2_UCHAR text[256];
            int n = pcre2_get_error_message(error_code, text, sizeof text);
            c.error = "invalid pattern: " +
                      (n < 0 ? std::string("error ") + std::to_string(error_code)
                             : std::string(reinterpret_cast<const char*>(text))) +
                      " at offset " + std::to_string(error_offset);
        } else {
            c.re = std::make_shared<const compiled_pattern>(code, pattern.size());
        }
    }
    if (cache_.size() < max_cached_patterns) {
        cache_.emplace(pattern, c);
    }
    return c;
}

} // namespace wopbridge::schema_detail
