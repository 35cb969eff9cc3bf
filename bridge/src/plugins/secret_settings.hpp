#pragma once
// Connector settings a module's JSON Schema marks secret ("writeOnly": true, or the extension
// "x-secret": true) are kept sealed at rest: the host replaces each such value with
// {"$sealed": "v1:..."} (core/secret_box over the value's JSON text) before the store sees it, and
// opens every sealed value again just before the settings reach schema validation and the module.
// An object whose only key is "$sealed" is reserved for this: settings that carry the key are
// refused at intake, so every sealed object a store holds was made here and none is a user value.

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/secret_box.hpp"

#include <boost/json/value.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace wopbridge {

inline constexpr std::string_view sealed_key = "$sealed";

// One step into a settings document: a named member, every array element, or every member.
struct secret_step {
    enum class kind { member, every_item, every_member };
    kind what = kind::member;
    std::string name; // member only
    bool operator==(const secret_step&) const = default;
};
using secret_path = std::vector<secret_step>;

class secret_fields {
public:
    // Follows properties (nested), items, additionalProperties, allOf/anyOf/oneOf, if/then/else
    // and local "$ref"s ("#/..."). A schema is untrusted input: depth and $ref hops are bounded,
    // and a document that is not an object schema marks nothing.
    static secret_fields from_schema(const boost::json::value& schema);
    static secret_fields from_schema_text(std::string_view schema_json);
    // Every top-level setting: for settings of a connector whose schema this host does not know.
    static secret_fields every_setting();

    bool empty() const noexcept { return paths_.empty(); }
    const std::vector<secret_path>& paths() const noexcept { return paths_; }
    // JSON Pointer-like rendering ("/auth/password", "/signingSecrets", "/keys/*"), sorted.
    std::vector<std::string> pointers() const;

private:
    std::vector<secret_path> paths_;
};

enum class seal_mode {
    intake,      // new settings (config, REST): a "$sealed" key anywhere is refused
    keep_sealed, // stored settings (the migration): values sealed already are kept as they are
};

struct sealed_settings {
    std::string json;
    bool changed = false; // some value was sealed (keep_sealed: the row needs writing)
};

// invalid_argument when the settings are not a JSON object or (intake) carry the reserved key.
result<sealed_settings> seal_secret_settings(std::string_view settings_json,
                                             const secret_fields& fields, const secret_box& box,
                                             random_source& random, seal_mode mode);

// Every sealed value, wherever it is (a field a newer module no longer marks is opened too),
// replaced by the value it seals. invalid_argument: not JSON, or a sealed value this key cannot
// open (tampered, or another key).
result<std::string> unseal_secret_settings(std::string_view stored_json, const secret_box& box);

// Whether a "$sealed" key appears anywhere in the value (refused in new settings).
bool carries_sealed_key(const boost::json::value& settings);

// What a module is handed: `stored` itself when it holds no sealed value, else unsealed with
// `box`; without a box sealed values cannot be opened (unsupported).
result<std::string> open_stored_settings(std::string_view stored_json, const secret_box* box);

// Cheap: whether the text may hold a sealed value at all (settings are always stored serialized
// by Boost.JSON, which never escapes '$').
bool holds_sealed_values(std::string_view json) noexcept;

// The string leaves at secret paths of plain settings (for scrubbing text a module wrote).
std::vector<std::string> secret_values(std::string_view plain_json, const secret_fields& fields);
// `text` with every occurrence of each value replaced by "[redacted]".
std::string redact_values(std::string text, const std::vector<std::string>& values);

} // namespace wopbridge
