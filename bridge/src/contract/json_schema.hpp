#pragma once
// A JSON Schema (draft 2020-12) validator over Boost.JSON.
//
// Used for the wire-shape tests and by the plugin host to validate connector settings against the
// schema a connector declares, so schemas are treated as untrusted input: a malformed or hostile
// schema never throws out of this API and never crashes; problems come back as errors of kind
// `bad_schema` or `limit`.
//
// Supported: type, enum, const, properties, required, additionalProperties, patternProperties,
// propertyNames, minProperties, maxProperties, dependentRequired, dependentSchemas, items (2020-12
// meaning), prefixItems, minItems, maxItems, uniqueItems, contains/minContains/maxContains,
// minLength/maxLength (Unicode code points), pattern (PCRE2 in UTF mode, unanchored),
// minimum/maximum/exclusiveMinimum/exclusiveMaximum, multipleOf, allOf/anyOf/oneOf/not,
// if/then/else, $ref/$defs (local and cross-document; JSON Pointer and $anchor fragments),
// $id (also embedded), boolean schemas, and `format` as an assertion for date-time (RFC 3339),
// date, time, uri (absolute URI) and uri-reference. Other formats and the annotation keywords
// ($comment, title, description, default, examples, ...) are ignored, as are unknown keywords.
//
// NOT supported (ignored, so validation is more permissive than a full implementation):
// $dynamicRef/$dynamicAnchor, unevaluatedProperties/unevaluatedItems, $vocabulary, content*,
// and fetching remote documents (the registry only knows what was added to it).
//
// Unresolved references: a `$ref` to a document the registry does not hold yields an error of kind
// `unresolved_ref` and the `$ref` keyword itself is then treated as passing, so the rest of the
// instance is still checked. Callers that knowingly load an incomplete set of documents (the
// upstream OpenWOP schemas reference an `ids.schema.json` that is not published with them) can
// tolerate exactly those errors with `has_errors(errors, tolerate_unresolved_refs = true)`. Inside
// `not`/`oneOf`/`if`, a branch with an unresolved reference is evaluated best-effort.

#include "core/error.hpp"

#include <boost/json/value.hpp>

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace wopbridge {

enum class schema_error_kind {
    invalid,        // the instance does not satisfy the schema
    unresolved_ref, // a $ref names a document (or anchor) the registry does not hold
    bad_schema,     // the schema itself is malformed (wrong keyword type, bad regex, bad $ref ...)
    limit,          // a safety limit was hit (nesting depth, pattern subject length)
};

std::string_view to_string(schema_error_kind) noexcept;

struct validation_error {
    std::string instance_path; // JSON Pointer into the instance ("" = the root)
    std::string schema_path;   // keyword location from the starting schema, through $ref hops
    std::string message;       // never quotes instance values (they may be secrets)
    schema_error_kind kind = schema_error_kind::invalid;
};

// True when `errors` contains an error that makes the instance invalid; with
// `tolerate_unresolved_refs`, errors of kind unresolved_ref do not count.
bool has_errors(const std::vector<validation_error>& errors,
                bool tolerate_unresolved_refs = false) noexcept;

// One line per error: "<instance_path>: <message> [at <schema_path>]".
std::string format_errors(const std::vector<validation_error>& errors);

struct schema_limits {
    int max_depth = 256;                    // nested subschema evaluations ($ref cycles end here)
    std::size_t max_evaluations = 1'000'000; // subschema evaluations per validate() call
    std::size_t max_pattern_length = 4096;  // longer `pattern`s are a bad_schema
    std::size_t max_pattern_subject = 8192; // longer strings are not matched and yield a
                                            // `limit` error (so do subject x pattern sizes beyond
                                            // ~1M, and matches past PCRE2's backtracking limit;
                                            // see json_schema_pattern.cpp)
};

// Holds schema documents by `$id` and by name and validates instances against them.
// Documents are immutable once added. validate() is const and safe to call concurrently; add() is
// not safe concurrently with anything else.
class schema_registry {
public:
    explicit schema_registry(schema_limits limits = {});
    ~schema_registry();
    schema_registry(schema_registry&&) noexcept;
    schema_registry& operator=(schema_registry&&) noexcept;
    schema_registry(const schema_registry&) = delete;
    schema_registry& operator=(const schema_registry&) = delete;

    // Adds a document (an object or a boolean). `name` (e.g. "v2/trigger-event.schema.json") is a
    // lookup key for validate() and, when the document has no `$id`, also its base URI (as
    // "https://wopbridge.invalid/<name>"), so relative $refs between un-id'd documents resolve by
    // file name. A name that is an absolute URI is the base URI itself (a document preloaded
    // under a remote address: the registry never fetches). Fails with invalid_argument for a non-schema value or an unusable `$id`, and
    // already_exists when the name or the base URI is taken.
    result<void> add(boost::json::value document, std::string name = {});

    // Parses a file and adds it; `name` defaults to the file name.
    result<void> add_file(const std::filesystem::path& file, std::string name = {});

    // Adds every `*.schema.json` below `dir`, each named by its path relative to `dir` with '/'
    // separators. Returns how many were added.
    result<std::size_t> add_directory(const std::filesystem::path& dir);

    // True when `ref` (a name or absolute URI, optionally with a "#fragment") resolves.
    bool contains(std::string_view ref) const;

    // Validates `instance` against the schema `ref` names: "<name or URI>[#<JSON Pointer or
    // anchor>]", e.g. "run-event-payloads.schema.json#/$defs/triggerDeliveryAttempted".
    // An empty result means valid.
    std::vector<validation_error> validate(const boost::json::value& instance,
                                           std::string_view ref) const;

    struct impl;

private:
    std::unique_ptr<impl> impl_;
};

// Validates against a single standalone schema (its local $refs resolve; nothing else does).
std::vector<validation_error> validate_against(const boost::json::value& instance,
                                               const boost::json::value& schema,
                                               schema_limits limits = {});

} // namespace wopbridge
