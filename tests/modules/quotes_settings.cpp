// Test module: marks secrets in both schemas (writeOnly, x-secret, nested) and is careless with
// them on purpose: it logs the subscription settings it is given (so tests see what reached it) and
// quotes its settings in its refusals (so tests see the host redact them).
#include "wopbridge/connector.hpp"

#include <string>

namespace {

class quotes_settings final : public wopbridge::connector {
  public:
    static wopbridge::connector_info info() {
        wopbridge::connector_info i;
        i.name = "quotes_settings";
        i.version = "0.0.1";
        i.status = "wip";
        i.security_posture = "test module: quotes its settings";
        i.source = "webhook";
        i.config_schema_json =
            R"({"type":"object","properties":{"apiKey":{"type":"string","writeOnly":true},)"
            R"("reject":{"type":"boolean"}}})";
        i.subscription_schema_json =
            R"({"type":"object","properties":{"token":{"type":"string","minLength":8,)"
            R"("writeOnly":true},"nested":{"type":"object","properties":)"
            R"({"key":{"type":"string","x-secret":true}}},"label":{"type":"string"},)"
            R"("refuse":{"type":"boolean"}}})";
        i.capabilities = WB_CAP_HTTP_INGEST;
        return i;
    }
    static wopbridge::status validate(std::string_view config, std::string& error) {
        if (config.find("\"reject\"") != std::string_view::npos) {
            error = "rejected " + std::string(config);
            return wopbridge::status::invalid;
        }
        return wopbridge::status::ok;
    }
    quotes_settings(wopbridge::host& host, std::string_view) : host_(host) {}

    wopbridge::status subscribe(const wopbridge::subscription_info& sub,
                                std::string& error) override {
        if (sub.settings_json.find("\"refuse\"") != std::string_view::npos) {
            error = "refused " + std::string(sub.settings_json);
            return wopbridge::status::invalid;
        }
        host_.log(wopbridge::log_level::info, "settings " + std::string(sub.settings_json));
        return wopbridge::status::ok;
    }
    wopbridge::status unsubscribe(std::string_view) override { return wopbridge::status::ok; }
    void on_http_request(wopbridge::request_handle req,
                         const wopbridge::http_request_view&) override {
        req.respond(404);
    }

  private:
    wopbridge::host& host_;
};

} // namespace

WOPBRIDGE_CONNECTOR(quotes_settings)
