#pragma once
// Validates wire documents in tests against the project's schemas/ (and, when the shared OpenWOP
// copies exist next to the checkout, against those too). Loaded once per process.
//
//   EXPECT_TRUE(wopbridge::testing::expect_valid(doc, "trigger-subscription.schema.json"));
//   EXPECT_TRUE(wopbridge::testing::expect_valid_payload(
//       payload, "run-event-payloads.schema.json#/$defs/triggerDeliveryAttempted"));
//   EXPECT_TRUE(wopbridge::testing::expect_valid_capabilities(discovery_doc));
//
// Schema names are paths relative to schemas/ ("v2/trigger-event.schema.json",
// "wopbridge/error-envelope.schema.json"), optionally with a "#/JSON/Pointer" fragment.
// References to the upstream documents that are known not to be published with the copies
// (ids.schema.json and friends, see schemas/README.md) are tolerated; any other unresolved
// reference fails the check.

#include "contract/json_schema.hpp"

#include <boost/json/value.hpp>
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace wopbridge::testing {

class schema_check {
public:
    // The process-wide instance (schemas are parsed on first use).
    static const schema_check& get();

    // The project's schemas/ directory (WOPBRIDGE_SOURCE_DIR/schemas).
    const schema_registry& project() const noexcept { return project_; }
    // WOPBRIDGE_SHARED_DIR/openwop/schemas, or null when that directory does not exist.
    const schema_registry* shared() const noexcept { return has_shared_ ? &shared_ : nullptr; }
    // Files that failed to load (empty when all loaded).
    const std::vector<std::string>& load_errors() const noexcept { return load_errors_; }

    // Errors of `doc` against `ref` in the project registry, without the tolerated unresolved
    // references; with `also_shared`, the errors from the shared registry are appended (prefixed
    // "[shared]") when it exists and knows `ref`.
    std::vector<validation_error> errors(const boost::json::value& doc, std::string_view ref,
                                         bool also_shared = true) const;

    // True when an unresolved reference error names a document known to be absent upstream.
    static bool tolerated(const validation_error& e);

private:
    schema_check();
    schema_registry project_;
    schema_registry shared_;
    bool has_shared_ = false;
    std::vector<std::string> load_errors_;
};

// Success when `doc` is valid against `ref`; the failure message lists every error.
::testing::AssertionResult expect_valid(const boost::json::value& doc, std::string_view ref);
// The same for JSON text (parsed first; a parse error fails).
::testing::AssertionResult expect_valid(std::string_view json_text, std::string_view ref);
inline ::testing::AssertionResult expect_valid(const char* json_text, std::string_view ref) {
    return expect_valid(std::string_view(json_text), ref);
}

// Success when `doc` is INVALID against `ref` (at least one real `invalid` error) and, when
// `expected_instance_path` is given, one of the errors is at that JSON Pointer.
::testing::AssertionResult expect_invalid(const boost::json::value& doc, std::string_view ref,
                                          std::string_view expected_instance_path = {});

// For event payloads: `ref` names a payload $def, e.g.
// "run-event-payloads.schema.json#/$defs/triggerSubscriptionStateChanged". The payload $defs are
// open (additionalProperties: true), so for the trigger payload $defs ("#/$defs/trigger...") this
// also fails on the keys the conformance suite forbids anywhere in them (body, headers, payload,
// secret, credentials, token, apiKey).
::testing::AssertionResult expect_valid_payload(const boost::json::value& payload,
                                                std::string_view ref);

// A discovery document against the saved capabilities.schema.json, with the two upstream
// additions it lacks allowed (CONTRACT.md (i) 1): `triggerBridge.ingestion.inboundSigning` and
// `triggerBridge.deadLetter` are removed from a copy of the document, the copy is validated
// against capabilities.schema.json, and the removed parts against
// wopbridge/capabilities-extensions.schema.json.
::testing::AssertionResult expect_valid_capabilities(const boost::json::value& doc);

} // namespace wopbridge::testing
