// Test module: validate() refuses every configuration.
#include "wopbridge/connector.hpp"

namespace {

class rejects_config final : public wopbridge::connector {
  public:
    static wopbridge::connector_info info() {
        wopbridge::connector_info i;
        i.name = "rejects_config";
        i.version = "0.0.1";
        i.status = "wip";
        i.security_posture = "test module: refuses its settings";
        return i;
    }
    static wopbridge::status validate(std::string_view, std::string& error) {
        error = "api_key is required";
        return wopbridge::status::invalid;
    }
    rejects_config(wopbridge::host&, std::string_view) {}
};

} // namespace

WOPBRIDGE_CONNECTOR(rejects_config)
