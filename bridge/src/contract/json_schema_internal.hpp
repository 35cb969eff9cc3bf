#pragma once
// Internals of the JSON Schema validator shared by its translation units (json_schema*.cpp):
// value helpers, the registry's state and the evaluator, whose keyword families live in separate
// files. Not part of the public API: include contract/json_schema.hpp instead.

#include "contract/json_schema.hpp"
#include "contract/json_schema_pattern.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace wopbridge::schema_detail {

namespace json = boost::json;

// Base for documents without an `$id`: the reserved .invalid TLD makes clear it is never fetched.
constexpr std::string_view synthetic_base = "https://wopbridge.invalid/";
constexpr int max_walk_depth = 512; // registration walk over hostile documents

struct location {
    const json::value* node = nullptr;
    std::string outer_base; // the base URI in effect where `node` sits (before its own $id)
};

// ---- URIs and JSON Pointers (json_schema_values.cpp) --------------------------------------------

std::optional<std::string> resolve_uri(std::string_view base, std::string_view ref);
std::pair<std::string, std::string> split_fragment(std::string_view uri);
// Splits a decoded JSON Pointer ("/a/b~1c") into unescaped tokens; nullopt when malformed.
std::optional<std::vector<std::string>> pointer_tokens(std::string_view ptr);
void append_token(std::string& path, std::string_view token);

// ---- numbers and value comparison (json_schema_values.cpp) --------------------------------------

bool is_numeric(const json::value& v) noexcept;
double as_double(const json::value& v) noexcept;
bool is_integral(const json::value& v) noexcept;
// -1, 0, 1; exact for two integers, through double otherwise.
int compare_numbers(const json::value& a, const json::value& b) noexcept;
// JSON equality: numbers by value (1 == 1.0), objects regardless of key order.
bool json_equal(const json::value& a, const json::value& b, int depth = 0);
// A canonical text for uniqueItems hashing: sorted keys, integral numbers without a fraction.
void canonical(const json::value& v, std::string& out, int depth);
std::size_t code_points(std::string_view s) noexcept;
// Non-negative integer keyword value (2 and 2.0 both accepted).
std::optional<std::uint64_t> non_negative_int(const json::value& v) noexcept;

// ---- formats (json_schema_formats.cpp) ----------------------------------------------------------

// Returns nullopt for a format this validator does not assert (annotation only).
std::optional<bool> check_format(std::string_view format, std::string_view s);

} // namespace wopbridge::schema_detail

namespace wopbridge {

struct schema_registry::impl {
    using location = schema_detail::location;

    schema_limits limits;
    std::vector<std::unique_ptr<boost::json::value>> documents; // stable addresses
    std::unordered_map<std::string, location> by_uri;           // resource URIs and "uri#anchor"
    std::unordered_map<std::string, location> by_name;
    schema_detail::pattern_cache patterns;

    // Registers embedded $id resources and $anchors below `node`.
    void walk(const boost::json::value& node, const std::string& outer_base, int depth);

    // Why a URI names no schema: unresolved_ref for a document or anchor the registry lacks,
    // bad_schema for a malformed fragment or a pointer to nothing.
    struct lookup_failure {
        schema_error_kind kind;
        std::string message;
    };
    // Resolves an absolute URI with optional fragment to a schema location.
    result<location, lookup_failure> lookup(const std::unordered_map<std::string, location>& map,
                                            std::string_view uri) const;

    // The base URI in effect inside `loc.node` (after its own $id).
    static std::string base_of(const location& loc);
};

} // namespace wopbridge

namespace wopbridge::schema_detail {

// One validate() call: walks schema and instance together, collecting errors. The keyword
// families are defined in json_schema_evaluator.cpp (core, applicators, $ref, type),
// json_schema_scalar_keywords.cpp (numbers, strings) and json_schema_container_keywords.cpp
// (arrays, objects).
class evaluator {
public:
    evaluator(const schema_registry::impl& reg, std::vector<validation_error>& out)
        : reg_(reg), out_(&out) {}

    bool eval(const json::value& inst, const location& at, int depth);

private:
    struct path_mark {
        std::string& path;
        std::size_t size;
        path_mark(std::string& p, std::string_view token) : path(p), size(p.size()) {
            append_token(path, token);
        }
        path_mark(std::string& p, std::size_t index) : path(p), size(p.size()) {
            append_token(path, std::to_string(index));
        }
        ~path_mark() { path.resize(size); }
        path_mark(const path_mark&) = delete;
        path_mark& operator=(const path_mark&) = delete;
    };

    bool stop(std::string message);
    void report(schema_error_kind kind, std::string message);
    // Keeps the non-`invalid` errors of a discarded branch: they say the schema could not be
    // fully evaluated, which the caller must hear whatever the branch's outcome.
    void keep_hard_errors(std::vector<validation_error>& branch, bool* had_unresolved = nullptr);
    // Evaluates a subschema into a private error list (for anyOf/oneOf/not/if/contains).
    bool probe(const json::value& inst, const json::value& sub, const std::string& base, int depth,
               std::vector<validation_error>& errors);
    bool sub(const json::value& inst, const json::value& schema, const std::string& base,
             int depth);
    bool bad(std::string message);

    bool keyword(const json::value& inst, const json::object& s, std::string_view k,
                 const json::value& v, const std::string& base, int depth);
    bool ref(const json::value& inst, const json::value& v, const std::string& base, int depth);
    bool type(const json::value& inst, const json::value& v);
    static std::string kind_name(const json::value& inst);
    bool combinator(const json::value& inst, std::string_view k, const json::value& v,
                    const std::string& base, int depth);
    bool conditional(const json::value& inst, const json::object& s, const json::value& v,
                     const std::string& base, int depth);

    bool number_keyword(const json::value& inst, std::string_view k, const json::value& v);
    bool string_keyword(std::string_view str, std::string_view k, const json::value& v);
    // 1 match, 0 no match, -1 error (already reported).
    int search(std::string_view pattern, std::string_view subject);

    bool array_keyword(const json::array& arr, const json::object& s, std::string_view k,
                       const json::value& v, const std::string& base, int depth);
    bool object_keyword(const json::object& obj, const json::object& s, std::string_view k,
                        const json::value& v, const std::string& base, int depth);
    // minItems/maxItems, minProperties/maxProperties: `count` (of `unit`s in the `container`)
    // against the keyword's bound.
    bool count_keyword(std::string_view k, const json::value& v, bool is_min, std::size_t count,
                       std::string_view container, std::string_view unit);
    // For required and dependentRequired: reports each of `names` missing from `obj`. nullopt
    // when a name is not a string (reported as `bad_message`; the keyword stops there), else
    // whether every name was present.
    std::optional<bool> require_names(
        const json::object& obj, const json::array& names, std::string_view bad_message,
        const std::function<std::string(std::string_view)>& missing_message);

    const schema_registry::impl& reg_;
    std::vector<validation_error>* out_;
    std::string instance_path_;
    std::string schema_path_;
    std::size_t steps_ = 0;
    bool exhausted_ = false;
};

} // namespace wopbridge::schema_detail
