// Test module: throws from subscribe and on_http_request; the wrapper and the host must contain
// both.
#include "wopbridge/connector.hpp"

#include <stdexcept>

namespace {

class throws_in_callback final : public wopbridge::connector {
  public:
    static wopbridge::connector_info info() {
        wopbridge::connector_info i;
        i.name = "throws_in_callback";
        i.version = "0.0.1";
        i.status = "wip";
        i.security_posture = "test module: throws from its callbacks";
        return i;
    }
    throws_in_callback(wopbridge::host&, std::string_view) {}
    wopbridge::status subscribe(const wopbridge::subscription_info& sub, std::string&) override {
        if (sub.settings_json.find("ok") != std::string_view::npos) {
            return wopbridge::status::ok;
        }
        throw std::runtime_error("boom in subscribe");
    }
    void on_http_request(wopbridge::request_handle, const wopbridge::http_request_view&) override {
        throw std::runtime_error("boom in on_http_request");
    }
};

} // namespace

WOPBRIDGE_CONNECTOR(throws_in_callback)
