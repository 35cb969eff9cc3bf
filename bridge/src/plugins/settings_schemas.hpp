#pragma once
// The JSON Schemas a module declares for its settings (descriptor config_schema_json and
// subscription_schema_json), compiled once at load. The host checks settings against them before
// the module sees them, as connector.h promises, so a module gets only settings of the shape it
// declared and an operator gets the schema's reason (the path, never the value: it may be secret).

#include "contract/json_schema.hpp"
#include "plugins/module_loader.hpp"
#include "plugins/secret_settings.hpp"

#include <memory>
#include <string>
#include <string_view>

namespace wopbridge {

// The first way settings break their schema: where (a JSON Pointer into the settings, "" = the
// settings object) and which keyword refused them ("additionalProperties", "required", ...), so
// a caller holding the settings' source can point at the value without quoting it.
struct settings_violation {
    std::string instance_path;
    std::string keyword;
};

class settings_schemas {
public:
    // A declared schema that is not a usable JSON Schema refuses the module. An empty one checks
    // nothing (the module's validate()/subscribe() still do).
    static module_result<settings_schemas> compile(const loaded_module& m);

    // "settings of connector instance 'x' do not match module m's config schema: /key: why".
    // `where`, when given, is set to the first violation of a refusal.
    module_result<void> check_config(std::string_view settings_json, const std::string& instance,
                                     settings_violation* where = nullptr) const;
    module_result<void> check_subscription(std::string_view settings_json,
                                           const std::string& subscription_id,
                                           settings_violation* where = nullptr) const;

    const std::string& module_name() const noexcept { return module_; }

    // The settings each schema marks secret (plugins/secret_settings): sealed at rest.
    const secret_fields& config_secrets() const noexcept { return config_secrets_; }
    const secret_fields& subscription_secrets() const noexcept { return subscription_secrets_; }

private:
    std::shared_ptr<const schema_registry> registry_;
    std::string module_;
    bool config_ = false;
    bool subscription_ = false;
    secret_fields config_secrets_;
    secret_fields subscription_secrets_;
};

} // namespace wopbridge
